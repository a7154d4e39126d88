"""The probability an agent gives each arm in the current round: logging propensities and target policies.

:meth:`agents.base.BanditAgent.action_probabilities` calls :func:`action_probabilities`. Where the rule
gives the probabilities in closed form, the agent's ``exact_probabilities(contexts)`` answers them (the base
class answers None):

* :class:`agents.UniformRandom`: ``1 / K``;
* :class:`agents.EpsGreedy`: ``epsilon_t / K + (1 - epsilon_t) 1[k greedy] / #greedy`` (the random arm is
  ``floor(u K)`` with ``u`` a multiple of ``2^-24``: uniform up to ``K 2^-24``);
* :class:`agents.LinUCB` and :class:`agents.nonstationary` 's LinUCBs: ``1 / #maximisers`` of the upper
  confidence bound (ties are broken uniformly, :func:`uniform_over_maximisers`), else 0.

Every other agent is estimated by Monte Carlo over ``n_samples`` fresh draws of its randomness in this
round (its random streams re-keyed, ``self.t`` unchanged): an agent that samples in ``_select`` (LinTS,
the GLM and neural Thompson agents) draws again; an agent whose sample comes from a chain run after each
observation (LMC-TS and the MCMC samplers, a ``_sample(t, theta)`` method) runs its chain for this round
again from its current sample with fresh noise, a draw from the chain's stationary law (the posterior it
targets) when the current sample is one. The standard error of an estimated probability ``p`` is
``sqrt(p (1 - p) / n_samples)`` (at most ``0.5 / sqrt(n_samples)``), returned beside it. The agent is left
as it was: its attributes are put back after each draw.
"""

from __future__ import annotations

import math

import torch

from bandit_gym import rng
from bandit_gym.rng import Stream


def uniform_over_maximisers(scores: torch.Tensor) -> torch.Tensor:
    """Uniform over each row's maximisers (an argmax with ties broken at random): ``(R, K) -> (R, K)`` float64."""
    best = scores == scores.amax(dim=1, keepdim=True)  # (R, K)
    return best.double() / best.sum(dim=1, keepdim=True)


def monte_carlo_probabilities(agent, contexts: torch.Tensor, n_samples: int) -> torch.Tensor:
    """The frequency of each arm over ``n_samples`` re-keyed draws of this round's choice, ``(R, K)`` float64."""
    R, K = contexts.shape[:2]
    counts = torch.zeros(R, K, dtype=torch.float64, device=contexts.device)
    kept = dict(agent.__dict__)
    resamples = hasattr(agent, "_sample") and hasattr(agent, "theta")
    try:
        for i in range(n_samples):
            words = rng.random_words(kept["keys"].cpu(), Stream.PROPENSITY, i, 1)[:, 0]  # (R,) a fresh key per draw
            agent.keys = words.to(kept["keys"].device)
            if resamples:
                agent.theta = agent._sample(agent.t, kept["theta"])
            actions = agent._select(contexts)  # (R,)
            counts[torch.arange(R, device=counts.device), actions.to(counts.device)] += 1.0
            agent.__dict__.clear()
            agent.__dict__.update(kept)
    finally:
        agent.__dict__.clear()
        agent.__dict__.update(kept)
    return counts / n_samples


def action_probabilities(agent, contexts: torch.Tensor, n_samples: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """``(probabilities, standard_errors)``, ``(R, K)`` float64 each; the errors are 0 where exact."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1 (Monte Carlo draws), got {n_samples!r}")
    exact = agent.exact_probabilities(contexts)
    if exact is not None:
        return exact, torch.zeros_like(exact)
    estimate = monte_carlo_probabilities(agent, contexts, n_samples)
    return estimate, (estimate * (1 - estimate) / n_samples).sqrt()


def worst_standard_error(n_samples: int) -> float:
    """The largest standard error of a Monte Carlo probability, ``0.5 / sqrt(n_samples)``."""
    return 0.5 / math.sqrt(n_samples)
