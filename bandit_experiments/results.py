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

    DIR/checkpoints/<label>/      an unfinished cell's last checkpoints (:mod:`bandit_experiments.checkpoint`);
                                  removed when the cell is written
    DIR/.lock                     who runs into DIR now (pid, host, start time; ``fcntl.flock``)

Each file is written to a temporary file in the same folder and renamed over its name
(``os.replace``, atomic on POSIX). The JSON file is written last: a cell is finished when its
JSON exists and names the sha256 of its npz file (and its own, ``record_sha256``, over the rest of
the record). A run that is killed leaves finished cells and, at most, a temporary file or an npz
without its JSON (both ignored; the cell runs again).

Faults: one run at a time writes into DIR (:meth:`ResultsDir.locked`; a second fails at once naming
the holder). A cell file that cannot be read, fails a checksum or (an npz) holds an object array (read
with ``allow_pickle=False``: refused, no code runs) is named and moved aside as
``<name>.damaged``, and the cell runs again; ``bandit-gym table`` leaves such a cell out and names it.
A damaged ``experiment.json`` is an error naming it (nothing is run). A write that fails (read-only
directory, full disk) is a :class:`ResultsWriteError` naming the file; what was written before stays.
The file layer (atomic writes, checked reads, the lock, their errors) is :mod:`bandit_experiments.storage`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import platform
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bandit_experiments.storage import (  # noqa: F401  (the errors and write_atomic are this module's API too)
    ResultsDamagedError,
    ResultsLockedError,
    ResultsWriteError,
    hold_lock,
    move_aside,
    read_json,
    write_atomic,
)

if TYPE_CHECKING:
    from bandit_experiments.config import ExperimentConfig

FORMAT_VERSION = 1


class ResultsMismatchError(ValueError):
    """The directory holds results of a different config."""


def package_versions() -> dict[str, str]:
    """Versions of Python, bandit-gym and the packages that make the numbers."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("contextual-bandit-gym", "torch", "numpy", "gymnasium", "numba"):
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
        return self._experiment_record(file)["config"] if file.is_file() else None

    def _experiment_record(self, file: Path) -> dict[str, Any]:
        try:
            record = read_json(file)
            if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
                raise ResultsDamagedError(f"{file} is damaged: it holds no config")
        except ResultsDamagedError as exc:
            raise ResultsDamagedError(
                f"{exc}. It records which config made the results in {self.path}, so nothing was run or shown: "
                "restore it from a copy, or give another --out DIR (the cells in this one are left as they "
                "are)") from None
        return record

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's lock for one run (:func:`bandit_experiments.storage.hold_lock`: a second run fails at
        once, naming the holder)."""
        with hold_lock(self.path):
            yield

    def prepare(self, config: ExperimentConfig) -> None:
        """Create the directory for ``config``, or check that it holds results of exactly this config.

        Raises:
            ResultsMismatchError: The directory's results come from another config (names what differs).
        """
        wanted = json.loads(json.dumps(config.to_dict()))  # as it reads back from JSON
        for folder in (self.cells_dir, self.path / "failed", *self.path.glob("checkpoints/*/")):
            for stale in folder.glob(".*.tmp") if folder.is_dir() else ():
                stale.unlink()  # a temporary file of a run that was killed while writing (call under locked())
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
        record = {**self._experiment_record(self.path / "experiment.json"), "config": wanted}
        write_atomic(self.path / "experiment.json", json.dumps(record, indent=2).encode())

    def load_config_record(self) -> dict[str, Any]:
        file = self.path / "experiment.json"
        if not file.is_file():
            raise FileNotFoundError(f"{self.path} is not a results directory (no experiment.json); "
                                    "make one with `bandit-gym run CONFIG --out DIR`")
        return self._experiment_record(file)

    # -- cells -------------------------------------------------------------------------------
    def cell_paths(self, label: str) -> tuple[Path, Path]:
        return self.cells_dir / f"{label}.npz", self.cells_dir / f"{label}.json"

    def is_finished(self, label: str, cell_config: dict[str, Any], log=None) -> bool:
        """Whether the cell is finished (its JSON names its npz's checksum) for this cell config.

        A damaged cell (see :meth:`check_cell`) is moved aside as ``<name>.damaged``, said in ``log``, and
        is not finished (it runs again).

        Raises:
            ResultsMismatchError: The finished cell was made with another cell config.
        """
        npz, record_file = self.cell_paths(label)
        if not record_file.is_file():
            return False
        try:
            record = self.check_cell(label)
        except ResultsDamagedError as exc:
            moved = [move_aside(file) for file in (npz, record_file) if file.is_file()]
            if log is not None:
                log(f"  {label}: {exc}: moved aside as {' and '.join(p.name for p in moved)}; the cell runs again")
            return False
        if record["cell_config"] != json.loads(json.dumps(cell_config)):
            raise ResultsMismatchError(f"{record_file} was made with another config "
                                       f"({'; '.join(_differences(record['cell_config'], cell_config))}); "
                                       "give another --out DIR")
        return True

    def check_cell(self, label: str) -> dict[str, Any]:
        """The record of a finished cell, checked: readable, its own checksum and its npz's hold, and the npz
        holds a float regret array (:meth:`read_cell`).

        Raises:
            ResultsDamagedError: Names the file that is unreadable, missing, changed since it was written, or
                refused.
        """
        return self.read_cell(label).record

    def read_cell(self, label: str) -> Cell:
        """A finished cell, checked as :meth:`check_cell` says, with its regret.

        The npz is read with ``allow_pickle=False``: an object array is refused (reading one runs code).

        Raises:
            ResultsDamagedError: Names the file that is unreadable, missing, changed since it was written, or
                refused.
        """
        npz, record_file = self.cell_paths(label)
        record = read_json(record_file)
        if not isinstance(record, dict) or not {"cell_config", "regret_sha256"} <= set(record):
            raise ResultsDamagedError(f"{record_file} is damaged: not a cell record")
        stored = record.get("record_sha256")
        if stored is not None and stored != _record_sha256(record):
            raise ResultsDamagedError(f"{record_file} does not match its recorded sha256 (edited or damaged "
                                      "since it was written)")
        if not npz.is_file():
            raise ResultsDamagedError(f"{npz}, which {record_file.name} names, is missing")
        data = npz.read_bytes()
        if record["regret_sha256"] != _sha256(data):
            raise ResultsDamagedError(f"{npz} does not match the sha256 recorded in {record_file.name} (truncated, "
                                      "edited or damaged since it was written)")
        return Cell(record, _regret_array(npz, data))

    def write_cell(self, record: dict[str, Any], regret: np.ndarray) -> None:
        """Write one finished cell: the npz, then the JSON that marks it finished."""
        npz, record_file = self.cell_paths(record["label"])
        buffer = io.BytesIO()
        np.savez(buffer, regret=regret)
        data = buffer.getvalue()
        write_atomic(npz, data)
        record = {**record, "format": FORMAT_VERSION, "regret_file": npz.name, "regret_sha256": _sha256(data)}
        record = json.loads(json.dumps(record, allow_nan=False))  # as it reads back (tuples as lists)
        record["record_sha256"] = _record_sha256(record)
        write_atomic(record_file, json.dumps(record, indent=2, allow_nan=False).encode())
        self.failed_path(record["label"]).unlink(missing_ok=True)  # an earlier failure of this cell

    def checkpoint_dir(self, label: str) -> Path:
        """The folder of an unfinished cell's checkpoints (:mod:`bandit_experiments.checkpoint`)."""
        return self.path / "checkpoints" / label

    def remove_checkpoints(self, label: str) -> None:
        """Remove a cell's checkpoints (once the cell is written)."""
        folder = self.checkpoint_dir(label)
        for file in folder.glob("*.pt") if folder.is_dir() else ():
            file.unlink()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def failed_path(self, label: str) -> Path:
        return self.path / "failed" / f"{label}.json"

    def write_failed(self, record: dict[str, Any]) -> None:
        """Record a cell that failed (``record["failed"]`` is the message); it stays unfinished."""
        record = {**record, "format": FORMAT_VERSION}
        write_atomic(self.failed_path(record["label"]), json.dumps(record, indent=2, allow_nan=False).encode())

    def read_failures(self) -> list[dict[str, Any]]:
        """The records of the stored config's cells that failed in their last run (in the config's order).

        A failure record that cannot be read is left out (its cell is unfinished and runs again anyway).
        """
        config = self.load_config_record()["config"]
        records = []
        for agent in config["agents"]:
            file = self.failed_path(agent["label"])
            if file.is_file():
                try:
                    records.append(read_json(file))
                except ResultsDamagedError:
                    continue
        return records

    def read_cells(self, damaged: list[str] | None = None) -> list[Cell]:
        """The finished cells in the order of the stored config's agents (missing ones left out).

        Each cell is checked (:meth:`check_cell`) before it is read: a damaged one is left out, and its
        message appended to ``damaged`` when a list is given.
        """
        config = self.load_config_record()["config"]
        cells = []
        for agent in config["agents"]:
            record_file = self.cell_paths(agent["label"])[1]
            if not record_file.is_file():
                continue
            try:
                cells.append(self.read_cell(agent["label"]))
            except ResultsDamagedError as exc:
                if damaged is not None:
                    damaged.append(f"{agent['label']}: NOT SHOWN: {exc}; the same `bandit-gym run` command moves "
                                   "it aside and computes the cell again")
        return cells


def _regret_array(npz: Path, data: bytes) -> np.ndarray:
    """The ``(T, P*S)`` float regret array of a cell's npz file ``npz``, whose bytes are ``data``.

    Raises:
        ResultsDamagedError: Names ``npz``: not an npz file, no ``regret`` in it, an object array (refused,
            not loaded: ``allow_pickle=False``, no code runs), or not a 2-D float array.
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            regret = arrays["regret"]
    except ValueError as exc:  # numpy's "Object arrays cannot be loaded when allow_pickle=False", or a bad header
        raise ResultsDamagedError(f"{npz} is refused: {exc} (a cell's regret is a float array; an object array "
                                  "is never loaded, since loading it could run code)") from None
    except (KeyError, OSError, zipfile.BadZipFile) as exc:
        raise ResultsDamagedError(f"{npz} is damaged: not an npz file holding 'regret' ({type(exc).__name__}: "
                                  f"{exc})") from None
    if regret.dtype.kind != "f" or regret.ndim != 2:
        raise ResultsDamagedError(f"{npz} is damaged: its regret is {regret.dtype} of shape {regret.shape}, not a "
                                  "(T, P*S) float array")
    return regret


def _record_sha256(record: dict[str, Any]) -> str:
    """Checksum of a cell record without its own ``record_sha256`` (canonical JSON: sorted keys)."""
    rest = {key: value for key, value in record.items() if key != "record_sha256"}
    return _sha256(json.dumps(rest, sort_keys=True, allow_nan=False).encode())


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
