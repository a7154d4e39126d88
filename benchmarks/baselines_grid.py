"""Grid search behind the default exploration scales of the baselines (LinUCB, LinTS, EpsGreedy,
UCBGLM, GLMTSL, SGDTS).

Each setting runs all seeds as one batch (``--seeds`` replicas, seed 0..seeds-1) and prints the
final cumulative regret as mean +- standard error and the wall time. Usage::

    python benchmarks/baselines_grid.py --family linear --horizon 10000
    python benchmarks/baselines_grid.py --family glm --horizon 2000
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import GLMTSL, SGDTS, UCBGLM, EpsGreedy, LinTS, LinUCB, UniformRandom

GRIDS = {
    "linear": {
        "envs": ["LinearBandit-v0", "LinearBanditFixed-v0"],
        "agents": [
            (UniformRandom, {}),
            *[(LinUCB, {"exploration_scale": c}) for c in (0.02, 0.05, 0.1, 0.2, 0.5)],
            *[(LinTS, {"exploration_scale": c}) for c in (0.01, 0.02, 0.05, 0.1, 0.2)],
            *[(EpsGreedy, {"exploration_scale": c}) for c in (0.1, 0.3, 1.0, 3.0)],
        ],
    },
    "glm": {
        "envs": ["LogisticBandit-v0"],
        "agents": [
            (UniformRandom, {}),
            *[(UCBGLM, {"exploration_scale": c}) for c in (0.1, 0.25, 0.5, 1.0, 2.0)],
            *[(GLMTSL, {"exploration_scale": c}) for c in (0.03, 0.1, 0.25, 0.5, 1.0)],
            *[(SGDTS, {"exploration_scale": c, "step_size": s})
              for c in (0.02, 0.1, 0.3) for s in (0.1, 1.0, 3.0, 10.0)],
        ],
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(GRIDS), default="linear")
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    grid = GRIDS[args.family]
    for env_id in grid["envs"]:
        for cls, kwargs in grid["agents"]:
            venv = gym.make_vec(env_id, num_envs=args.seeds, vectorization_mode="vector_entry_point", device="cpu")
            start = time.perf_counter()
            agent = cls(venv, seed=0, device="cpu", **kwargs).learn(venv, total_timesteps=args.horizon)
            wall = time.perf_counter() - start
            final = agent.history["regret"].sum(axis=0)  # (R,)
            sem = final.std(ddof=1) / np.sqrt(len(final))
            print(f"{env_id:22s} {cls.__name__:13s} {kwargs!s:45s} regret {final.mean():8.1f} +- {sem:5.1f}"
                  f"  wall {wall:6.1f} s", flush=True)


if __name__ == "__main__":
    main()
