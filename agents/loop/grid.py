"""Hyperparameter grids times seeds as ONE batch of replicas (public API).

Every numeric hyperparameter of every agent takes one value per replica, so a grid of ``P``
points times ``S`` seeds runs as one agent of ``R = P S`` replicas on one vector env::

    grid = HyperparameterGrid({"step_size": [0.1, 0.3], "inverse_temperature": [10, 100]}, n_seeds=10)
    env = gym.make_vec("LinearBandit-v0", num_envs=grid.num_replicas, vectorization_mode="vector_entry_point")
    agent = LMCTS(env, **grid.agent_kwargs()).learn(env)
    for point, regret in zip(grid.points, grid.split(agent.history["regret"])):
        print(point, regret.sum(axis=0).mean())           # regret (T, S) of that point's seeds

Replica ``p S + s`` runs grid point ``p`` with seed ``seed + s``: every point sees the same
``S`` seeds, hence (through ``learn``'s seeded reset) the same problem instances.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.validation import check_int


class HyperparameterGrid:
    """The (grid points x seeds) layout of a batched run, and the split of its results.

    Args:
        values: Hyperparameter name -> the values to try; the grid is their Cartesian product
            (the last name varies fastest). ``{}``: one point (the agent's defaults), ``S`` seeds.
        n_seeds: Seeds per grid point ``S``.
        seed: The first seed; point ``p``'s replicas use ``seed, ..., seed + S - 1``.
    """

    def __init__(self, values: dict[str, Sequence[Any]], n_seeds: int, seed: int = 0) -> None:
        if any(len(v) == 0 for v in values.values()):
            raise ValueError(f"values must map each hyperparameter name to a non-empty list, got {values!r}")
        self.names = list(values)
        #: Every grid point, as a dict of hyperparameter values (no values: one point, the agent's defaults).
        self.points: list[dict[str, Any]] = [dict(zip(self.names, combo, strict=True))
                                             for combo in itertools.product(*values.values())]
        self.n_seeds = check_int("n_seeds", n_seeds)
        self.seed = check_int("seed", seed, minimum=0)

    @classmethod
    def from_points(cls, points: Sequence[dict[str, Any]], n_seeds: int, seed: int = 0) -> HyperparameterGrid:
        """The layout of the given ``points`` (each a dict of the same hyperparameter names) x ``n_seeds`` seeds,
        e.g. some points of a larger grid, played without the others."""
        points = [dict(point) for point in points]
        if not points or any(point.keys() != points[0].keys() for point in points):
            raise ValueError(f"points must be a non-empty list of dicts with the same names, got {points!r}")
        grid = cls({name: [value] for name, value in points[0].items()}, n_seeds, seed)
        grid.points = points
        return grid

    @property
    def num_replicas(self) -> int:
        """``R = P S``."""
        return len(self.points) * self.n_seeds

    def seeds(self) -> list[int]:
        """The seed of every replica: ``seed + s`` for replica ``p S + s``."""
        return [self.seed + s for _ in self.points for s in range(self.n_seeds)]

    def replicas(self, point: int) -> range:
        """The replicas of grid point ``point`` (an index into :attr:`points`): ``p S, ..., p S + S - 1``."""
        return range(point * self.n_seeds, (point + 1) * self.n_seeds)

    def agent_kwargs(self) -> dict[str, list]:
        """Keywords for an agent: each hyperparameter's value per replica, and the replicas' seeds."""
        kwargs: dict[str, list] = {name: [point[name] for point in self.points for _ in range(self.n_seeds)]
                                   for name in self.names}
        return {**kwargs, "seed": self.seeds()}

    def split(self, array: np.ndarray) -> list[np.ndarray]:
        """Split a result whose LAST axis runs over the replicas (e.g. ``history["regret"]``, ``(T, R)``)
        into one array per grid point, ``(..., S)``, in the order of :attr:`points`."""
        array = np.asarray(array)
        if array.shape[-1] != self.num_replicas:
            raise ValueError(f"array's last axis must have one entry per replica ({self.num_replicas}), "
                             f"got shape {array.shape}")
        per_point = array.reshape(*array.shape[:-1], len(self.points), self.n_seeds)
        return [per_point[..., p, :] for p in range(len(self.points))]
