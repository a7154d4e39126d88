"""What the benchmark scripts share: a Markdown table that prints each row as it comes and keeps a file of
it up to date, and the CPU model that every timing names."""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class GrowingTable:
    """Print ``header`` lines, then each :meth:`row`; after every row, rewrite ``out`` (if given).

    The file is replaced atomically (a temporary file renamed over it), so an interrupted
    grid leaves the rows it finished and never a half-written table.
    """

    def __init__(self, header: list[str], out: Path | None = None) -> None:
        self.lines, self.out = list(header), out
        print("\n".join(self.lines), flush=True)
        self._save()

    def row(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)
        self._save()

    def _save(self) -> None:
        if self.out is None:
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.out.parent, prefix=f".{self.out.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        os.replace(tmp, self.out)
