"""What the benchmark scripts share: a Markdown table that prints each row as it comes and keeps a file of
it up to date, a JSON record of the same figures for ``docs/gen_numbers.py``, the CPU model that every timing
names, and the switch of the compiled kernels for a block of code."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from bandit_gym.atomic import atomic_write


@contextlib.contextmanager
def kernels(on: bool) -> Iterator[None]:
    """``BANDIT_GYM_KERNELS`` set to 1 or 0 inside the block (the library reads it at each call), as it was after."""
    before = os.environ.get("BANDIT_GYM_KERNELS")
    os.environ["BANDIT_GYM_KERNELS"] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["BANDIT_GYM_KERNELS"]
        else:
            os.environ["BANDIT_GYM_KERNELS"] = before


#: Where the records live: ``benchmarks/results/<name>.json`` beside the ``.md`` tables.
RESULTS = Path(__file__).resolve().parent / "results"


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
        if self.out is not None:
            write_atomically(self.out, "\n".join(self.lines) + "\n")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with the package's atomic writer: a reader never sees a half-written file."""
    with atomic_write(path) as f:
        f.write(text.encode())


#: A table cell ``mean +- se`` as the benchmarks print it (bold or not, thousands separators or not).
MEAN_SE = re.compile(r"\**\s*(?P<mean>[\d,.]+)\s*\+-\s*(?P<se>[\d,.]+)\s*\**")


def mean_se(cell: str) -> tuple[float, float] | None:
    """The mean and standard error of a cell ``"1,073 +- 8"`` or ``"**209 +- 6**"``; None for any other text."""
    match = MEAN_SE.fullmatch(cell.strip())
    return None if match is None else (float(match["mean"].replace(",", "")), float(match["se"].replace(",", "")))


def section_lines(text: str, heading: str) -> list[str]:
    """The lines of a Markdown ``text`` from the heading that starts with ``heading`` to the next heading of
    its level or above (ValueError naming the argument and the heading if there is none)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        level = len(line) - len(line.lstrip("#"))
        if level and line[level:].strip().startswith(heading):
            end = next((j for j in range(index + 1, len(lines))
                        if 0 < len(lines[j]) - len(lines[j].lstrip("#")) <= level), len(lines))
            return lines[index + 1:end]
    raise ValueError(f"argument --section: no heading starting with {heading!r} in the file")


def stored_lines(parser, path: Path, section: str | None, argument: str = "--record-from") -> tuple[list[str], str]:
    """The lines of a stored table file ``path`` (after the heading ``section``, if given) and where they come
    from (``"FILE, section 'HEADING'"``), for a script's ``argparse`` ``parser``: a missing file or heading is
    the parser's error, naming ``argument`` or ``--section``."""
    if not path.is_file():
        parser.error(f"argument {argument}: no file {path}")
    text = path.read_text()
    try:
        lines = text.splitlines() if section is None else section_lines(text, section)
    except ValueError as error:
        parser.error(str(error))
    return lines, f"{path}" + ("" if section is None else f", section {section!r}")


def versions() -> dict[str, str]:
    """The versions that a timing depends on: Python, numpy, torch, gymnasium and this package."""
    import gymnasium
    import numpy
    import torch

    import bandit_gym

    return {"python": platform.python_version(), "numpy": numpy.__version__, "torch": torch.__version__,
            "gymnasium": gymnasium.__version__, "bandit_gym": bandit_gym.__version__}


class Record:
    """A benchmark run's figures as ``benchmarks/results/<name>.json``, rewritten atomically after every row.

    The file holds ``name``, ``command`` (how it was run), ``cpu`` (model and cores), ``load_average`` (the
    one-minute load average at the start and after every row), ``date`` (UTC, ISO 8601), ``versions``
    (:func:`versions`), ``settings`` (the run's sizes and switches) and ``rows`` (one dict of names and numbers
    per row). ``docs/gen_numbers.py`` renders the docs' figures from it; the ``.md`` tables stay for humans.

    Args:
        name: The record's name: the file is ``out_dir / f"{name}.json"``.
        settings: The run's sizes and switches (JSON values).
        out_dir: The folder; ``RESULTS`` by default; None keeps the record in memory only.
        argv: The command's arguments (``sys.argv`` by default), recorded as ``command``.
    """

    def __init__(self, name: str, settings: dict, out_dir: Path | None = RESULTS,
                 argv: list[str] | None = None) -> None:
        argv = sys.argv if argv is None else argv
        script = Path(argv[0]).name if argv else "?"
        self.path = None if out_dir is None else Path(out_dir) / f"{name}.json"
        self.data = {
            "name": name,
            "command": shlex.join(["python", f"benchmarks/{script}", *argv[1:]]),
            "cpu": {"model": cpu_model(), "cores": os.cpu_count()},
            "load_average": [round(os.getloadavg()[0], 2)],
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(),
            "settings": settings,
            "rows": [],
        }
        self._save()

    def row(self, **fields) -> None:
        """Add one row (names and numbers) and the load average now; rewrite the file."""
        self.data["rows"].append(fields)
        self.data["load_average"].append(round(os.getloadavg()[0], 2))
        self._save()

    def _save(self) -> None:
        if self.path is not None:
            write_atomically(self.path, json.dumps(self.data, indent=1) + "\n")
