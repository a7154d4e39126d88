"""Neural LMC-TS and NeuralTS at their defaults on Mushroom-v0: seconds per run, ms per round, regret.

Each agent plays ``--seeds`` seeds (0, 1, ...) as one batch of replicas on
``gym.make_vec("Mushroom-v0", num_envs=seeds, vectorization_mode="vector_entry_point")`` for ``--rounds``
rounds, built with nothing but the env (``LMCTS(env, model="mlp")``, ``NeuralTS(env)``), one torch thread
(the library's default). Printed per agent: the wall and CPU seconds of construction and ``learn``, the ms per
round (wall and CPU) averaged over the rounds around t = 100, 1,000 and 5,000 (those the run reaches: rounds
``t - 50`` to ``t + 49``), and the final cumulative regret, mean +- standard error over the seeds, to compare
with ``benchmarks/results/real_data.md`` (the same runs at 5,000 rounds). The CPU seconds count this process
only, so they move less with the load than the wall seconds; neither is a clean figure on a shared machine:
the header names the CPU model and the load average at the start, and each row the load at its end.

The data are read from ``--cache-dir``, else ``OPENML_CACHE_DIR``, else a temporary copy of the shared cache
(``benchmarks/real_data.py``'s :func:`cache_dir`). Nothing is downloaded.

    python benchmarks/neural_rounds.py                      # 5 seeds x 1,000 rounds
    python benchmarks/neural_rounds.py --rounds 5000        # issue 39's target size
    python benchmarks/neural_rounds.py --agents LMCTS-mlp --rounds 200
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, NeuralTS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import GrowingTable, cpu_model  # noqa: E402
from real_data import ROWS, cache_dir, summary  # noqa: E402

ENV_ID = "Mushroom-v0"
#: Row name -> (agent class, constructor keywords besides the env): both at their defaults.
AGENTS = {"LMCTS-mlp": (LMCTS, {"model": "mlp"}), "NeuralTS": (NeuralTS, {})}
#: Rounds around which the ms per round is averaged (rounds t - 50 to t + 49).
MARKS = (100, 1_000, 5_000)


def run_agent(name: str, rounds: int, seeds: int, cache: Path) -> dict:
    """One run: wall and CPU seconds, the wall and CPU clock after every round, and the final regret per seed."""
    cls, kwargs = AGENTS[name]
    env = gym.make_vec(ENV_ID, num_envs=seeds, vectorization_mode="vector_entry_point", device="cpu",
                       horizon=rounds, cache_dir=cache)
    wall, cpu = [], []

    def clock(agent, played: int) -> None:
        wall.append(time.perf_counter())
        cpu.append(time.process_time())

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    agent = cls(env, seed=0, device="cpu", **kwargs).learn(env, callback=clock)
    result = {"wall": time.perf_counter() - start_wall, "cpu": time.process_time() - start_cpu,
              "regret": agent.history["regret"].sum(axis=0), "clock_wall": np.array(wall),
              "clock_cpu": np.array(cpu)}
    env.close()
    return result


def ms_per_round(clock: np.ndarray, t: int) -> float:
    """Mean milliseconds a round over rounds ``t - 50`` to ``t + 49`` (1-based; cut to the rounds played), from the
    clock after each round (``clock[i]``: after round ``i + 1``)."""
    low, high = max(t - 52, 0), min(t + 48, len(clock) - 1)  # after round t - 51, after round t + 49
    return 1e3 * (clock[high] - clock[low]) / (high - low)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1_000, help="rounds per run (default 1,000)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..n-1 as one batch (default 5)")
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS), metavar="NAME",
                        help=f"agents to run (default: all): {', '.join(AGENTS)}")
    parser.add_argument("--cache-dir", default=None, help="the OpenML cache (default: OPENML_CACHE_DIR, else a "
                                                           "temporary copy of ../shared/datasets/openml_cache)")
    parser.add_argument("--out", type=Path, default=None, help="also keep the table in this Markdown file")
    args = parser.parse_args(argv)
    if not 2 <= args.rounds <= ROWS[ENV_ID]:
        parser.error(f"--rounds must be within 2-{ROWS[ENV_ID]} (every row of {ENV_ID} at most once), "
                     f"got {args.rounds}")
    if args.seeds < 2:
        parser.error(f"--seeds must be >= 2 (a standard error needs two), got {args.seeds}")
    cache = cache_dir(args.cache_dir)
    marks = [t for t in MARKS if t <= args.rounds] or [args.rounds // 2]
    mark_columns = " | ".join(f"ms/round at t = {t:,} (wall / CPU)" for t in marks)
    header = [f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
              f"{torch.__version__}, {torch.get_num_threads()} thread(s) outside learn (learn: the library's policy); "
              f"BANDIT_GYM_KERNELS={os.environ.get('BANDIT_GYM_KERNELS', 'unset')}; {ENV_ID}, seeds 0-{args.seeds - 1}"
              f" x {args.rounds:,} rounds, each agent at its defaults", "",
              f"| agent | wall (s) | CPU (s) | {mark_columns} | final cumulative regret (mean +- s.e.) | load at end |",
              "|---|---:|---:|" + "---:|" * len(marks) + "---:|---:|"]
    table = GrowingTable(header, args.out)
    for name in args.agents:
        result = run_agent(name, args.rounds, args.seeds, cache)
        wall, cpu = result["clock_wall"], result["clock_cpu"]
        per_round = " | ".join(f"{ms_per_round(wall, t):.1f} / {ms_per_round(cpu, t):.1f}" for t in marks)
        table.row(f"| {name} | {result['wall']:.1f} | {result['cpu']:.1f} | {per_round} | {summary(result['regret'])} "
                  f"| {os.getloadavg()[0]:.1f} |")
        print("  regret per seed:", " ".join(f"{r:.0f}" for r in result["regret"]), flush=True)


if __name__ == "__main__":
    main()
