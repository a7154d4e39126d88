"""Run an experiment: one cell per agent, each cell all grid points x all seeds as ONE batch.

A cell builds one vector env of ``R = P S`` replicas (``P`` grid points, ``S`` seeds) and one agent
with per-replica hyperparameters: replica ``p S + s`` runs grid point ``p`` with seed ``seed + s``
(the layout of :class:`agents.HyperparameterGrid`), so every point sees the same ``S`` problem
instances. The chosen point of a cell is the one with the lowest mean final cumulative regret over
its seeds (as the paper tuned: chosen and reported on the same seeds); every point's regret is kept.

The runner plays the rounds itself with the agents' public verbs (``predict``, ``env.step``,
``update``: the numbers of ``agent.learn``) so that it can time them apart: ``select_time_s`` is the
time spent choosing arms (``predict``), ``update_time_s`` the time spent learning from the rounds
(``update``: the model fit, the Langevin chain of LMC-TS), the rest of ``wall_time_s`` is the env
and the bookkeeping (Table 2 of the paper). On CUDA each timed call ends with a synchronisation.

If a batch diverges (one replica's parameters become NaN: a step size too large), the cell runs again
one grid point at a time; the points that diverge on their own are recorded as diverged (NaN regret,
the agent's error message in ``errors``) and cannot be chosen. A cell that fails for any other reason
(an exception from the agent or the env) is recorded as failed, with its message, and the other cells
go on; a failed cell runs again on the next ``bandit-gym run`` of the same command.

Cells run in sequence, in ``jobs`` processes, or as Ray tasks (:mod:`experiments.ray_backend`); in every
case the calling process writes the results (:mod:`experiments.results`) as each cell finishes.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from bandit_gym.threads import policy
from experiments import catalog
from experiments.config import AgentSpec, ExperimentConfig
from experiments.results import ResultsDir, final_regret_stats, package_versions


def make_env(config: ExperimentConfig, num_replicas: int, device: str) -> gym.vector.VectorEnv:
    """The native batched env of ``config`` with ``num_replicas`` replicas and the config's horizon.

    The horizon governs: the episode is made as long as it (``max_episode_steps=horizon``, which ``make_vec``
    passes to the vector entry point instead of the registry's limit), so a horizon above the registry's
    ``max_episode_steps`` (10,000) plays every round instead of ending the episode early.
    """
    import bandit_gym  # noqa: F401  (registers the ids)

    kwargs = dict(config.env_kwargs)
    steps = kwargs.pop("max_episode_steps", config.horizon)
    if steps != config.horizon:
        raise ValueError(f"env_kwargs.max_episode_steps: the runner plays one episode of the config's horizon "
                         f"({config.horizon}), got max_episode_steps={steps!r}; leave it out")
    return gym.make_vec(config.env, num_envs=num_replicas, vectorization_mode="vector_entry_point",
                        horizon=config.horizon, max_episode_steps=config.horizon, device=device, **kwargs)


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
    """What a cell's worker hands back: the record (JSON) and the regret ``(T, P*S)``.

    A failed cell (see the module docstring) has ``record["failed"]`` (the message) and no regret.
    """

    record: dict[str, Any]
    regret: np.ndarray | None

    @property
    def failed(self) -> bool:
        return "failed" in self.record


@dataclass
class _Played:
    """One batch's outcome: regret ``(T, P*S)``, every point's hyperparameters, and the timed parts (s)."""

    regret: np.ndarray
    hyperparameters: list[dict[str, Any]]
    select_s: float = 0.0
    update_s: float = 0.0


def run_cell(config: ExperimentConfig, label: str, device: str = "cpu", progress: bool = False) -> CellResult:
    """Play one cell (see the module docstring); returns its record and per-round regret.

    Never raises for a cell that cannot be played: the result is then a failed cell (``record["failed"]``).
    """
    spec = config.agent(label)
    started = time.time()
    start = time.perf_counter()
    base = {"label": label, "agent": spec.agent, "env": config.env, "horizon": config.horizon,
            "seeds": config.seed_list(), "cell_config": cell_config(config, spec), "grid_points": spec.points(),
            "device": device,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))}
    try:
        played, diverged, errors = _play_containing_divergence(config, spec, device, progress)
    except Exception as exc:  # noqa: BLE001  (a cell that cannot run must not stop the others)
        record = {**base, "failed": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                  "wall_time_s": time.perf_counter() - start, "versions": package_versions()}
        return CellResult(record, None)
    wall_time = time.perf_counter() - start
    stats = final_regret_stats(played.regret, config.seeds)
    finite = [p for p, s in enumerate(stats) if s["mean"] is not None]
    chosen = min(finite, key=lambda p: stats[p]["mean"]) if finite else None
    record = {
        **base, "hyperparameters": played.hyperparameters, "diverged": diverged,
        "errors": errors, "final_regret": stats, "chosen": chosen, "wall_time_s": wall_time,
        "select_time_s": played.select_s, "update_time_s": played.update_s, "versions": package_versions(),
    }
    return CellResult(record, played.regret)


def _play_containing_divergence(config: ExperimentConfig, spec: AgentSpec, device: str, progress: bool
                                ) -> tuple[_Played, list[bool], list[str | None]]:
    """All points as one batch; if it diverges, each point alone: the points that diverge get NaN regret."""
    from agents import DivergenceError

    points = spec.points()
    try:
        return _play(config, spec, points, device, progress), [False] * len(points), [None] * len(points)
    except DivergenceError as exc:
        if len(points) == 1:
            regret = np.full((config.horizon, config.seeds), np.nan)
            return _Played(regret, [{**spec.fixed, **points[0]}]), [True], [str(exc)]
    # the batch diverged: find the points that diverge on their own (the failed batch's time is in the wall time)
    blocks, hyperparameters, diverged, errors = [], [], [], []
    select_s = update_s = 0.0
    for point in points:
        try:
            alone = _play(config, spec, [point], device, progress)
            blocks.append(alone.regret)
            hyperparameters.extend(alone.hyperparameters)
            select_s, update_s = select_s + alone.select_s, update_s + alone.update_s
            diverged.append(False)
            errors.append(None)
        except DivergenceError as exc:
            blocks.append(np.full((config.horizon, config.seeds), np.nan))
            hyperparameters.append({**spec.fixed, **point})
            diverged.append(True)
            errors.append(str(exc))
    return _Played(np.concatenate(blocks, axis=1), hyperparameters, select_s, update_s), diverged, errors


def _play(config: ExperimentConfig, spec: AgentSpec, points: list[dict[str, Any]], device: str,
          progress: bool) -> _Played:
    """One batch: ``points`` x seeds. Returns regret ``(T, P*S)``, every point's hyperparameters and the times."""
    env = make_env(config, len(points) * config.seeds, device)
    try:
        agent = build_agent(spec, config, env, device, points)
        played = play_rounds(agent, env, config.horizon, spec.label if progress else None)
    finally:
        env.close()
    reported = agent.hyperparameters()
    played.hyperparameters = [{name: (value[p * config.seeds] if isinstance(value, list) else value)
                               for name, value in reported.items()} for p in range(len(points))]
    return played


@policy()  # the rounds on the library's torch threads (bandit_gym/threads.py)
def play_rounds(agent, env: gym.vector.VectorEnv, total: int, bar_label: str | None = None) -> _Played:
    """Play ``total`` rounds of ``agent`` on ``env`` (reset with the agent's seeds), timing arm selection
    (``predict``) and learning (``update``) apart; the numbers of ``agent.learn(env, total)``.

    ``env``'s horizon must be at least ``total`` (one episode). ``bar_label``: show a progress bar with
    the running cumulative regret, mean over the replicas (None: no bar).
    """
    synchronize = torch.cuda.synchronize if agent.device.type == "cuda" else (lambda: None)
    clock = time.perf_counter
    rows: list[Any] = []
    select_s = update_s = 0.0
    bar = _round_bar(total, bar_label)
    cumulative = 0.0  # for the bar only
    obs, _ = env.reset(seed=list(agent.seeds))
    try:
        for played in range(1, total + 1):
            start = clock()
            actions, _ = agent.predict(obs)  # (R,)
            synchronize()
            chosen = clock()
            next_obs, reward, _, _, info = env.step(actions)
            stepped = clock()
            agent.update(obs, actions, reward)
            synchronize()
            select_s += chosen - start
            update_s += clock() - stepped
            rows.append(info["regret"])
            obs = next_obs
            if bar is not None:
                cumulative += float(np.mean(_as_numpy(info["regret"])))
                bar.update(1)
                if played % 100 == 0 or played == total:
                    bar.set_postfix_str(f"regret {cumulative:.1f}", refresh=played == total)
    finally:
        if bar is not None:
            bar.close()
    regret = _as_numpy(torch.stack(rows) if isinstance(rows[0], torch.Tensor) else np.stack(rows))  # (T, R)
    return _Played(regret.astype(np.float64).reshape(total, -1), [], select_s, update_s)


def _as_numpy(values) -> np.ndarray:
    return values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def _round_bar(total: int, label: str | None):
    if label is None:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"  {label}", unit="round", leave=False, file=sys.stderr, mininterval=0.5)


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
            if result.failed:
                results.write_failed(result.record)
            else:
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
    if "failed" in record:
        return (f"  {record['label']}: FAILED after {record['wall_time_s']:.1f} s: {record['failed']} (the other "
                "cells go on; the same command runs it again)")
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
