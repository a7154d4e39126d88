"""One directory per experiment; one cell (an agent's grid x seeds) per pair of files, never half-written.

Layout::

    DIR/experiment.json           the config that made the results (compared on every rerun: the same
                                  config, or the same one with agents added, else refused)
    DIR/cells/<label>.npz         regret: (T, P*S) per-round regret of every replica (grid point p, seed s
                                  is replica p*S + s; NaN rows of a diverged point)
    DIR/cells/<label>.json        the cell's config, seeds, grid points with every hyperparameter, the chosen
                                  point, per-point final regret (and the error of each diverged point), wall
                                  time and its parts (arm selection, updates), device, package versions
    DIR/failed/<label>.json       a cell that could not be played: its error message and traceback (not a
                                  finished cell: the next run plays it again, and removes this file when
                                  it finishes)

Each file is written to a temporary file in the same folder and renamed over its name
(``os.replace``, atomic on POSIX). The JSON file is written last: a cell is finished when its
JSON exists and names the sha256 of its npz file. A run that is killed leaves finished cells
and, at most, a temporary file or an npz without its JSON (both ignored; the cell runs again).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.config import ExperimentConfig

FORMAT_VERSION = 1


class ResultsMismatchError(ValueError):
    """The directory holds results of a different config."""


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: readers see all of it or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are meant to be read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def package_versions() -> dict[str, str]:
    """Versions of Python, bandit-gym and the packages that make the numbers."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("bandit-gym", "torch", "numpy", "gymnasium", "numba"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    versions["BANDIT_GYM_KERNELS"] = os.environ.get("BANDIT_GYM_KERNELS", "")
    return versions


def final_regret_stats(regret: np.ndarray, n_seeds: int) -> list[dict[str, float | None]]:
    """Mean and standard error over the seeds of each point's final cumulative regret; regret is (T, P*S)."""
    final = regret.sum(axis=0).reshape(-1, n_seeds)  # (P, S)
    stats = []
    for row in final:
        if not np.all(np.isfinite(row)):
            stats.append({"mean": None, "se": None})
            continue
        se = float(row.std(ddof=1) / math.sqrt(n_seeds)) if n_seeds > 1 else None
        stats.append({"mean": float(row.mean()), "se": se})
    return stats


@dataclass
class Cell:
    """A finished cell as read back: its record (the JSON) and per-round regret ``(T, P*S)``."""

    record: dict[str, Any]
    regret: np.ndarray

    @property
    def label(self) -> str:
        return self.record["label"]

    def point_regret(self, point: int) -> np.ndarray:
        """Per-round regret of one grid point's seeds, ``(T, S)``."""
        seeds = len(self.record["seeds"])
        return self.regret[:, point * seeds:(point + 1) * seeds]


class ResultsDir:
    """The results directory of one experiment."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.cells_dir = self.path / "cells"

    # -- the experiment ----------------------------------------------------------------------
    def stored_config(self) -> dict[str, Any] | None:
        file = self.path / "experiment.json"
        return json.loads(file.read_text())["config"] if file.is_file() else None

    def prepare(self, config: ExperimentConfig) -> None:
        """Create the directory for ``config``, or check that it holds results of exactly this config.

        Raises:
            ResultsMismatchError: The directory's results come from another config (names what differs).
        """
        wanted = json.loads(json.dumps(config.to_dict()))  # as it reads back from JSON
        for folder in (self.cells_dir, self.path / "failed"):
            for stale in folder.glob(".*.tmp") if folder.is_dir() else ():
                stale.unlink()  # a temporary file of a run that was killed while writing
        stored = self.stored_config()
        if stored is None:
            if self.cells_dir.is_dir() and any(self.cells_dir.glob("*.json")):
                raise ResultsMismatchError(f"{self.path} holds cells but no experiment.json; use another --out")
            record = {"format": FORMAT_VERSION, "config": wanted, "config_file": config.source,
                      "description": config.description}
            write_atomic(self.path / "experiment.json", json.dumps(record, indent=2).encode())
            return
        if stored == wanted:
            return
        old_agents = {agent["label"]: agent for agent in stored["agents"]}
        new_agents = {agent["label"]: agent for agent in wanted["agents"]}
        only_added = ({k: v for k, v in stored.items() if k != "agents"} == {k: v for k, v in wanted.items()
                                                                              if k != "agents"}
                      and all(new_agents.get(label) == agent for label, agent in old_agents.items()))
        if not only_added:
            raise ResultsMismatchError(
                f"{self.path} holds results of a different config ({'; '.join(_differences(stored, wanted))}); "
                "nothing was run: give another --out DIR, or delete the old results")
        # New agents only (same env, horizon, seeds and the old agents unchanged): their cells join the others.
        record = {**json.loads((self.path / "experiment.json").read_text()), "config": wanted}
        write_atomic(self.path / "experiment.json", json.dumps(record, indent=2).encode())

    def load_config_record(self) -> dict[str, Any]:
        file = self.path / "experiment.json"
        if not file.is_file():
            raise FileNotFoundError(f"{self.path} is not a results directory (no experiment.json); "
                                    "make one with `bandit-gym run CONFIG --out DIR`")
        return json.loads(file.read_text())

    # -- cells -------------------------------------------------------------------------------
    def cell_paths(self, label: str) -> tuple[Path, Path]:
        return self.cells_dir / f"{label}.npz", self.cells_dir / f"{label}.json"

    def is_finished(self, label: str, cell_config: dict[str, Any]) -> bool:
        """Whether the cell is finished (its JSON names its npz's checksum) for this cell config."""
        npz, record_file = self.cell_paths(label)
        if not record_file.is_file() or not npz.is_file():
            return False
        record = json.loads(record_file.read_text())
        if record["cell_config"] != json.loads(json.dumps(cell_config)):
            raise ResultsMismatchError(f"{record_file} was made with another config "
                                       f"({'; '.join(_differences(record['cell_config'], cell_config))}); "
                                       "give another --out DIR")
        return record["regret_sha256"] == _sha256(npz.read_bytes())

    def write_cell(self, record: dict[str, Any], regret: np.ndarray) -> None:
        """Write one finished cell: the npz, then the JSON that marks it finished."""
        npz, record_file = self.cell_paths(record["label"])
        buffer = io.BytesIO()
        np.savez(buffer, regret=regret)
        data = buffer.getvalue()
        write_atomic(npz, data)
        record = {**record, "format": FORMAT_VERSION, "regret_file": npz.name, "regret_sha256": _sha256(data)}
        write_atomic(record_file, json.dumps(record, indent=2, allow_nan=False).encode())
        self.failed_path(record["label"]).unlink(missing_ok=True)  # an earlier failure of this cell

    def failed_path(self, label: str) -> Path:
        return self.path / "failed" / f"{label}.json"

    def write_failed(self, record: dict[str, Any]) -> None:
        """Record a cell that failed (``record["failed"]`` is the message); it stays unfinished."""
        record = {**record, "format": FORMAT_VERSION}
        write_atomic(self.failed_path(record["label"]), json.dumps(record, indent=2, allow_nan=False).encode())

    def read_failures(self) -> list[dict[str, Any]]:
        """The records of the stored config's cells that failed in their last run (in the config's order)."""
        config = self.load_config_record()["config"]
        files = (self.failed_path(agent["label"]) for agent in config["agents"])
        return [json.loads(file.read_text()) for file in files if file.is_file()]

    def read_cells(self) -> list[Cell]:
        """The finished cells in the order of the stored config's agents (missing ones left out)."""
        config = self.load_config_record()["config"]
        cells = []
        for agent in config["agents"]:
            npz, record_file = self.cell_paths(agent["label"])
            if record_file.is_file() and npz.is_file():
                record = json.loads(record_file.read_text())
                with np.load(npz) as data:
                    cells.append(Cell(record, data["regret"]))
        return cells


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Human-readable differences between two JSON values (at most 5)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in list(old) + [k for k in new if k not in old]:
            where = f"{path}.{key}" if path else str(key)
            if key not in new:
                found.append(f"{where} was {old[key]!r}, now absent")
            elif key not in old:
                found.append(f"{where} is new: {new[key]!r}")
            else:
                found.extend(_differences(old[key], new[key], where))
        return found[:5]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(old, new, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{path}[{i}]")][:5]
    return [] if old == new else [f"{path or 'config'} was {_short(old)}, now {_short(new)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
