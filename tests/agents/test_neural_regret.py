"""Neural LMC-TS and NeuralTS learn the quadratic bandit on (nearly) every seed, whatever the rounding.

``QuadraticBandit-v0`` (d = 20, 50 new arms per round, r = 10 (x . theta*)^2 + N(0, 1)), every agent at its
defaults (a 20-20-20 leaky-ReLU MLP, K = 10 steps on mini-batches of 32 rows per round), 10 seeds as one batch.
A linear model can exploit one sign of x . theta* only: LinTS plays at 0.45-0.5 regret per round late in the
run on every seed, and so does a network that never tries the other sign ("stuck"). A seed has LEARNT when
its regret per round over the window below is under ``LEARNT`` = 0.3.

Why a count of seeds and not a mean, and why these margins. Whether one seed gets stuck is a chaotic function
of float rounding: the same code with the compiled kernels on or off (or another BLAS, or another CPU) plays
different arms after a few hundred rounds. So no test may pin one seed's outcome; what is reproducible is the
rate. Before the preconditioned chain (``agents/lmcts.py``) neural LMC-TS left 1-3 of seeds 0-9 stuck past
round 2,000 depending on the kernel switch, and the old test of a 4-seed mean passed or failed with it. Now
(measured, seeds 0-9, regret of rounds 2,001-3,000 per seed):

- LMC-TS, kernels on [96, 74, 58, 101, 78, 90, 51, 79, 72, 85], off [99, 81, 59, 93, 72, 88, 59, 118, 78, 74]
  (0.05-0.12 per round: the threshold is 2.5x the worst seed; a stuck seed is 1.5x above it);
- NeuralTS, on [143, 193, 169, 140, 132, 230, 175, 115, 144, 143], off [133, 173, 184, 142, 128, 238, 167,
  126, 138, 149] (worst seed 0.24 per round, 0.06 below the threshold);
- on seeds 10-39 (the slow test below, and ``benchmarks/results/quadratic_paper.md``) no seed of either agent
  was stuck at round 2,000 or 3,000, kernels on or off; so the per-seed rate is below ~5%, and the test's
  "at least 9 of 10" (the deliverable of issue 20) fails by chance with probability below ~9% at that bound
  and about 1.6% at a 2% rate; a stuck rate of the old chain's 20% fails it 62% of the time.

The default run costs about 75 s on a quiet 2-core CPU (one kernel setting: the ``kernels`` fixture is
overridden; CI runs the ``learning`` marker once more with ``BANDIT_GYM_KERNELS=0``).
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS
from agents.neural import NeuralTS

pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.learning]  # tests/conftest.py

HORIZON, WINDOW = 3000, (2000, 3000)  # regret of rounds 2,001-3,000
#: Regret per round under which a seed has learnt: between a learnt seed (at most 0.24 measured) and the
#: one-sign level of a linear model or a stuck network (0.45-0.5).
LEARNT = 0.3


@pytest.fixture(autouse=True)
def kernels():
    """One run with the environment's kernel setting, not one per setting (the regrets are cached across tests);
    CI reruns the ``learning`` marker with ``BANDIT_GYM_KERNELS=0``."""


@functools.cache
def window_regret(name: str, first_seed: int, n_seeds: int) -> np.ndarray:
    """Regret per round over ``WINDOW`` for seeds ``first_seed, ...``, ``(n_seeds,)``; every agent at its defaults."""
    env = gym.make_vec("QuadraticBandit-v0", num_envs=n_seeds, vectorization_mode="vector_entry_point",
                       device="cpu", horizon=HORIZON)
    if name == "LinTS":
        agent = LinTS(env, seed=first_seed, device="cpu")
    elif name == "LMCTS":
        agent = LMCTS(env, model="mlp", seed=first_seed, device="cpu")
    else:
        agent = NeuralTS(env, seed=first_seed, device="cpu")
    agent.learn(env)
    start, end = WINDOW
    return agent.history["regret"][start:end].mean(axis=0)


def test_a_linear_model_stays_at_the_one_sign_level():
    """The premise of ``LEARNT``: LinTS (which can only exploit one sign of x . theta*) stays above 0.4 regret per
    round on every seed (measured 0.45-0.5), so a seed under 0.3 has learnt the quadratic."""
    linear = window_regret("LinTS", 0, 10)
    assert (linear > 0.4).all(), linear


@pytest.mark.parametrize("name", ["LMCTS", "NeuralTS"])
def test_neural_agent_learns_on_at_least_9_of_10_seeds(name):
    """Seeds 0-9 at the defaults: at least 9 under ``LEARNT`` regret per round in rounds 2,001-3,000 (margins and
    the chance of a false alarm: the module docstring)."""
    regret = window_regret(name, 0, 10)
    assert (regret < LEARNT).sum() >= 9, (name, regret.round(3))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["LMCTS"])
def test_neural_agent_learns_on_at_least_18_of_20_further_seeds(name):
    """Seeds 10-29, the same verdict: at least 18 of 20 learnt (measured: all of them, kernels on and off). A
    per-seed stuck rate of 2% fails it with probability 0.7%; the old chain's ~20% fails it 79% of the time.
    About 150 s."""
    regret = window_regret(name, 10, 20)
    assert (regret < LEARNT).sum() >= 18, (name, regret.round(3))
