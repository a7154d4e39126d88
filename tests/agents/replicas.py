"""Shared helpers of the agents' tests: envs, recorded rounds, and feeding them to an agent."""

from __future__ import annotations

import gymnasium as gym
import torch

import bandit_gym  # noqa: F401  (registers the envs)


def make_vec(env_id: str, num_envs: int, sizes: dict, **kwargs) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", device="cpu",
                        **sizes, **kwargs)


def feed(agent, contexts, actions, rewards) -> None:
    """Play recorded rounds through ``update``: ``(T, R, K, d), (T, R), (T, R)``."""
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x, a, r)


def linear_rounds(n_rounds, num_replicas, n_arms, dim, seed=0, noise=0.0):
    """Random arms and actions, rewards ``x^T theta*`` (+ noise): theta*, contexts, actions, played, rewards."""
    gen = torch.Generator().manual_seed(seed)
    theta_star = torch.randn(num_replicas, dim, generator=gen)  # (R, d)
    contexts = torch.randn(n_rounds, num_replicas, n_arms, dim, generator=gen) / dim**0.5  # (T, R, K, d)
    actions = torch.randint(n_arms, (n_rounds, num_replicas), generator=gen)  # (T, R)
    played = contexts.gather(2, actions[..., None, None].expand(-1, -1, 1, dim))[:, :, 0]  # (T, R, d)
    rewards = (played * theta_star).sum(-1) + noise * torch.randn(n_rounds, num_replicas, generator=gen)  # (T, R)
    return theta_star, contexts, actions, played, rewards


def logistic_rounds(n_rounds, num_replicas, n_arms, dim, seed=0):
    """Random arms, Bernoulli(sigmoid(x^T theta*)) rewards: contexts, actions, played, rewards."""
    gen = torch.Generator().manual_seed(seed)
    theta_star = torch.randn(num_replicas, dim, generator=gen)  # (R, d)
    contexts = torch.randn(n_rounds, num_replicas, n_arms, dim, generator=gen) / 2  # (T, R, K, d)
    actions = torch.randint(n_arms, (n_rounds, num_replicas), generator=gen)  # (T, R)
    played = contexts.gather(2, actions[..., None, None].expand(-1, -1, 1, dim))[:, :, 0]  # (T, R, d)
    p = torch.sigmoid((played * theta_star).sum(-1))  # (T, R)
    rewards = (torch.rand(n_rounds, num_replicas, generator=gen) < p).float()
    return contexts, actions, played, rewards
