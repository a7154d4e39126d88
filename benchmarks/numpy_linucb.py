"""Plain numpy LinUCB loops: the yardsticks for the batched agents' speed.

``run`` is the "plain per-seed numpy Sherman-Morrison" implementation the speed
targets of ``benchmarks/linear_paper.py`` are measured against: one seed, float64,
its own ``numpy.random.Generator`` for the arms and the noise (so its regret is
comparable in distribution to ``LinearBandit-v0``'s, not equal draw for draw), no
Gymnasium, no torch. Running it tells how fast this machine is right now.

``run_env`` is the textbook LinUCB (Li et al. 2010: index ``x^T theta_hat + alpha sqrt(x^T A^-1 x)``,
``A = ridge I + sum x x^T``, a constant ``alpha``; float64, first arm on ties) on one Gymnasium env
of this package, e.g. a real-data bandit reset with ``seed``: the reference row of
``benchmarks/real_data.py``. On one-hot-block arms it is the disjoint per-arm LinUCB.

``run_batched`` is this project's design written inline: all seeds as one float32
numpy batch, drawing the arm sets from the envs' own counter-based generator (the
same blocks as ``LinearBandit-v0``), with the env and the agent in one loop: no
Gymnasium ``step``, no agent classes, no checks, and numpy (not compiled kernels)
for the agent's math.

    python benchmarks/numpy_linucb.py --seeds 3
    python benchmarks/numpy_linucb.py --seeds 10 --batched
"""

from __future__ import annotations

import argparse
import math
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
    gram_inverse, reward_sum, theta_hat = np.eye(dim) / lambda_reg, np.zeros(dim), np.zeros(dim)
    regret = 0.0
    for t in range(1, rounds + 1):
        if changing_arms:
            arms = unit_rows((n_arms, dim))
        means = arms @ theta_star
        nu = exploration_scale * np.sqrt(dim * np.log(t))
        width = np.sqrt(np.einsum("kd,kd->k", arms @ gram_inverse, arms))
        action = int(np.argmax(arms @ theta_hat + nu * width))
        x = arms[action]
        reward = means[action] + noise_std * rng.standard_normal()
        regret += means.max() - means[action]
        vx = gram_inverse @ x
        gram_inverse -= np.outer(vx, vx) / (1.0 + x @ vx)
        reward_sum += reward * x
        theta_hat = gram_inverse @ reward_sum
    return regret


def run_env(env_id: str, seed: int, rounds: int, alpha: float = 1.0, ridge: float = 1.0, **env_kwargs) -> float:
    """Textbook LinUCB on ``gym.make(env_id, **env_kwargs)`` reset with ``seed``; the cumulative regret over
    ``rounds`` rounds (the env's ``info["regret"]``)."""
    import gymnasium as gym

    import bandit_gym  # noqa: F401  (registers the envs)

    env = gym.make(env_id, **env_kwargs)
    arms, _ = env.reset(seed=seed)
    regret = textbook_linucb(env, arms, rounds, alpha, ridge)
    env.close()
    return regret


def textbook_linucb(env, arms: np.ndarray, rounds: int, alpha: float = 1.0, ridge: float = 1.0) -> float:
    """Play :func:`run_env`'s textbook LinUCB for ``rounds`` rounds on a single env that was just reset and
    showed ``arms``; the cumulative regret. The loop that ``benchmarks/single_seed.py`` times."""
    dim = arms.shape[1]
    a_inverse, reward_sum, theta_hat = np.eye(dim) / ridge, np.zeros(dim), np.zeros(dim)
    regret = 0.0
    for _ in range(rounds):
        x_all = np.asarray(arms, dtype=np.float64)  # (K, d)
        width = np.sqrt(np.maximum(np.einsum("kd,kd->k", x_all @ a_inverse, x_all), 0.0))
        action = int(np.argmax(x_all @ theta_hat + alpha * width))
        arms, reward, terminated, truncated, info = env.step(action)
        regret += float(info["regret"])
        x = x_all[action]
        ax = a_inverse @ x
        a_inverse -= np.outer(ax, ax) / (1.0 + x @ ax)
        reward_sum += float(reward) * x
        theta_hat = a_inverse @ reward_sum
        if terminated or truncated:
            break
    return regret


def run_batched(seeds: int, rounds: int = 10_000, n_arms: int = 50, dim: int = 20,
                exploration_scale: float = 0.1, noise_std: float = math.sqrt(0.5)) -> tuple[np.ndarray, float, float]:
    """LinUCB on changing arm sets for seeds ``0..seeds-1`` at once.

    Returns (regret per seed, seconds of the loop, seconds of it spent on the env's draws); the
    imports (torch takes seconds without cached bytecode) are not timed.
    """
    import torch

    from bandit_gym import rng as _rng
    from bandit_gym.rng import Stream

    loop_start = time.perf_counter()
    keys = _rng.seed_to_key(torch.arange(seeds))
    theta_star = _rng.unit_normal(keys, Stream.INSTANCE, 0, (dim,)).numpy()  # (R, d)
    block = max(1, 8192 // (n_arms * dim))  # the envs' block of rounds
    rows = np.arange(seeds)
    gram_inverse = np.tile(np.eye(dim, dtype=np.float32), (seeds, 1, 1))  # (R, d, d)
    reward_sum, theta_hat = np.zeros((seeds, dim), np.float32), np.zeros((seeds, dim), np.float32)
    regret, draw_seconds = np.zeros(seeds), 0.0
    for t in range(rounds):
        if t % block == 0:
            start = time.perf_counter()
            arm_blocks = _rng.unit_normal(keys, Stream.CONTEXT, t // block, (block, n_arms, dim)).numpy()
            mean_blocks = np.einsum("rbkd,rd->rbk", arm_blocks, theta_star)  # (R, B, K)
            draw_seconds += time.perf_counter() - start
        if t % 256 == 0:
            noise = _rng.normal(keys, Stream.REWARD, t // 256, (256,)).numpy()  # (R, 256)
        arms, means = arm_blocks[:, t % block], mean_blocks[:, t % block]  # (R, K, d), (R, K)
        nu = exploration_scale * math.sqrt(dim * math.log(t + 1))  # a Python float keeps the arrays float32
        width = np.sqrt(np.maximum(np.einsum("rkd,rkd->rk", np.matmul(arms, gram_inverse), arms), 0.0))
        action = (np.matmul(arms, theta_hat[:, :, None])[:, :, 0] + nu * width).argmax(axis=1)  # (R,)
        x, chosen = arms[rows, action], means[rows, action]  # (R, d), (R,)
        regret += means.max(axis=1) - chosen
        vx = np.matmul(gram_inverse, x[:, :, None])[:, :, 0]  # (R, d)
        gram_inverse = gram_inverse - vx[:, :, None] * vx[:, None, :] / (1.0 + (vx * x).sum(-1))[:, None, None]
        reward_sum = reward_sum + (chosen + noise_std * noise[:, t % 256])[:, None] * x
        theta_hat = np.matmul(gram_inverse, reward_sum[:, :, None])[:, :, 0]
    return regret, time.perf_counter() - loop_start, draw_seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=3, help="seeds, run one after another (default 3)")
    parser.add_argument("--fixed", action="store_true", help="one arm set per run instead of a new one each round")
    parser.add_argument("--batched", action="store_true",
                        help="all seeds as one numpy batch with the envs' draws (changing arms), env and agent inline")
    args = parser.parse_args(argv)
    if args.batched:
        regret, seconds, draw_seconds = run_batched(args.seeds, args.rounds)
        print(f"{args.seeds} seeds as one batch: {seconds:.2f} s "
              f"(the env's draws {draw_seconds:.2f} s), cumulative regret {regret.mean():.1f} "
              f"+- {regret.std(ddof=1) / np.sqrt(len(regret)):.1f}")
        return
    for seed in range(args.seeds):
        start = time.perf_counter()
        regret = run(seed, args.rounds, changing_arms=not args.fixed)
        print(f"seed {seed}: {time.perf_counter() - start:.2f} s, cumulative regret {regret:.1f}")


if __name__ == "__main__":
    main()
