"""The file layer of the results directory: atomic writes, checked reads, a lock, and their errors.

Every error names the file and says what to do. :class:`ResultsWriteError` and :class:`ResultsLockedError`
are ``OSError`` s without a ``filename`` (their message is the whole line); :class:`ResultsDamagedError` is a
``ValueError``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bandit_gym.atomic import atomic_write


class ResultsDamagedError(ValueError):
    """A results file that cannot be read (truncated, not UTF-8, not JSON) or fails its checksum; names it."""


class ResultsLockedError(BlockingIOError):
    """Another run is writing into the results directory (the message names it)."""


class ResultsWriteError(OSError):
    """A results file could not be written (read-only directory, full disk); the message names the file."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.errno = code


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: readers see all of it or none.

    Raises:
        ResultsWriteError: The file could not be written (names it and the reason); ``path`` is as it was.
    """
    try:
        with atomic_write(path) as f:
            f.write(data)
    except OSError as exc:
        if isinstance(exc, ResultsWriteError):
            raise
        raise ResultsWriteError(f"cannot write {path}: {write_error_reason(exc)}; the files written before it are "
                                "kept", exc.errno) from exc


def write_error_reason(exc: OSError) -> str:
    """The reason of a failed write, with what to do about it (the system's words for ``exc.errno``: the
    caller names the file once, whatever the error's own message says)."""
    hint = {errno.ENOSPC: " (free some space, then run the same command again)",
            errno.EACCES: " (make the directory writable, or give another --out DIR)",
            errno.EROFS: " (a read-only file system: give another --out DIR)",
            errno.EPERM: " (make the directory writable, or give another --out DIR)"}.get(exc.errno, "")
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return f"{reason}{hint}"


def read_json(file: Path) -> Any:
    """The JSON value in ``file``.

    Raises:
        ResultsDamagedError: The file is not UTF-8 JSON (truncated, changed); names it and the reason.
    """
    try:
        return json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ResultsDamagedError(f"{file} is damaged: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ResultsDamagedError(f"{file} is damaged: not valid JSON ({exc.msg} at line {exc.lineno} "
                                  f"column {exc.colno}; truncated or edited?)") from None


@contextmanager
def hold_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock (``folder/.lock``, ``fcntl.flock``) while the block runs; the file records who holds it.

    Raises:
        ResultsLockedError: Another live run holds it (names its pid, host and start time).
        ResultsWriteError: The lock file cannot be made (read-only directory).
    """
    file = folder / ".lock"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ResultsWriteError(f"cannot write {file}: {write_error_reason(exc)}", exc.errno) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if not isinstance(exc, BlockingIOError):  # e.g. ENOLCK: a file system without locks
                raise ResultsWriteError(f"cannot lock {file}: {exc.strerror or exc}; give --out a directory on a "
                                        "local disk", exc.errno) from None
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "another process"
            raise ResultsLockedError(f"{folder} is in use by another run ({holder}); nothing was run: "
                                     "wait for it to finish, or give another --out DIR") from None
        me = (f"pid {os.getpid()} on {socket.gethostname()}, started "
              f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}")
        os.ftruncate(fd, 0)
        os.pwrite(fd, me.encode() + b"\n", 0)
        yield
    finally:
        os.close(fd)  # releases the flock; the file stays (removing it would race with the next run)


def move_aside(file: Path) -> Path:
    """Rename a damaged ``file`` to ``<name>.damaged`` (replacing an older one); returns the new path."""
    target = file.with_name(file.name + ".damaged")
    try:
        os.replace(file, target)
    except OSError as exc:
        raise ResultsWriteError(f"cannot move the damaged {file} aside: {write_error_reason(exc)}", exc.errno) from exc
    return target
