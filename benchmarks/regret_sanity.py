"""The table behind ``tests/agents/test_regret_sanity.py``: final regret against uniform random.

Every agent with its library defaults plays the same seeds (one batch, replicas =
seeds 0..n-1; as in the tests, n = 4 on ``LinearBandit-v0`` and 20 on
``LogisticBandit-v0``) for T = 2,000 rounds. Prints final cumulative regret, mean +-
standard error over the seeds, its ratio to uniform random's mean (the linear test
requires < 0.25), and the mean of the paired per-seed gaps to random in standard errors
(the logistic test requires > 4).

    python benchmarks/regret_sanity.py
    python benchmarks/regret_sanity.py --envs LinearBandit-v0 --seeds 10
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the envs)
from agents import GLMTSL, LMCTS, SGDTS, UCBGLM, EpsGreedy, LinTS, LinUCB, UniformRandom

AGENTS = {
    "LinearBandit-v0": [("LMCTS", LMCTS, {}), ("LinTS", LinTS, {}), ("LinUCB", LinUCB, {}),
                        ("EpsGreedy", EpsGreedy, {})],
    "LogisticBandit-v0": [("LMCTS (glm)", LMCTS, {"model": "glm"}), ("UCBGLM", UCBGLM, {}),
                          ("GLMTSL", GLMTSL, {}), ("SGDTS", SGDTS, {})],
}


DEFAULT_SEEDS = {"LinearBandit-v0": 4, "LogisticBandit-v0": 20}


def final_regret(env_id: str, rounds: int, seeds: int, agent_class: type, **kwargs) -> np.ndarray:
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", device="cpu",
                       horizon=rounds)
    return agent_class(env, seed=0, device="cpu", **kwargs).learn(env).history["regret"].sum(axis=0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds 0..n-1 as one batch (default: as the tests, 4 linear and 20 logistic)")
    parser.add_argument("--envs", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    args = parser.parse_args(argv)
    print(f"T = {args.rounds}, library defaults; seeds as one batch\n")
    print("| env | seeds | agent | regret | / random | gap to random (s.e.) |")
    print("|---|---:|---|---:|---:|---:|")
    for env_id in args.envs:
        seeds = args.seeds or DEFAULT_SEEDS[env_id]
        random = final_regret(env_id, args.rounds, seeds, UniformRandom)
        for name, cls, kwargs in [("UniformRandom", UniformRandom, None), *AGENTS[env_id]]:
            regret = random if kwargs is None else final_regret(env_id, args.rounds, seeds, cls, **kwargs)
            se = regret.std(ddof=1) / np.sqrt(seeds)
            gap = random - regret
            gap_se = "" if kwargs is None else f"{gap.mean() / (gap.std(ddof=1) / np.sqrt(seeds)):.1f}"
            print(f"| {env_id} | {seeds} | {name} | {regret.mean():.1f} +- {se:.1f} | "
                  f"{regret.mean() / random.mean():.2f} | {gap_se} |", flush=True)


if __name__ == "__main__":
    main()
