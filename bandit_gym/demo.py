"""The default experiment: a few agents on LinearBandit-v0, many seeds as one batch.

    python -m bandit_gym.demo [--rounds 2000] [--seeds 10] [--agents LMCTS LinTS LinUCB UniformRandom]

Prints each agent's final cumulative regret as mean +- standard error over the
seeds, and the wall time. The experiment runner of a later release replaces it.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import agents as agent_zoo
import bandit_gym  # noqa: F401  (registers the envs)

DEFAULT_AGENTS = ("LMCTS", "LinTS", "LinUCB", "UniformRandom")


def run(env_id: str, agent_names: list[str], rounds: int, seeds: int, seed: int = 0) -> list[dict]:
    """Run every agent on ``seeds`` replicas of ``env_id``; return one result row per agent."""
    rows = []
    for name in agent_names:
        if not hasattr(agent_zoo, name):
            raise ValueError(f"agent {name!r} is not in the agents package; available: {sorted(agent_zoo.__all__)}")
        venv = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", horizon=rounds)
        start = time.perf_counter()
        agent = getattr(agent_zoo, name)(venv, seed=seed, device="cpu").learn(venv)
        wall = time.perf_counter() - start
        final = agent.history["regret"].sum(axis=0)  # (seeds,) cumulative regret at the horizon
        sem = final.std(ddof=1) / seeds**0.5 if seeds > 1 else float("nan")
        rows.append({"agent": name, "regret_mean": float(final.mean()), "regret_sem": float(sem), "seconds": wall})
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (shared by ``python -m bandit_gym.demo`` and ``bandit-gym demo``)."""
    parser.add_argument("--env", default="LinearBandit-v0", help="a registered env id")
    parser.add_argument("--rounds", type=int, default=2000, help="rounds per run (default 2000)")
    parser.add_argument("--seeds", type=int, default=10, help="independent runs, simulated as one batch (default 10)")
    parser.add_argument("--agents", nargs="+", default=[a for a in DEFAULT_AGENTS if hasattr(agent_zoo, a)],
                        help=f"agent class names (default {' '.join(DEFAULT_AGENTS)})")


def run_from_args(args: argparse.Namespace) -> int:
    print(f"{args.env}: {args.seeds} seeds x {args.rounds} rounds, cumulative regret (mean +- s.e.)")
    for row in run(args.env, args.agents, args.rounds, args.seeds):
        print(f"  {row['agent']:<14} {row['regret_mean']:9.1f} +- {row['regret_sem']:6.1f}   ({row['seconds']:.1f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a few agents on a synthetic bandit and print their regret.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
