"""The reward noise estimated from the data, for the neural agents whose exploration depends on it.

A posterior over a network's weights is ``exp(-L_t / (2 sigma^2))`` for the squared loss ``L_t`` and reward noise
of variance ``sigma^2``. A number fixed for ``sigma`` therefore fits one reward scale: tuned on the quadratic bandit
(``sigma = 1``), it explores for ever on 0/1 rewards, whose noise given the features is far smaller. The
estimate here makes the neural agents' exploration scale-free: neural LMC-TS's temperature
``beta_t = 1 / (2 sigma_t^2)`` (:class:`agents.chains.temperature.AdaptiveTemperature`) and the width of NeuralUCB,
NeuralTS and Neural-LinUCB (``sigma_t`` times the width at ``sigma = 1``; :mod:`agents.neural`).

``sigma_t^2`` is the squared error of the model that played each round on that round's reward, before learning
from it (a prequential, out-of-sample error), averaged with round ``s`` weighing ``s^2`` (so the errors of the first
rounds, before the network has learnt anything, fade), with one pseudo-observation of ``sigma_0^2 = 1``::

    sigma_t^2 = (1 + sum_{s<t} s^2 (r_s - f(x_s; theta_s))^2) / (1 + sum_{s<t} s^2)

Rescaling the rewards by ``c`` rescales ``sigma_t^2`` by ``c^2`` once the pseudo-observation has faded. Weights
``1`` and ``s`` were measured against ``s^2`` (``docs/agents.md``, "Temperature from the data").
"""

from __future__ import annotations

import torch


class NoiseEstimate:
    """``sigma_t^2`` per replica: the ``s^2``-weighted mean of the prequential squared errors (module docstring).

    Args:
        num_replicas: ``R``.
        device: Where the sums live.

    The sums are float32, as the rewards; both round alike, so their ratio stays close to the exact one: measured
    against float64 sums of uniform errors, ``4 x 10^-8`` relative at ``t = 10^4``, ``5 x 10^-6`` at ``10^5`` and
    ``2 x 10^-4`` at ``10^6`` rounds.
    """

    def __init__(self, num_replicas: int, device: torch.device | str) -> None:
        self.squared_error = torch.ones(num_replicas, device=device)  # (R,) 1 + sum_s s^2 e_s^2
        self.weight = torch.ones(num_replicas, device=device)  # (R,) 1 + sum_s s^2

    def update(self, t: int, predicted: torch.Tensor, rewards: torch.Tensor) -> None:
        """Round ``t``'s error: the played model's prediction ``(R,)`` against the reward ``(R,)``."""
        weight = float(t) ** 2
        self.squared_error = self.squared_error + weight * (rewards - predicted) ** 2
        self.weight = self.weight + weight

    def variance(self) -> torch.Tensor:
        """``sigma_t^2`` ``(R,)``."""
        return self.squared_error / self.weight

    def precision(self) -> torch.Tensor:
        """``1 / sigma_t^2`` ``(R,)``, rounded once."""
        return self.weight / self.squared_error

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The estimate's tensors (for ``save``), under the keys an agent's file holds them."""
        return {"squared_error": self.squared_error, "error_count": self.weight}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`state_dict` (``state`` may hold other keys too: an agent's whole state)."""
        device = self.weight.device
        self.squared_error = state["squared_error"].to(device)
        self.weight = state["error_count"].to(device)
