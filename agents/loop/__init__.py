"""The round loop every agent shares, and what it keeps between rounds (public API).

* :mod:`agents.loop.rounds`: the one round loop (:meth:`agents.base.BanditAgent.rounds`).
* :mod:`agents.loop.history`: the rows a model learns from, one per round and replica.
* :mod:`agents.loop.feedback`: the rounds played and not yet paid for (delayed or batched rewards).
* :mod:`agents.loop.callbacks`: env ids and Stable-Baselines3 callbacks in ``learn``.
* :mod:`agents.loop.propensity`: the helpers behind ``action_probabilities``.
* :mod:`agents.loop.grid`: hyperparameter grids times seeds as one batch of replicas.
"""

from agents.loop.grid import HyperparameterGrid
from agents.loop.history import History

__all__ = ["History", "HyperparameterGrid"]
