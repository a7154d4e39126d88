"""What one cell of an experiment hands back, played or failed, whoever ran it.

A cell is one agent of a config: all its grid points x all seeds as one batch. The runner
(:mod:`bandit_experiments.runner`) plays it; the backends that run cells elsewhere (a process pool, Ray tasks:
:mod:`bandit_experiments.ray_backend`) send back a :class:`CellResult`, or make a failed one with
:func:`failed_cell` when the cell's worker died. This module imports neither of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from bandit_experiments.config import AgentSpec, ExperimentConfig, wrappers_to_list
from bandit_experiments.results import package_versions


@dataclass
class CellResult:
    """What a cell's worker hands back: the record (JSON) and the regret ``(T, P*S)``.

    A failed cell has ``record["failed"]`` (the one-line message) and no regret.
    """

    record: dict[str, Any]
    regret: np.ndarray | None

    @property
    def failed(self) -> bool:
        return "failed" in self.record


def cell_config(config: ExperimentConfig, spec: AgentSpec) -> dict[str, Any]:
    """What defines one cell's numbers (compared with a finished cell's before it is skipped)."""
    found = {"env": config.env, "env_kwargs": dict(config.env_kwargs), "horizon": config.horizon,
             "seeds": config.seed_list(), "agent": spec.to_dict()}
    if config.wrappers:  # only when given: cells written before wrappers existed still match
        found["wrappers"] = wrappers_to_list(config.wrappers)
    return found


def base_record(config: ExperimentConfig, label: str, device: str, started: float) -> dict[str, Any]:
    """The part of a cell's record that is known before it plays (``started``: ``time.time()`` at its start)."""
    spec = config.agent(label)
    return {"label": label, "agent": spec.agent, "env": config.env, "horizon": config.horizon,
            "seeds": config.seed_list(), "cell_config": cell_config(config, spec), "grid_points": spec.points(),
            "device": device, "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))}


def failed_cell(config: ExperimentConfig, label: str, device: str, message: str, traceback_text: str,
                started: float, wall_time_s: float) -> CellResult:
    """The result of a cell that could not be played (``message``: the one-line error)."""
    record = {**base_record(config, label, device, started), "failed": message, "traceback": traceback_text,
              "wall_time_s": wall_time_s, "versions": package_versions()}
    return CellResult(record, None)
