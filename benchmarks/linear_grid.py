"""An LMC-TS hyperparameter grid as ONE batch: 4 step sizes x 4 inverse temperatures x 10 seeds.

``LinearBandit-v0`` (a new arm set every round; d = 20, 50 arms), T = 10,000 rounds, K = 100
inner steps. The 16 grid points times 10 seeds run as one agent of 160 replicas on one vector
env (``agents.HyperparameterGrid``); every grid point sees the same 10 seeds, hence the same
problem instances. For comparison the same 16 points also run one after the other (10
replicas each, ``--no-sequential`` skips that). Prints the wall times, each point's final
cumulative regret (mean +- standard error over the seeds) and the best point.

    python benchmarks/linear_grid.py
    python benchmarks/linear_grid.py --rounds 2000 --repeats 3 --out benchmarks/results/linear_grid.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, HyperparameterGrid

try:
    from _report import GrowingTable  # run as a script: benchmarks/ is on sys.path
    from linear_paper import without_kernels
except ImportError:  # imported as benchmarks.linear_grid
    from benchmarks._report import GrowingTable
    from benchmarks.linear_paper import without_kernels


def make_env(num_envs: int, rounds: int) -> gym.vector.VectorEnv:
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                        device="cpu", horizon=rounds)


def run_batch(grid: HyperparameterGrid, rounds: int) -> tuple[float, list[np.ndarray]]:
    """All points x seeds as one agent: (wall seconds, final cumulative regret per point ``(S,)``)."""
    env = make_env(grid.num_replicas, rounds)
    agent = LMCTS(env, device="cpu", **grid.agent_kwargs())
    start = time.perf_counter()
    agent.learn(env, total_timesteps=rounds)
    wall = time.perf_counter() - start
    return wall, [regret.sum(axis=0) for regret in grid.split(agent.history["regret"])]


def run_sequential(grid: HyperparameterGrid, rounds: int) -> tuple[float, list[np.ndarray]]:
    """The same points one after the other, ``S`` replicas each."""
    wall, finals = 0.0, []
    for point in grid.points:
        env = make_env(grid.n_seeds, rounds)
        agent = LMCTS(env, seed=grid.seed, device="cpu", **point)
        start = time.perf_counter()
        agent.learn(env, total_timesteps=rounds)
        wall += time.perf_counter() - start
        finals.append(agent.history["regret"].sum(axis=0))
    return wall, finals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds T (default 10000)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per grid point (default 10)")
    parser.add_argument("--step-sizes", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.9])
    parser.add_argument("--inverse-temperatures", type=float, nargs="+", default=[3.0, 10.0, 30.0, 100.0])
    parser.add_argument("--repeats", type=int, default=1, help="report the fastest of this many batched runs")
    parser.add_argument("--no-sequential", dest="sequential", action="store_false",
                        help="skip running the points one after the other")
    parser.add_argument("--without", nargs="+", default=[], metavar="KERNEL",
                        help="run these agent kernels as their torch functions (see linear_paper.py)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    without_kernels(args.without)

    grid = HyperparameterGrid({"step_size": args.step_sizes, "inverse_temperature": args.inverse_temperatures},
                              n_seeds=args.seeds)
    batch_times, finals = [], None
    for _ in range(args.repeats):
        seconds, finals = run_batch(grid, args.rounds)
        batch_times.append(seconds)
    header = [f"LMC-TS on LinearBandit-v0, T = {args.rounds}, K = 100, {len(grid.points)} points x {args.seeds} seeds "
              f"= {grid.num_replicas} replicas, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
              f"{', agent kernels replaced by torch: ' + ' '.join(args.without) if args.without else ''}", "",
              f"- one batch of {grid.num_replicas} replicas: {min(batch_times):.1f} s (fastest of {args.repeats}: "
              f"{', '.join(f'{t:.1f}' for t in batch_times)})"]
    if args.sequential:
        seconds, sequential_finals = run_sequential(grid, args.rounds)
        gap = max(float(np.abs(a - b).max()) for a, b in zip(finals, sequential_finals, strict=True))
        header.append(f"- the {len(grid.points)} points one after the other ({args.seeds} replicas each): "
                      f"{seconds:.1f} s; largest difference of a seed's final regret from the batch: {gap:.3g}")
    table = GrowingTable([*header, "", "| step_size eta_0 | inverse_temperature beta | cumulative regret |",
                          "|---:|---:|---:|"], args.out)
    means = [float(np.mean(f)) for f in finals]
    for point, final in zip(grid.points, finals, strict=True):
        se = float(np.std(final, ddof=1) / np.sqrt(len(final))) if len(final) > 1 else float("nan")
        table.row(f"| {point['step_size']:g} | {point['inverse_temperature']:g} | {np.mean(final):.1f} +- {se:.1f} |")
    best = grid.points[int(np.argmin(means))]
    table.row(f"\nBest: step_size = {best['step_size']:g}, inverse_temperature = {best['inverse_temperature']:g} "
              f"(mean {min(means):.1f})")


if __name__ == "__main__":
    main()
