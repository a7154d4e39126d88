"""The one atomic file writer of the package (envs' logs, agents' saves and the experiment layer's results).

``with atomic_write(path) as f: f.write(...)`` writes into a temporary file beside ``path``, flushes it to disk
and renames it over ``path``: a reader sees the old file or the whole new one, never a part. If the block
raises, the temporary file is removed and ``path`` is as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write"]


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; renamed over ``path`` when the block ends.

    The file is readable by others (``0o644``, not ``mkstemp``'s private mode): results are meant to be read.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
