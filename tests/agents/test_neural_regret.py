"""Neural LMC-TS and NeuralTS learn the quadratic bandit, which a linear model cannot represent.

``QuadraticBandit-v0`` (d = 20, 50 new arms per round, r = 10 (x . theta*)^2 + N(0, 1)), T = 3,000, seeds 0-3
as one batch, every agent with its defaults and the budget of ``benchmarks/quadratic_paper.py`` (10 steps
on mini-batches of 32 rows per round). About 45 s on the shared 2-core CPU under load (under the ~60 s
that would make it ``slow``).

Why not the issue's "T = 1,500, cumulative regret": measured on these seeds, it does not hold, and
cannot with this data. In the first ~500 rounds a network has too few rows to fit 10 (x . theta*)^2 under
noise of variance 1 (offline, Adam on 1,000 random rows reaches held-out R^2 ~0.55) and Thompson sampling
explores nearly at random, while LinTS locks on to one sign of x . theta* within ~100 rounds (its arms
with large x . theta* are half of the best arms) and then plays at a flat ~0.49 regret per round. So
LinTS's cumulative regret is still the lowest at T = 1,500 (886 against ~1,200) and about even at
T = 3,000; and at round 1,000-1,500 two of the four seeds had not learnt yet (LMC-TS 74, 276, 292, 127
against LinTS 225-262 over those 500 rounds). What this horizon can test is that the networks learn: the
regret of rounds 2,001-3,000. The cumulative regrets at T = 10,000 (where both are far below LinTS) are in
benchmarks/results/quadratic_paper.md.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS
from agents.neural import NeuralTS

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

HORIZON, SEEDS, LATE = 3000, 4, 2000
#: The benchmark's settings besides the agents' defaults (the grid ran with leaky_relu).
SETTINGS = {"batch_size": 32, "model_kwargs": {"activation": "leaky_relu"}}


@pytest.fixture(autouse=True)
def kernels():
    """One run with the default (kernels on), not one per kernel setting: the regrets are cached across tests."""


@functools.cache
def late_regret(name: str) -> np.ndarray:
    """Regret of rounds LATE+1..HORIZON per seed, ``(SEEDS,)``."""
    env = gym.make_vec("QuadraticBandit-v0", num_envs=SEEDS, vectorization_mode="vector_entry_point",
                       device="cpu", horizon=HORIZON)
    if name == "LinTS":
        agent = LinTS(env, seed=0, device="cpu")
    elif name == "LMCTS":
        agent = LMCTS(env, model="mlp", n_inner_steps=10, seed=0, device="cpu", **SETTINGS)
    else:
        agent = NeuralTS(env, n_grad_steps=10, seed=0, device="cpu", **SETTINGS)
    agent.learn(env)
    return agent.history["regret"][LATE:].sum(axis=0).astype(np.float64)


@pytest.mark.parametrize("name", ["LMCTS", "NeuralTS"])
def test_neural_agent_beats_lints_on_the_quadratic_bandit(name):
    """Tolerance from the seed spread: the neural agent's mean late regret must lie below LinTS's by more than
    3 standard errors of the difference of the two means (s.e. from the 4 seeds of each; fixed seeds, so the
    test is deterministic up to floating point). Measured over rounds 2,001-3,000: LinTS 455 +- 7, LMC-TS
    128 +- 20, NeuralTS 166 +- 13, gaps of 15 and 20 s.e. A network that did not learn, or did not explore
    (the greedy-like chain of beta = 1000, lambda = 1e-3: ~0.45 per round, 450 here) fails."""
    neural, linear = late_regret(name), late_regret("LinTS")
    se = np.sqrt(neural.var(ddof=1) / SEEDS + linear.var(ddof=1) / SEEDS)
    assert neural.mean() < linear.mean() - 3 * se, (name, neural, linear)
