"""A plain, single-seed numpy LinUCB: the yardstick for the batched agents' speed.

This is the "plain per-seed numpy Sherman-Morrison" implementation the speed
targets of ``benchmarks/linear_paper.py`` are measured against: one seed, float64,
its own ``numpy.random.Generator`` for the arms and the noise (so its regret is
comparable in distribution to ``LinearBandit-v0``'s, not equal draw for draw), no
Gymnasium, no torch. Running it tells how fast this machine is right now.

    python benchmarks/numpy_linucb.py --seeds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def run(seed: int, rounds: int = 10_000, n_arms: int = 50, dim: int = 20, changing_arms: bool = True,
        exploration_scale: float = 0.1, lambda_reg: float = 1.0, noise_std: float = np.sqrt(0.5)) -> float:
    """Play LinUCB (``nu_t = c sqrt(d log t)``) for ``rounds`` rounds; return the cumulative regret."""
    rng = np.random.default_rng(seed)

    def unit_rows(shape):
        z = rng.standard_normal(shape)
        return z / np.linalg.norm(z, axis=-1, keepdims=True)

    theta_star = unit_rows(dim)
    arms = unit_rows((n_arms, dim))
    design_inverse, reward_sum, theta_hat = np.eye(dim) / lambda_reg, np.zeros(dim), np.zeros(dim)
    regret = 0.0
    for t in range(1, rounds + 1):
        if changing_arms:
            arms = unit_rows((n_arms, dim))
        means = arms @ theta_star
        nu = exploration_scale * np.sqrt(dim * np.log(t))
        width = np.sqrt(np.einsum("kd,kd->k", arms @ design_inverse, arms))
        action = int(np.argmax(arms @ theta_hat + nu * width))
        x = arms[action]
        reward = means[action] + noise_std * rng.standard_normal()
        regret += means.max() - means[action]
        vx = design_inverse @ x
        design_inverse -= np.outer(vx, vx) / (1.0 + x @ vx)
        reward_sum += reward * x
        theta_hat = design_inverse @ reward_sum
    return regret


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=3, help="seeds, run one after another (default 3)")
    parser.add_argument("--fixed", action="store_true", help="one arm set per run instead of a new one each round")
    args = parser.parse_args(argv)
    for seed in range(args.seeds):
        start = time.perf_counter()
        regret = run(seed, args.rounds, changing_arms=not args.fixed)
        print(f"seed {seed}: {time.perf_counter() - start:.2f} s, cumulative regret {regret:.1f}")


if __name__ == "__main__":
    main()
