"""Posterior chains: how a Thompson-sampling agent draws ``theta_t`` from ``exp(-beta L_t)`` (public API).

* :mod:`agents.chains.target`: :class:`~agents.chains.target.ChainRound`, what a chain gets for round ``t``, and the
  :class:`~agents.chains.target.Chain` contract (``bind``, ``sample``, ``state_dict``).
* :mod:`agents.chains.langevin`: the Langevin step, a ``torch.optim.Optimizer`` that applies it, and ``Langevin``,
  Algorithm 1's inner loop (LMC-TS's chain).
* :mod:`agents.chains.metropolis`: ``MALA`` and ``HMC``; :mod:`agents.chains.underdamped`: ``Underdamped``;
  :mod:`agents.chains.variational`: VITS's ``DiagonalGaussian``.
* :mod:`agents.chains.schedules`: the one step-size schedule; :mod:`agents.chains.preconditioner`: the neural
  models' diagonal preconditioner; :mod:`agents.chains.scaled_features`: the linear and glm models' feature scales
  and the bound on ``lambda_max(S V S)``; :mod:`agents.chains.temperature`: the inverse temperature, fixed or from
  the reward noise (``"auto"``).
"""

from agents.chains.langevin import LangevinOptimizer, langevin_update

__all__ = ["LangevinOptimizer", "langevin_update"]
