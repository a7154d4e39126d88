"""The LMC-TS paper's linear experiments (Section 5.1): wall time and final cumulative regret.

Both linear settings (a new arm set every round, ``LinearBandit-v0``; one fixed arm
set, ``LinearBanditFixed-v0``): d = 20, 50 arms, T = 10,000 rounds, all seeds as one
batch through ``gym.make_vec``. Every agent uses its library defaults (LMC-TS:
K = 100 inner steps). Prints a Markdown table: wall time of ``learn`` (env included),
the env's share (the same rounds with a fixed action), and the final cumulative
regret as mean +- standard error over the seeds.

The last row of each setting (``--reference``, on by default) runs the plain
single-seed numpy LinUCB of ``benchmarks/numpy_linucb.py`` once per seed, one seed
after another: the yardstick the speed targets are stated against, measured on the
same machine at the same time. ``--repeats N`` reports the fastest of N runs and, in
brackets, every run's time in order (the runs are deterministic, so only the time varies; on
a shared VM it varies by +-30%, at times more).

    python benchmarks/linear_paper.py                      # the paper's sizes
    python benchmarks/linear_paper.py --rounds 2000 --seeds 4 --agents LMCTS LinTS
    python benchmarks/linear_paper.py --device cuda --seeds 1000 --no-reference

``--threads`` (default 1) sets torch's intra-op threads: the tensors here are small,
and on a shared 2-core machine two OpenMP threads fighting another process make
small ops 10x to 40x slower.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, EpsGreedy, LinTS, LinUCB, UniformRandom

try:
    from numpy_linucb import run as numpy_linucb  # run as a script: benchmarks/ is on sys.path
except ImportError:  # imported as benchmarks.linear_paper
    from benchmarks.numpy_linucb import run as numpy_linucb

AGENTS = {"LMCTS": LMCTS, "LinTS": LinTS, "LinUCB": LinUCB, "EpsGreedy": EpsGreedy, "UniformRandom": UniformRandom}
SETTINGS = {"changing": "LinearBandit-v0", "fixed": "LinearBanditFixed-v0"}


def make_env(setting: str, rounds: int, seeds: int, device: str = "cpu") -> gym.vector.VectorEnv:
    return gym.make_vec(SETTINGS[setting], num_envs=seeds, vectorization_mode="vector_entry_point",
                        device=device, horizon=rounds)


def run_agent(name: str, setting: str, rounds: int, seeds: int, seed: int = 0, device: str = "cpu",
              **kwargs) -> tuple[float, np.ndarray]:
    """Play ``rounds`` rounds of ``seeds`` replicas; return (wall seconds, final cumulative regret ``(seeds,)``)."""
    env = make_env(setting, rounds, seeds, device)
    agent = AGENTS[name](env, seed=seed, device=device, **kwargs)
    start = time.perf_counter()
    agent.learn(env, total_timesteps=rounds)
    regret = agent.history["regret"]  # a CPU array: the device's work is done when it exists
    wall = time.perf_counter() - start
    return wall, regret.sum(axis=0)


def env_seconds(setting: str, rounds: int, seeds: int, device: str = "cpu") -> float:
    """Time of the env alone: ``rounds`` steps with action 0 everywhere."""
    env = make_env(setting, rounds, seeds, device)
    env.reset(seed=0)
    actions = torch.zeros(seeds, dtype=torch.int64, device=device)
    start = time.perf_counter()
    for _ in range(rounds):
        _, reward, *_ = env.step(actions)
    reward.cpu()  # waits for the device
    return time.perf_counter() - start


def reference_seconds(setting: str, rounds: int, seeds: int) -> tuple[float, np.ndarray]:
    """The plain numpy LinUCB, one seed after another: (total wall seconds, regret per seed)."""
    start = time.perf_counter()
    regret = [numpy_linucb(seed, rounds, changing_arms=setting == "changing") for seed in range(seeds)]
    return time.perf_counter() - start, np.array(regret)


def timed_runs(repeats: int, measure, *args):
    """Run ``measure(*args) -> (seconds, *rest)`` ``repeats`` times: every run's seconds, and the last run's rest."""
    results = [measure(*args) for _ in range(repeats)]
    return [r[0] for r in results], *results[-1][1:]


def times_cell(times: list[float]) -> str:
    """The fastest time, and every run's in order when there are several: ``1.3 (1.5, 1.3, 1.4)``."""
    fastest = f"{min(times):.1f}"
    return fastest if len(times) == 1 else f"{fastest} ({', '.join(f'{t:.1f}' for t in times)})"


def mean_se(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return float(values.mean()), float(se)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds T (default 10000)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds, run as one batch (default 10)")
    parser.add_argument("--agents", nargs="+", default=["LMCTS", "LinTS", "LinUCB", "EpsGreedy"],
                        choices=sorted(AGENTS))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--device", default="cpu", help="torch device of the envs and agents (default cpu)")
    parser.add_argument("--repeats", type=int, default=1, help="report the fastest of this many runs (default 1)")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="skip the plain numpy single-seed LinUCB rows")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    print(f"T = {args.rounds} rounds, {args.seeds} seeds as one batch, d = 20, 50 arms, "
          f"torch {torch.__version__}, device {args.device}, {args.threads} thread(s), "
          f"fastest of {args.repeats} run(s), every run's time in brackets\n")
    print("| setting | agent | wall time (s) | env alone (s) | cumulative regret (mean +- s.e.) |")
    print("|---|---|---:|---:|---:|")
    for setting in args.settings:
        (env_times,) = timed_runs(args.repeats, lambda *a: (env_seconds(*a),), setting, args.rounds, args.seeds,
                                  args.device)
        env_time = f"{min(env_times):.1f}"
        for name in args.agents:
            times, regret = timed_runs(args.repeats, run_agent, name, setting, args.rounds, args.seeds, 0,
                                       args.device)
            mean, se = mean_se(regret)
            print(f"| {setting} | {name} | {times_cell(times)} | {env_time} | {mean:.1f} +- {se:.1f} |", flush=True)
        if args.reference:
            times, regret = timed_runs(args.repeats, reference_seconds, setting, args.rounds, args.seeds)
            mean, se = mean_se(regret)
            print(f"| {setting} | numpy LinUCB, one seed at a time (reference) | {times_cell(times)} | - | "
                  f"{mean:.1f} +- {se:.1f} |", flush=True)


if __name__ == "__main__":
    main()
