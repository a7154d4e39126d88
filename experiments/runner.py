"""Run an experiment: one cell per agent, each cell all grid points x all seeds as ONE batch.

A cell builds one vector env of ``R = P S`` replicas (``P`` grid points, ``S`` seeds) and one agent
with per-replica hyperparameters: replica ``p S + s`` runs grid point ``p`` with seed ``seed + s``
(the layout of :class:`agents.HyperparameterGrid`), so every point sees the same ``S`` problem
instances. The chosen point of a cell is the one with the lowest mean final cumulative regret over
its seeds (as the paper tuned: chosen and reported on the same seeds); every point's regret is kept.

If a batch diverges (one replica's parameters become NaN: a step size too large), the cell runs again
one grid point at a time; the points that diverge on their own are recorded as diverged (NaN regret)
and cannot be chosen.

Cells run in sequence, in ``jobs`` processes, or as Ray tasks (:mod:`experiments.ray_backend`); in every
case the calling process writes the results (:mod:`experiments.results`) as each cell finishes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from experiments import catalog
from experiments.config import AgentSpec, ExperimentConfig
from experiments.results import ResultsDir, final_regret_stats, package_versions


def make_env(config: ExperimentConfig, num_replicas: int, device: str) -> gym.vector.VectorEnv:
    """The native batched env of ``config`` with ``num_replicas`` replicas and the config's horizon."""
    import bandit_gym  # noqa: F401  (registers the ids)

    return gym.make_vec(config.env, num_envs=num_replicas, vectorization_mode="vector_entry_point",
                        horizon=config.horizon, device=device, **config.env_kwargs)


def build_agent(spec: AgentSpec, config: ExperimentConfig, env: gym.vector.VectorEnv, device: str,
                points: list[dict[str, Any]] | None = None):
    """The agent of ``spec`` for ``points`` (default: its whole grid) x the config's seeds, as one batch."""
    points = spec.points() if points is None else points
    per_replica = {name: [point[name] for point in points for _ in range(config.seeds)] for name in spec.grid}
    seeds = [s for _ in points for s in config.seed_list()]
    cls = catalog.agent_classes()[spec.agent]
    return cls(env, seed=seeds, device=device, **spec.fixed, **per_replica)


def cell_config(config: ExperimentConfig, spec: AgentSpec) -> dict[str, Any]:
    """What defines one cell's numbers (compared with a finished cell's before it is skipped)."""
    return {"env": config.env, "env_kwargs": dict(config.env_kwargs), "horizon": config.horizon,
            "seeds": config.seed_list(), "agent": spec.to_dict()}


@dataclass
class CellResult:
    """What a cell's worker hands back: the record (JSON) and the regret ``(T, P*S)``."""

    record: dict[str, Any]
    regret: np.ndarray


def run_cell(config: ExperimentConfig, label: str, device: str = "cpu", progress: bool = False) -> CellResult:
    """Play one cell (see the module docstring); returns its record and per-round regret."""
    from agents import DivergenceError

    spec = config.agent(label)
    points = spec.points()
    started = time.time()
    start = time.perf_counter()
    try:
        regret, hyperparameters = _play(config, spec, points, device, progress)
        diverged = [False] * len(points)
    except DivergenceError:  # find the points that diverge on their own; keep the others
        blocks, hyperparameters, diverged = [], [], []
        for point in points:
            try:
                block, point_hyperparameters = _play(config, spec, [point], device, progress)
                diverged.append(False)
            except DivergenceError:
                block = np.full((config.horizon, config.seeds), np.nan)
                point_hyperparameters = [{**spec.fixed, **point}]
                diverged.append(True)
            blocks.append(block)
            hyperparameters.extend(point_hyperparameters)
        regret = np.concatenate(blocks, axis=1)
    wall_time = time.perf_counter() - start
    stats = final_regret_stats(regret, config.seeds)
    finite = [p for p, s in enumerate(stats) if s["mean"] is not None]
    chosen = min(finite, key=lambda p: stats[p]["mean"]) if finite else None
    record = {
        "label": label, "agent": spec.agent, "env": config.env, "horizon": config.horizon,
        "seeds": config.seed_list(), "cell_config": cell_config(config, spec),
        "grid_points": points, "hyperparameters": hyperparameters, "diverged": diverged,
        "final_regret": stats, "chosen": chosen, "wall_time_s": wall_time, "device": device,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "versions": package_versions(),
    }
    return CellResult(record, regret)


def _play(config: ExperimentConfig, spec: AgentSpec, points: list[dict[str, Any]], device: str,
          progress: bool) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """One batch: ``points`` x seeds. Returns regret ``(T, P*S)`` and every point's hyperparameters."""
    env = make_env(config, len(points) * config.seeds, device)
    try:
        agent = build_agent(spec, config, env, device, points)
        if progress:
            _learn_with_bar(agent, env, config.horizon, spec.label)
        else:
            agent.learn(env, total_timesteps=config.horizon)
    finally:
        env.close()
    regret = np.asarray(agent.history["regret"], dtype=np.float64)  # (T, P*S)
    reported = agent.hyperparameters()
    per_point = [{name: (value[p * config.seeds] if isinstance(value, list) else value)
                  for name, value in reported.items()} for p in range(len(points))]
    return regret, per_point


def _learn_with_bar(agent, env: gym.vector.VectorEnv, total: int, label: str) -> None:
    from tqdm.auto import tqdm

    from experiments.demo import RegretMeter

    meter = RegretMeter(env)
    with tqdm(total=total, desc=f"  {label}", unit="round", leave=False, file=sys.stderr, mininterval=0.5) as bar:

        def advance(_agent, played: int) -> bool:
            bar.update(1)
            if played % 100 == 0 or played == total:
                bar.set_postfix_str(f"regret {meter.cumulative_regret:.1f}", refresh=played == total)
            return True

        agent.learn(meter, total_timesteps=total, callback=advance)


# -- the sweep --------------------------------------------------------------------------------------
def run_experiment(config: ExperimentConfig, out: str, *, device: str = "cpu", backend: str = "local",
                   jobs: int = 1, address: str | None = None, progress: bool = False,
                   log: Callable[[str], None] = print) -> ResultsDir:
    """Run every unfinished cell of ``config`` into the results directory ``out``; skip finished ones.

    Raises:
        ResultsMismatchError: ``out`` holds results of another config (nothing is run).
    """
    results = ResultsDir(out)
    results.prepare(config)
    todo = [spec.label for spec in config.agents if not results.is_finished(spec.label, cell_config(config, spec))]
    done = len(config.agents) - len(todo)
    if done:
        log(f"{done} of {len(config.agents)} cells already finished in {results.path}: skipped")
    if not todo:
        return results
    if backend == "ray":
        from experiments.ray_backend import run_cells_on_ray

        finished = run_cells_on_ray(config, todo, device, address)
    elif jobs > 1:
        finished = _run_in_processes(config, todo, device, jobs)
    else:
        finished = (run_cell(config, label, device, progress) for label in todo)
    bar = _sweep_bar(len(config.agents), done, progress)
    try:
        for result in finished:
            results.write_cell(result.record, result.regret)
            bar.update(1)
            log(_cell_line(result.record))
    finally:
        bar.close()
    return results


def _run_in_processes(config: ExperimentConfig, labels: list[str], device: str, jobs: int) -> Iterator[CellResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a fresh interpreter per worker (torch and numba do not like fork after threads started).
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_cell, config, label, device, False) for label in labels]
        for future in as_completed(futures):
            yield future.result()


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _sweep_bar(total: int, done: int, progress: bool):
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc="cells", unit="cell", file=sys.stderr, position=0)


def _cell_line(record: dict[str, Any]) -> str:
    chosen = record["chosen"]
    if chosen is None:
        return f"  {record['label']}: every grid point diverged ({record['wall_time_s']:.1f} s)"
    stats = record["final_regret"][chosen]
    spread = f" +- {stats['se']:.1f}" if stats["se"] is not None else ""
    point = ", ".join(f"{k}={v}" for k, v in record["grid_points"][chosen].items())
    points, seeds = len(record["grid_points"]), len(record["seeds"])
    return (f"  {record['label']}: final regret {stats['mean']:.1f}{spread}{' at ' + point if point else ''} "
            f"({points} point{'s' if points > 1 else ''} x {seeds} seed{'s' if seeds > 1 else ''}, "
            f"{record['wall_time_s']:.1f} s)")
