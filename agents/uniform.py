"""Uniform random arm choice: the reference point for regret comparisons."""

from __future__ import annotations

import torch

from agents import _rng_streams
from agents.base import BanditAgent
from bandit_gym import _rng


class UniformRandom(BanditAgent):
    """Plays an arm drawn uniformly at random every round; learns nothing."""

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        u = _rng.uniform(self.keys, _rng_streams.EXPLORE, self.t, ()).to(self.device)  # (R,)
        return (u * self.n_arms).long().clamp_(max=self.n_arms - 1)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        pass
