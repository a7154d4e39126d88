"""The posterior samplers of agents/samplers.py against LMC-TS at one budget of gradient evaluations per round.

Two problems of the LMC-TS paper at a modest size (all seeds as one batch, default env sizes: 50 arms, d = 20):

* ``LinearBanditFixed-v0`` with the linear model: ``--linear-budget`` gradients per round (default 50): LMC-TS,
  FG-LMC-TS, MALA and underdamped LMC take that many steps, HMC that many leapfrog steps (``K = budget / 5``
  trajectories of ``L = 5``; MALA and HMC also evaluate the loss once per proposal); ensemble sampling (10
  members) solves each member exactly and has no budget.
* ``QuadraticBandit-v0`` with a 20-20-20 MLP: ``--neural-budget`` gradients per round (default 10): LMC-TS,
  FG-LMC-TS and ULMC on mini-batches of 32 rows (the library's neural default), MALA and HMC on the full
  history (their Metropolis test needs the full loss), ensemble sampling (5 members) ``budget`` full-batch
  gradient steps per member.

Every agent keeps its library defaults otherwise (no grid search: the issue's grids at equal budget are left
to a longer run). Prints per agent the final cumulative regret (mean +- standard error over the seeds), the
seconds per 1,000 rounds (after a 3-round warm-up of every agent, which compiles the kernels), and for MALA and
HMC the mean acceptance rate (min-max over the seeds). Torch runs on one thread (the library's policy). Time
figures are those of the machine it runs on (say if it is shared).

    nice python benchmarks/samplers.py                       # both problems, 10 seeds, T = 1000 and 500
    python benchmarks/samplers.py --envs linear --rounds 300 --seeds 4 --out /tmp/samplers.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the envs)
from agents import FGLMCTS, HMCTS, LMCTS, MALATS, MLP, ULMCTS, EnsembleSampling, UniformRandom

try:
    from _report import GrowingTable  # run as a script: benchmarks/ is on sys.path
except ImportError:  # imported as benchmarks.samplers
    from benchmarks._report import GrowingTable

LEAPFROG = 5


def agents(problem: str, budget: int) -> list[tuple[str, type, dict]]:
    """(label, class, keywords) of every agent at ``budget`` gradient evaluations per round."""
    if problem == "linear":
        model = {"model": "linear"}
        return [("UniformRandom", UniformRandom, {}), ("LMCTS", LMCTS, {**model, "n_inner_steps": budget}),
                ("FGLMCTS", FGLMCTS, {**model, "n_inner_steps": budget}),
                ("MALATS", MALATS, {**model, "n_inner_steps": budget}),
                ("HMCTS", HMCTS, {**model, "n_inner_steps": max(1, budget // LEAPFROG), "n_leapfrog": LEAPFROG}),
                ("ULMCTS", ULMCTS, {**model, "n_inner_steps": budget}),
                ("EnsembleSampling", EnsembleSampling, {**model, "n_members": 10})]
    model = {"model": MLP(hidden=(20, 20, 20))}
    return [("UniformRandom", UniformRandom, {}), ("LMCTS", LMCTS, {**model, "n_inner_steps": budget}),
            ("FGLMCTS", FGLMCTS, {**model, "n_inner_steps": budget, "feel_good_cap": 10.0}),
            ("MALATS", MALATS, {**model, "n_inner_steps": budget}),
            ("HMCTS", HMCTS, {**model, "n_inner_steps": max(1, budget // LEAPFROG), "n_leapfrog": LEAPFROG}),
            ("ULMCTS", ULMCTS, {**model, "n_inner_steps": budget, "batch_size": 32}),
            ("EnsembleSampling", EnsembleSampling, {**model, "n_members": 5, "n_inner_steps": budget})]


ENVS = {"linear": "LinearBanditFixed-v0", "quadratic": "QuadraticBandit-v0"}


def run(env_id: str, rounds: int, seeds: int, cls: type, kwargs: dict) -> dict:
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", device="cpu",
                       horizon=rounds)
    agent = cls(env, seed=0, device="cpu", **kwargs)
    start = time.perf_counter()
    try:
        agent.learn(env)
    except Exception as error:  # a diverged chain is a result too
        return {"error": f"{type(error).__name__}: {str(error)[:80]}"}
    seconds = time.perf_counter() - start
    rate = getattr(agent, "acceptance_rate", None)
    return {"regret": agent.history["regret"].sum(axis=0), "per_1k": 1000 * seconds / rounds,
            "acceptance": None if rate is None else rate.cpu().numpy()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--rounds", type=int, default=None, help="horizon (default 1000 linear, 500 quadratic)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--linear-budget", type=int, default=50)
    parser.add_argument("--neural-budget", type=int, default=10)
    parser.add_argument("--agents", nargs="+", default=None, help="labels to run (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="also keep the table in this Markdown file")
    args = parser.parse_args(argv)
    for problem in args.envs:  # compile the kernels (numba) before any timing
        for _, cls, kwargs in agents(problem, 2):
            run(ENVS[problem], 3, 2, cls, kwargs)
    table = GrowingTable(["| env | T | seeds | grads / round | agent | regret mean +- s.e. | s / 1k rounds | "
                          "acceptance mean (min-max) |", "|---|---:|---:|---:|---|---:|---:|---:|"], args.out)
    for problem in args.envs:
        rounds = args.rounds or (1000 if problem == "linear" else 500)
        budget = args.linear_budget if problem == "linear" else args.neural_budget
        for label, cls, kwargs in agents(problem, budget):
            if args.agents and label not in args.agents:
                continue
            result = run(ENVS[problem], rounds, args.seeds, cls, kwargs)
            head = f"| {ENVS[problem]} | {rounds} | {args.seeds} | {budget} | {label} |"
            if "error" in result:
                table.row(f"{head} {result['error']} | | |")
                continue
            regret, rate = result["regret"], result["acceptance"]
            se = regret.std(ddof=1) / np.sqrt(len(regret))
            accept = "" if rate is None else f"{rate.mean():.3f} ({rate.min():.3f}-{rate.max():.3f})"
            table.row(f"{head} {regret.mean():.1f} +- {se:.1f} | {result['per_1k']:.1f} | {accept} |")


if __name__ == "__main__":
    main()
