"""Shared runs for the agents' seeding tests: one batched run and its single-run twins."""

from __future__ import annotations

import gymnasium as gym

import bandit_gym  # noqa: F401  (registers the envs)


def make_vec(env_id: str, num_envs: int, sizes: dict) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", device="cpu", **sizes)


def seeded_histories(cls, env_id: str, sizes: dict, rounds: int, seeds=(0, 0, 1)) -> list[dict]:
    """``history`` of a 3-replica batched run for each seed."""
    return [cls(make_vec(env_id, 3, sizes), seed=s, device="cpu").learn(make_vec(env_id, 3, sizes),
                                                                          total_timesteps=rounds).history
            for s in seeds]


def batched_and_single_runs(cls, env_id: str, sizes: dict, rounds: int, num: int = 10, seed: int = 5,
                            replicas=(0, 6, 9)):
    """A batched run of ``num`` replicas and, for each replica r in ``replicas``, the single run with seed + r.

    ``num = 10`` puts some replicas in the SIMD tails of elementwise kernels.
    """
    batched = cls(make_vec(env_id, num, sizes), seed=seed, device="cpu")
    batched.learn(make_vec(env_id, num, sizes), total_timesteps=rounds)
    singles = {}
    for r in replicas:
        env = gym.make(env_id, **sizes)
        singles[r] = cls(env, seed=seed + r, device="cpu").learn(env, total_timesteps=rounds)
    return batched, singles
