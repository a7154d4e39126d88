"""Run an experiment: one cell per agent, each cell all grid points x all seeds as ONE batch.

A cell builds one vector env of ``R = P S`` replicas (``P`` grid points, ``S`` seeds) and one agent
with per-replica hyperparameters: replica ``p S + s`` runs grid point ``p`` with seed ``seed + s``
(the layout of :class:`agents.HyperparameterGrid`), so every point sees the same ``S`` problem
instances. The chosen point of a cell is the one with the lowest mean final cumulative regret over
its seeds (as the paper tuned: chosen and reported on the same seeds); every point's regret is kept.

The runner plays the rounds through the agent's own round loop (:meth:`agents.BanditAgent.rounds`, the
loop of ``agent.learn``, with the public verbs ``predict`` and ``update``: the numbers of ``agent.learn``),
which times them apart; the runner adds the progress bar and the checkpoints. ``select_time_s`` is the
time spent choosing arms (``predict``), ``update_time_s`` the time spent learning from the rounds
(``update``: the model fit, the Langevin chain of LMC-TS), the rest of ``wall_time_s`` is the env
and the bookkeeping (Table 2 of the paper). On CUDA each timed call ends with a synchronisation.

If a batch diverges (one replica's parameters become NaN: a step size too large), the cell runs again
one grid point at a time; the points that diverge on their own are recorded as diverged (NaN regret,
the agent's error message in ``errors``) and cannot be chosen. A cell that fails for any other reason
(an exception from the agent or the env) is recorded as failed, with its message, and the other cells
go on; a failed cell runs again on the next ``bandit-gym run`` of the same command.

Cells run in sequence, in ``jobs`` processes, or as Ray tasks (:mod:`bandit_experiments.ray_backend`, which is given
:func:`run_cell` as the task to run); each hands back a :class:`bandit_experiments.cells.CellResult`, and in every
case the calling process writes the results (:mod:`bandit_experiments.results`) as each cell finishes, holding
the directory's lock. Locally a cell checkpoints while it plays (:mod:`bandit_experiments.checkpoint`): at most
every 30 s, and when Ctrl-C stops it (the round being played ends first; a second Ctrl-C stops at once).
The same command then continues the cell from its checkpoint, with the numbers of an uninterrupted run.
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

from bandit_experiments import ray_backend
from bandit_experiments.cells import CellResult, base_record, cell_config, failed_cell
from bandit_experiments.checkpoint import EVERY_S, Checkpoint, DeferredInterrupt, Progress, stack_rows
from bandit_experiments.config import AgentSpec, ExperimentConfig, build_agent, make_env
from bandit_experiments.results import ResultsDir, final_regret_stats, package_versions
from bandit_gym.threads import policy


@dataclass
class _Played:
    """One batch's outcome: regret ``(T, P*S)``, every point's hyperparameters, and the timed parts (s)."""

    regret: np.ndarray
    hyperparameters: list[dict[str, Any]]
    select_s: float = 0.0
    update_s: float = 0.0
    notes: tuple[str, ...] = ()  # what a checkpoint did (continued from round k, or not used and why)
    earlier_s: float = 0.0  # wall time spent on these rounds by interrupted runs before this one


@dataclass(frozen=True)
class _Checkpoints:
    """Where a cell's batches checkpoint (``folder/batch.pt``, ``folder/point<p>.pt``) and how often."""

    folder: Any  # Path
    every_s: float = EVERY_S


def run_cell(config: ExperimentConfig, label: str, device: str = "cpu", progress: bool = False,
             checkpoint_dir=None, checkpoint_every_s: float = EVERY_S) -> CellResult:
    """Play one cell (see the module docstring); returns its record and per-round regret.

    Never raises for a cell that cannot be played: the result is then a failed cell (``record["failed"]``).
    ``checkpoint_dir``: the folder of this cell's checkpoints (None: none are written or read). Ctrl-C
    (``KeyboardInterrupt``) is raised after the checkpoint is written.
    """
    spec = config.agent(label)
    checkpoints = None if checkpoint_dir is None else _Checkpoints(checkpoint_dir, checkpoint_every_s)
    started = time.time()
    start = time.perf_counter()
    base = base_record(config, label, device, started)
    try:
        played, diverged, errors = _play_containing_divergence(config, spec, device, progress, checkpoints)
    except Exception as exc:  # noqa: BLE001  (a cell that cannot run must not stop the others)
        return failed_cell(config, label, device, f"{type(exc).__name__}: {exc}", traceback.format_exc(), started,
                           time.perf_counter() - start)
    wall_time = time.perf_counter() - start + played.earlier_s
    stats = final_regret_stats(played.regret, config.seeds)
    finite = [p for p, s in enumerate(stats) if s["mean"] is not None]
    chosen = min(finite, key=lambda p: stats[p]["mean"]) if finite else None
    record = {
        **base, "hyperparameters": played.hyperparameters, "diverged": diverged,
        "errors": errors, "final_regret": stats, "chosen": chosen, "wall_time_s": wall_time,
        "select_time_s": played.select_s, "update_time_s": played.update_s, "versions": package_versions(),
    }
    if played.notes:
        record["notes"] = list(played.notes)
    return CellResult(record, played.regret)


def _play_containing_divergence(config: ExperimentConfig, spec: AgentSpec, device: str, progress: bool,
                                checkpoints: _Checkpoints | None = None
                                ) -> tuple[_Played, list[bool], list[str | None]]:
    """All points as one batch; if it diverges, each point alone: the points that diverge get NaN regret."""
    from agents import DivergenceError

    points = spec.points()
    try:
        played = _play(config, spec, points, device, progress, checkpoints, "batch")
        return played, [False] * len(points), [None] * len(points)
    except DivergenceError as exc:
        if len(points) == 1:
            regret = np.full((config.horizon, config.seeds), np.nan)
            return _Played(regret, [{**spec.fixed, **points[0]}]), [True], [str(exc)]
    # the batch diverged: find the points that diverge on their own (the failed batch's time is in the wall time)
    blocks, hyperparameters, diverged, errors = [], [], [], []
    select_s = update_s = earlier_s = 0.0
    notes: tuple[str, ...] = ()
    for p, point in enumerate(points):
        try:
            alone = _play(config, spec, [point], device, progress, checkpoints, f"point{p}")
            blocks.append(alone.regret)
            hyperparameters.extend(alone.hyperparameters)
            select_s, update_s = select_s + alone.select_s, update_s + alone.update_s
            earlier_s += alone.earlier_s
            notes += alone.notes
            diverged.append(False)
            errors.append(None)
        except DivergenceError as exc:
            blocks.append(np.full((config.horizon, config.seeds), np.nan))
            hyperparameters.append({**spec.fixed, **point})
            diverged.append(True)
            errors.append(str(exc))
    played = _Played(np.concatenate(blocks, axis=1), hyperparameters, select_s, update_s, notes, earlier_s)
    return played, diverged, errors


def _play(config: ExperimentConfig, spec: AgentSpec, points: list[dict[str, Any]], device: str,
          progress: bool, checkpoints: _Checkpoints | None = None, name: str = "batch") -> _Played:
    """One batch: ``points`` x seeds. Returns regret ``(T, P*S)``, every point's hyperparameters and the times.

    ``checkpoints``: continue from ``name``'s checkpoint and write one while playing (None: neither).
    """
    layout = config.layout(spec, points)
    env = make_env(config, layout.num_replicas, device)
    try:
        agent = build_agent(spec, config, env, device, points)
        checkpoint = None
        if checkpoints is not None and not config.wrappers:  # a wrapper's pending rewards are not checkpointed
            key = {"cell_config": cell_config(config, spec), "points": points, "device": device,
                   "versions": package_versions()}
            checkpoint = Checkpoint(checkpoints.folder / f"{name}.pt", key, checkpoints.every_s)
        played = play_rounds(agent, env, config.horizon, spec.label if progress else None, checkpoint)
    finally:
        env.close()
    reported = agent.hyperparameters()
    played.hyperparameters = [{name: (value[layout.replicas(p)[0]] if isinstance(value, list) else value)
                               for name, value in reported.items()} for p in range(len(layout.points))]
    return played


def play_rounds(agent, env: gym.vector.VectorEnv, total: int, bar_label: str | None = None,
                checkpoint: Checkpoint | None = None) -> _Played:
    """Play ``total`` rounds of ``agent`` on ``env`` (reset with the agent's seeds) through the agent's own loop
    (:meth:`agents.BanditAgent.rounds`, with ``predict`` and ``update``: the numbers of ``agent.learn(env,
    total)``), adding the times of arm selection and learning, the progress bar and the checkpoints.

    ``env``'s horizon must be at least ``total`` (one episode). ``bar_label``: show a progress bar with
    the running cumulative regret, mean over the replicas (None: no bar). ``checkpoint``: continue from
    it if it holds a usable one, write it while playing, and on Ctrl-C end the round, write it and raise
    ``KeyboardInterrupt`` (see :mod:`bandit_experiments.checkpoint`).
    """
    with policy(work=agent.round_work()):  # the rounds on the library's threads, by their work (bandit_gym/threads.py)
        return _play_rounds(agent, env, total, bar_label, checkpoint)


def _play_rounds(agent, env: gym.vector.VectorEnv, total: int, bar_label: str | None,
                 checkpoint: Checkpoint | None) -> _Played:
    restored = checkpoint.load(agent, env) if checkpoint is not None else None
    if restored is None:
        done, obs = Progress(), env.reset(seed=list(agent.seeds))[0]
    else:
        done, obs = restored
    bar = _round_bar(total, bar_label, done.rounds)
    cumulative = sum(float(np.mean(_as_numpy(row))) for row in done.regret) if bar is not None else 0.0
    loop = agent.rounds(env, total - done.rounds, observation=obs, checked=True, timed=True) \
        if done.rounds < total else iter(())
    recording = False  # a round's records half-written: not a progress to checkpoint
    with DeferredInterrupt(enabled=checkpoint is not None) as interrupt:
        try:
            for round_ in loop:
                recording = True
                done.select_s += round_.select_s
                done.update_s += round_.update_s
                if checkpoint is not None:
                    done.actions.append(round_.actions.cpu().numpy().astype(np.int64))  # (R,) a copy
                done.regret.append(round_.info["regret"])
                recording = False
                played = done.rounds
                if bar is not None:
                    cumulative += float(np.mean(_as_numpy(round_.info["regret"])))
                    bar.update(1)
                    if played % 100 == 0 or played == total:
                        bar.set_postfix_str(f"regret {cumulative:.1f}", refresh=played == total)
                if checkpoint is not None and (interrupt.requested or (played < total and checkpoint.due())):
                    checkpoint.save(agent, done)
                    interrupt.raise_if_requested()
        except KeyboardInterrupt:
            if checkpoint is None:
                raise
            # stopped between two agent states (not while the agent learnt or the round was recorded): keep this one
            if not getattr(loop, "updating", False) and not recording and not interrupt.requested:
                checkpoint.save(agent, done)
            raise KeyboardInterrupt(f"interrupted: {checkpoint.path} holds the cell's last checkpoint; the same "
                                    "command continues from it") from None
        finally:
            if bar is not None:
                bar.close()
    regret = stack_rows(done.regret)  # (T, R)
    notes = (checkpoint.note,) if checkpoint is not None and checkpoint.note else ()
    return _Played(regret.reshape(total, -1), [], done.select_s, done.update_s, notes,
                   done.earlier_s)


def _as_numpy(values) -> np.ndarray:
    return values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def _round_bar(total: int, label: str | None, initial: int = 0):
    if label is None:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"  {label}", unit="round", leave=False, file=sys.stderr,
                mininterval=0.5)


# -- the sweep --------------------------------------------------------------------------------------
def run_experiment(config: ExperimentConfig, out: str, *, device: str = "cpu", backend: str = "local",
                   jobs: int = 1, address: str | None = None, progress: bool = False,
                   log: Callable[[str], None] = print, checkpoint_every_s: float = EVERY_S) -> ResultsDir:
    """Run every unfinished cell of ``config`` into the results directory ``out``; skip finished ones.

    Holds ``out``'s lock while it runs; a damaged cell is moved aside (said in ``log``) and runs again.
    Local cells checkpoint every ``checkpoint_every_s`` seconds and on Ctrl-C (Ray's do not: their
    workers may have no access to ``out``).

    Raises:
        ResultsMismatchError: ``out`` holds results of another config (nothing is run).
        ResultsDamagedError: ``out``'s experiment.json cannot be read (nothing is run).
        ResultsLockedError: another run is writing into ``out`` (nothing is run).
        ResultsWriteError: a file could not be written (what was written before is kept).
        KeyboardInterrupt: Ctrl-C, after the running cell's checkpoint is written.
    """
    results = ResultsDir(out)
    with results.locked():
        results.prepare(config)
        todo = [spec.label for spec in config.agents
                if not results.is_finished(spec.label, cell_config(config, spec), log)]
        done = len(config.agents) - len(todo)
        if done:
            log(f"{done} of {len(config.agents)} cells already finished in {results.path}: skipped")
        if not todo:
            return results
        if backend == "ray":
            finished = ray_backend.run_cells_on_ray(run_cell, config, todo, device, address)
        elif jobs > 1:
            finished = _run_in_processes(config, todo, device, jobs, results, checkpoint_every_s)
        else:
            finished = (run_cell(config, label, device, progress, results.checkpoint_dir(label), checkpoint_every_s)
                        for label in todo)
        bar = _sweep_bar(len(config.agents), done, progress)
        try:
            for result in finished:
                if result.failed:
                    results.write_failed(result.record)
                else:
                    results.write_cell(result.record, result.regret)
                    results.remove_checkpoints(result.record["label"])
                bar.update(1)
                log(_cell_line(result.record))
        finally:
            bar.close()
            finished.close()  # stops what still runs (a process pool's queued cells, a local Ray)
    return results


def _run_in_processes(config: ExperimentConfig, labels: list[str], device: str, jobs: int, results: ResultsDir,
                      checkpoint_every_s: float) -> Iterator[CellResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a fresh interpreter per worker (torch and numba do not like fork after threads started).
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(run_cell, config, label, device, False, results.checkpoint_dir(label),
                               checkpoint_every_s) for label in labels]
        for future in as_completed(futures):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # an error or Ctrl-C: the queued cells do not start


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
    notes = "".join(f"; {note}" for note in record.get("notes", ()))
    if chosen is None:
        return f"  {record['label']}: every grid point diverged ({record['wall_time_s']:.1f} s{notes})"
    stats = record["final_regret"][chosen]
    spread = f" +- {stats['se']:.1f}" if stats["se"] is not None else ""
    point = ", ".join(f"{k}={v}" for k, v in record["grid_points"][chosen].items())
    points, seeds = len(record["grid_points"]), len(record["seeds"])
    return (f"  {record['label']}: final regret {stats['mean']:.1f}{spread}{' at ' + point if point else ''} "
            f"({points} point{'s' if points > 1 else ''} x {seeds} seed{'s' if seeds > 1 else ''}, "
            f"{record['wall_time_s']:.1f} s{notes})")
