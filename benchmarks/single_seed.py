"""One seed, and ten: a round of the batched agents against the numpy textbook LinUCB loop (issue 21, item 3).

The reference is ``benchmarks/numpy_linucb.py``'s ``run_env``: the 30-line numpy LinUCB stepping
``gym.make("LinearBandit-v0")`` (float64, one seed). Against it, ``agent.learn(env, rounds)`` of LinUCB, LinTS
and LMC-TS (linear model; library defaults, kernels on) at R = 1 (``gym.make``) and R = 10 (the native batched
env). The reference and the agents run alternately, ``--repeats`` times, in this one process; each figure is
the median over the repeats, so every ratio compares runs seconds apart under the same load.

Two floors are measured beside them: ``env.step`` alone (a bare loop playing arm 0, no agent) and
``UniformRandom`` through ``learn`` (the loop with an agent that draws one uniform a round). Whatever an agent
computes, its round costs at least the env's step: where the floor already misses a target, no agent can meet it.

Printed per agent and R: microseconds per round (wall, and CPU time of this process), the ratio of a round to
the reference's round (R = 1; target at most 1.5) and the speed per seed against the reference (R = 10:
``10 x reference round / agent round``; target at least 4). CPU model and load average are printed with them.

    python benchmarks/single_seed.py                    # 2,000 rounds, 5 repeats
    python benchmarks/single_seed.py --rounds 500 --repeats 3 --agents LinUCB
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS, LinUCB, UniformRandom

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import cpu_model  # noqa: E402
from numpy_linucb import run_env  # noqa: E402

AGENTS = {"LinUCB": LinUCB, "LinTS": LinTS, "LMCTS": LMCTS}
#: The floors: no agent (``env.step`` alone) and an agent that learns nothing.
FLOORS = {"env.step alone": None, "UniformRandom": UniformRandom}
ENV_ID = "LinearBandit-v0"


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def reference(rounds: int) -> tuple[float, float]:
    """Wall and CPU seconds of the numpy textbook LinUCB on ``gym.make(ENV_ID)``, seed 0."""
    wall, cpu = clocks()
    run_env(ENV_ID, 0, rounds, horizon=rounds + 1)
    end_wall, end_cpu = clocks()
    return end_wall - wall, end_cpu - cpu


def agent_run(name: str, replicas: int, rounds: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``learn(rounds)`` on a fresh env and agent (seed 0); for ``"env.step alone"``, of
    ``rounds`` steps of arm 0 after a reset."""
    if replicas == 1:
        env = gym.make(ENV_ID, horizon=rounds + 1)
    else:
        env = gym.make_vec(ENV_ID, num_envs=replicas, vectorization_mode="vector_entry_point", horizon=rounds + 1)
    agent_class = {**AGENTS, **FLOORS}[name]
    if agent_class is None:
        env.reset(seed=0)
        action = 0 if replicas == 1 else np.zeros(replicas, dtype=np.int64)

        def play() -> None:
            for _ in range(rounds):
                env.step(action)
    else:
        play = functools.partial(agent_class(env, seed=0).learn, rounds)
    wall, cpu = clocks()
    play()
    end_wall, end_cpu = clocks()
    env.close()
    return end_wall - wall, end_cpu - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--no-floors", dest="floors", action="store_false", help="leave out the two floors")
    args = parser.parse_args(argv)
    names = [*args.agents, *(FLOORS if args.floors else ())]
    cases = [(name, r) for r in args.replicas for name in names]
    times: dict = {"reference": []}
    loads = [os.getloadavg()[0]]
    agent_run(args.agents[0], 1, 50)  # warm up (numba's cached kernels, torch's first calls)
    reference(50)
    for _ in range(args.repeats):
        times["reference"].append(reference(args.rounds))
        for case in cases:
            times.setdefault(case, []).append(agent_run(*case, args.rounds))
        loads.append(os.getloadavg()[0])

    def per_round(runs: list[tuple[float, float]], column: int) -> float:
        return statistics.median(run[column] for run in runs) / args.rounds * 1e6

    ref_wall, ref_cpu = per_round(times["reference"], 0), per_round(times["reference"], 1)
    print(f"{cpu_model()}, {os.cpu_count()} cores; load average (1 min) {min(loads):.1f}-{max(loads):.1f}; "
          f"{args.rounds} rounds, median of {args.repeats} alternating runs")
    print("| agent | R | us/round wall | us/round CPU | round / reference round (wall, CPU) | "
          "per-seed speed vs reference (wall, CPU) |")
    print("|---|---|---|---|---|---|")
    print(f"| numpy textbook LinUCB (reference) | 1 | {ref_wall:.0f} | {ref_cpu:.0f} | 1 | 1 |")
    for name, r in cases:
        wall, cpu = per_round(times[(name, r)], 0), per_round(times[(name, r)], 1)
        print(f"| {name} | {r} | {wall:.0f} | {cpu:.0f} | {wall / ref_wall:.2f}, {cpu / ref_cpu:.2f} | "
              f"{r * ref_wall / wall:.2f}, {r * ref_cpu / cpu:.2f} |")


if __name__ == "__main__":
    main()
