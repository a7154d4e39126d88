"""Reward models: what an agent believes about ``E[r | x]``, batched over ``R`` replicas (public API).

A model keeps its data and defines a loss and its gradient; the agents sample, fit or bound its parameters.

* :mod:`agents.models.reward`: the seam (:class:`RewardModel`) and the linear and logistic models.
* :mod:`agents.models.mlp`: the paper's MLP and a user's own ``nn.Module``.
* :mod:`agents.models.blocks`: one-hot-block rows for the MLP's block-aware first layer.
* :mod:`agents.models.noise`: the reward noise estimated from the data.
* :mod:`agents.models.feelgood`: FG-TS's feel-good term as a term of the potential.
* :mod:`agents.models.settings`: which LMC-TS settings a kind of model takes, and the defaults they fall back on.
"""

from agents.models.blocks import BlockRows
from agents.models.mlp import MLP, MLPModel, ModuleModel, build_model, is_neural
from agents.models.noise import NoiseEstimate
from agents.models.reward import HistoryModel, LinearModel, LogisticModel, RewardModel

__all__ = ["RewardModel", "HistoryModel", "LinearModel", "LogisticModel", "MLP", "MLPModel", "ModuleModel",
           "BlockRows", "NoiseEstimate", "build_model", "is_neural"]
