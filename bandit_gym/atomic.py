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
    An ``OSError`` of the file system (a folder that cannot be made or written, a full disk, ``path`` a folder)
    names ``path``, not the temporary file; an exception of the block passes through as it is.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _naming(exc, path, f"its folder {str(path.parent)!r} cannot be made") from exc
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _naming(exc, path, f"its folder {str(path.parent)!r} takes no new file") from exc
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            try:
                f.flush()
                os.fsync(f.fileno())
            except OSError as exc:
                raise _naming(exc, path, "the written bytes did not reach the disk") from exc
        try:
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as exc:
            raise _naming(exc, path, "the written file cannot replace it") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _naming(exc: OSError, path: Path, why: str) -> OSError:
    """``exc`` told of ``path`` (the file the caller asked for), as the same kind of ``OSError``."""
    return type(exc)(exc.errno, f"cannot write {str(path)!r}: {why} ({exc.strerror or exc})")
