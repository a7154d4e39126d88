"""Uniform random arm choice: the reference point for regret comparisons."""

from __future__ import annotations

import torch

from agents.base import BanditAgent
from bandit_gym.rng import Stream


def uniform_arms(u: torch.Tensor, n_arms: int) -> torch.Tensor:
    """Arms ``floor(u K)``, uniform over ``0..K-1``, from uniforms ``u`` in ``[0, 1)`` (any shape, int64).

    The agents' uniforms are multiples of ``2**-24`` below 1, so ``u K`` is exact in float64 and
    ``floor(u K) <= K - 1``: never clipped. Every agent that plays a uniformly random arm draws it here.
    """
    return (u.double() * n_arms).long()


class UniformRandom(BanditAgent):
    """Plays an arm drawn uniformly at random every round; learns nothing.

    When to use it:
        A reference line: the regret of playing without learning, which every agent is measured against (docs/agents.md,
        docs/samplers.md).
    """

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return uniform_arms(self._draws("uniform", Stream.EXPLORE, ()).to(self.device), self.n_arms)  # (R,)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor:
        """``1 / K`` for every arm, ``(R, K)`` float64."""
        R, K = contexts.shape[:2]
        return torch.full((R, K), 1.0 / K, dtype=torch.float64, device=contexts.device)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        pass

    def _state(self) -> dict[str, torch.Tensor]:
        return {}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        pass
