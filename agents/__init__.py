"""bandit-gym agents: LMC-TS and the paper's baselines, batched over replicas.

Every agent follows the Stable-Baselines3 verbs::

    agent = LMCTS(env, seed=0)
    agent.learn(env)
    action, _ = agent.predict(obs)
"""

from agents.base import BanditAgent, DivergenceError
from agents.bayes_linear import LinFullPost, NeuralLinear
from agents.chains.langevin import LangevinOptimizer
from agents.ensemble import EnsembleSampling
from agents.glm import GLMTSL, SGDTS, UCBGLM
from agents.linear import EpsGreedy, LinTS, LinUCB
from agents.lmcts import LMCTS
from agents.loop.grid import HyperparameterGrid
from agents.loop.history import History
from agents.models.mlp import MLP
from agents.neural import NeuralEpsGreedy, NeuralLinUCB, NeuralTS, NeuralUCB
from agents.nonstationary import DiscountedLinUCB, SlidingWindowLinUCB
from agents.samplers import FGLMCTS, HMCTS, MALATS, ULMCTS, VITS
from agents.uniform import UniformRandom

__all__ = [
    "BanditAgent", "DivergenceError", "History", "HyperparameterGrid", "LangevinOptimizer", "LMCTS",
    "UniformRandom", "LinUCB", "LinTS", "EpsGreedy", "UCBGLM", "GLMTSL", "SGDTS",
    "MLP", "NeuralUCB", "NeuralTS", "NeuralLinUCB", "NeuralEpsGreedy",
    "FGLMCTS", "MALATS", "HMCTS", "ULMCTS", "EnsembleSampling", "VITS", "DiscountedLinUCB", "SlidingWindowLinUCB",
    "LinFullPost", "NeuralLinear",
]
