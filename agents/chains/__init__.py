"""Posterior chains: how a Thompson-sampling agent draws ``theta_t`` from ``exp(-beta L_t)`` (public API).

* :mod:`agents.chains.langevin`: the Langevin step of Algorithm 1 and a ``torch.optim.Optimizer`` that applies it.
"""

from agents.chains.langevin import LangevinOptimizer, langevin_update

__all__ = ["LangevinOptimizer", "langevin_update"]
