"""Uniform random arm choice: the reference point for regret comparisons."""

from __future__ import annotations

import torch

from agents.base import BanditAgent
from bandit_gym.rng import Stream


class UniformRandom(BanditAgent):
    """Plays an arm drawn uniformly at random every round; learns nothing."""

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        u = self._draws("uniform", Stream.EXPLORE, ()).to(self.device).double()  # (R,), multiples of 2**-24 below 1
        return (u * self.n_arms).long()  # exact in float64, so floor(u K) <= K - 1: never clipped

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        pass

    def _state(self) -> dict[str, torch.Tensor]:
        return {}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        pass
