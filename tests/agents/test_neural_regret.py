"""Neural LMC-TS, NeuralTS and NeuralUCB learn the quadratic bandit on (nearly) every seed, whatever the rounding.

``QuadraticBandit-v0`` (d = 20, 50 new arms per round, r = 10 (x . theta*)^2 + N(0, 1)), every agent at its
defaults (a 20-20-20 leaky-ReLU MLP, K = 10 steps on mini-batches of 32 rows per round), 10 seeds as one batch.
A linear model can exploit one sign of x . theta* only: LinTS plays at 0.45-0.5 regret per round late in the
run on every seed, and so does a network that never tries the other sign ("stuck"). A seed has LEARNT when
its regret per round over the window below is under ``LEARNT`` = 0.37.

Why a count of seeds and not a mean, and why these margins. Whether one seed gets stuck is a chaotic function
of float rounding: the same code with the compiled kernels on or off (or another BLAS, or another CPU) plays
different arms after a few hundred rounds. So no test may pin one seed's outcome; what is reproducible is the
rate, and each test asks for a count that a plausible rate meets with a false-alarm chance of a few percent
at most. Before the preconditioned chain (``agents/lmcts.py``) neural LMC-TS left 1-3 of seeds 0-9 stuck past
round 2,000 depending on the kernel switch, and the old test of a 4-seed mean passed or failed with it.
Measured now (regret of rounds 2,001-3,000 per seed):

- LMC-TS, seeds 0-9, kernels on [96, 74, 58, 101, 78, 90, 51, 79, 72, 85], off [99, 81, 59, 93, 72, 88, 59, 118,
  78, 74]; seeds 10-29 off: all 20 at 54-99; seeds 10-39 on, T = 2,000: all 30 under 0.15 per round in rounds
  1,501-2,000. No stuck seed in 70 runs: rate below ~4% (95%). With the step bound (commit fbe673e), seeds 0-9:
  on [97, 85, 75, 113, 64, 82, 62, 82, 68, 85], off [99, 75, 76, 97, 85, 69, 67, 83, 90, 69]. With the temperature
  from the data (``inverse_temperature="auto"``, 2026-11-27), seeds 0-9: on [87, 92, 84, 90, 57, 83, 65, 84, 86, 72],
  off [91, 86, 96, 92, 67, 90, 71, 100, 90, 76]. With the preconditioner at the current temperature's ridge (commit
  3f5a294): on [97, 114, 96, 84, 61, 99, 73, 90, 86, 69], off [77, 116, 101, 98, 72, 95, 83, 89, 86, 78].
  The threshold is 3x the worst seed and 0.1
  under a stuck one. "At least 9 of 10" fails by chance with probability 0.4% at a 1% rate, 6% at 4%.
- NeuralTS (since 2026-11-27 its widths scale with the noise estimated from the data, ``noise_scale="auto"``, and
  nu = 9; ``agents/neural.py``, ``benchmarks/results/quadratic_paper.md`` section 7), seeds 0-9, on [165, 252, 211,
  218, 170, 240, 237, 225, 171, 190], off [179, 228, 204, 208, 167, 182, 243, 238, 179, 184]; seeds 10-49 on and off:
  164-354, but seed 16 at 386 with the kernels on (332 off). Stuck: 1 run of 100 (50 seeds, two kernel settings), a
  rate of 1-2% (one-sided 95% bound 9% on 50 seeds). Before (sigma fixed at 1, nu = 6): 1 of 50 both ways; nu = 3
  7 of 50, and with the estimate nu = 4 and 6 5 and 4 of 50. Its learnt seeds pay for exploration (0.17-0.35 per
  round), hence ``LEARNT`` = 0.37, between the worst of them and the stuck seeds of every setting tried (0.38-0.68).
  Its tests ask for 9 of 10 and 18 of 20, as LMC-TS's: at a 2% rate they fail by chance with probability 1.6% and
  0.7%, at 5% 9% and 8%, at the 9% bound 23% and 27%; at nu = 3's 14% they would fail 42% and 54% of the time.
  Seeds 0-9 themselves: 10 of 10 with either kernel setting, the worst at 0.25, so two of them would have to turn
  stuck for the default test to fail.
- NeuralUCB (since 2026-11-27 nu = 1 / sqrt(lambda), one posterior standard deviation; ``agents/neural.py``,
  ``benchmarks/results/quadratic_paper.md`` section 8): seeds 0-49 as one batch, 3 stuck (seeds 37, 45, 46 at
  0.43-0.58), a rate of 6% (one-sided 95% bound 15%); nu = 40 6 of 50, nu = 12-25 9-13 of seeds 10-49, and the
  default before, nu = 1, about two thirds. Rounds 2,001-3,000, seeds 0-9: on [0.18, 0.24, 0.14, 0.18, 0.15, 0.17,
  0.19, 0.17, 0.11, 0.16], off [0.18, 0.21, 0.14, 0.17, 0.15, 0.17, 0.19, 0.17, 0.12, 0.16]; seeds 10-29 on: all 20
  at 0.13-0.32, off: 19 of 20 (seed 15 at 0.60). A UCB network that is stuck escapes
  slowly (late regret falling 0.7 -> 0.55 over 3,000 rounds), so its tests ask for less: 8 of 10 (fails by chance
  with probability 1.9% at 6%, 7% at 10%, 18% at the 15% bound) and 16 of 20 (0.6%, 4%, 17%); at nu = 1 both
  fail with probability above 99%.
The 10-seed runs cost about 85 s on a quiet 2-core CPU, 128 s measured at load 4, before the step bound; LMC-TS's
part is about 2.6x that since (each mini-batch step also decomposes its Gram matrix; 447 s in a CI run at load
6-20), so its 10-seed verdict is ``slow``, and so is the shorter 4-seed verdict below (91 s of a 463 s default
suite on a quiet 2-core AMD EPYC, the suite's longest test by far; one kernel setting: the ``kernels`` fixture is
overridden; CI runs the ``learning`` marker once more with ``BANDIT_GYM_KERNELS=0``).
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS
from agents.neural import NeuralTS, NeuralUCB

pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.learning]  # tests/conftest.py

HORIZON, WINDOW = 3000, (2000, 3000)  # regret of rounds 2,001-3,000
#: Regret per round under which a seed has learnt: between a learnt seed (LMC-TS at most 0.12 measured, NeuralTS
#: 0.33) and a stuck network (0.41-0.64 measured) or the one-sign level of a linear model (0.45-0.5).
LEARNT = 0.37


@pytest.fixture(autouse=True)
def kernels():
    """One run with the environment's kernel setting, not one per setting (the regrets are cached across tests);
    CI reruns the ``learning`` marker with ``BANDIT_GYM_KERNELS=0``."""


@functools.cache
def window_regret(name: str, first_seed: int, n_seeds: int, horizon: int = HORIZON,
                  window: tuple[int, int] = WINDOW) -> np.ndarray:
    """Regret per round over ``window`` (rounds, from 0) for seeds ``first_seed, ...`` played for ``horizon``
    rounds, ``(n_seeds,)``; every agent at its defaults."""
    env = gym.make_vec("QuadraticBandit-v0", num_envs=n_seeds, vectorization_mode="vector_entry_point",
                       device="cpu", horizon=horizon)
    if name == "LMCTS":
        agent = LMCTS(env, model="mlp", seed=first_seed, device="cpu")
    else:
        agent = {"LinTS": LinTS, "NeuralTS": NeuralTS, "NeuralUCB": NeuralUCB}[name](env, seed=first_seed, device="cpu")
    agent.learn(env)
    start, end = window
    return agent.history["regret"][start:end].mean(axis=0)


def test_a_linear_model_stays_at_the_one_sign_level():
    """The premise of ``LEARNT``: LinTS (which can only exploit one sign of x . theta*) stays above 0.4 regret per
    round on every seed (measured 0.45-0.5), so a seed under ``LEARNT`` (0.37) has learnt the quadratic."""
    linear = window_regret("LinTS", 0, 10)
    assert (linear > 0.4).all(), linear


@pytest.mark.parametrize(("name", "at_least"), [
    pytest.param("LMCTS", 9, marks=pytest.mark.slow),  # the heaviest run of the suite
    # about a minute each on 2 cores: slow, so that the default suite stays under 8 minutes
    pytest.param("NeuralTS", 9, marks=pytest.mark.slow), pytest.param("NeuralUCB", 8, marks=pytest.mark.slow),
])
def test_neural_agent_learns_on_most_seeds(name, at_least):
    """Seeds 0-9 at the defaults: at least ``at_least`` of 10 under ``LEARNT`` regret per round in rounds
    2,001-3,000 (the rates measured and the chance of a false alarm: the module docstring)."""
    regret = window_regret(name, 0, 10)
    assert (regret < LEARNT).sum() >= at_least, (name, regret.round(3))


@pytest.mark.slow
def test_neural_lmcts_learns_on_three_of_four_seeds_in_2000_rounds():
    """The shorter verdict on neural LMC-TS, beside the 10-seed, 3,000-round run above: seeds 0-3
    for 2,000 rounds, at least 3 of 4 under ``LEARNT`` regret per round in rounds 1,501-2,000.

    Measured (rounds 1,501-2,000, seeds 0-3): kernels on [0.108, 0.143, 0.153, 0.155]; the
    worst seed about 0.2 under ``LEARNT``. A stuck network stays at 0.41-0.64 and a one-sign model at 0.45-0.5
    (module docstring), above ``LEARNT``. In rounds 1,001-1,500 the same seeds were still at 0.25-0.32 (kernels on),
    too close to ``LEARNT`` for a shorter run. With a stuck rate under 4% (module docstring), 2 of 4 seeds stuck
    by chance has probability under 1%; an agent that stopped learning (every seed stuck or at the one-sign level)
    fails at once.
    """
    regret = window_regret("LMCTS", 0, 4, horizon=2000, window=(1500, 2000))
    assert (regret < LEARNT).sum() >= 3, regret.round(3)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "at_least"), [("LMCTS", 18), ("NeuralTS", 18), ("NeuralUCB", 16)])
def test_neural_agent_learns_on_most_further_seeds(name, at_least):
    """Seeds 10-29, the same verdict: at least 18 of 20 (measured: LMC-TS all 20, kernels on and off; NeuralTS 19 on,
    20 off; a 1% stuck
    rate fails it with probability 0.1%, a 4% rate 4.4%; the old LMC-TS chain's ~20% 79% of the time, NeuralTS at
    nu = 3, 25%, 91%). About 150 s per agent."""
    regret = window_regret(name, 10, 20)
    assert (regret < LEARNT).sum() >= at_least, (name, regret.round(3))
