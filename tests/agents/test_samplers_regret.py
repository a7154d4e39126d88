"""Each posterior sampler of agents/samplers.py learns on LinearBanditFixed-v0: its regret is well below
UniformRandom's over 10 seeds.

Sizes: 20 arms in d = 5, 200 rounds, 10 seeds (one batch). Measured (seed 0): UniformRandom's cumulative regret
145 +- 7 (mean +- s.e. over the seeds); the samplers' 13 to 18 +- 2 to 4, LMC-TS's 36 +- 8. The test asks for
less than half of UniformRandom's mean: a margin of more than 15 standard errors of either mean, which no
rounding and no plausible change of draws can cross, while a sampler that does not learn (regret growing
linearly, as UniformRandom's) fails it.
"""

from __future__ import annotations

import pytest
from replicas import make_vec

from agents import FGLMCTS, HMCTS, MALATS, ULMCTS, VITS, EnsembleSampling, UniformRandom

pytestmark = pytest.mark.learning  # CI reruns these with BANDIT_GYM_KERNELS=0 (README, Tests)

SIZES = {"n_arms": 20, "dim": 5, "horizon": 200}
SEEDS = 10


def mean_regret(cls, **kwargs) -> float:
    env = make_vec("LinearBanditFixed-v0", SEEDS, SIZES)
    agent = cls(env, seed=0, device="cpu", **kwargs).learn(env)
    return float(agent.history["regret"].sum(axis=0).mean())


@pytest.fixture(scope="module")
def uniform_regret() -> float:
    return mean_regret(UniformRandom)


@pytest.mark.parametrize(("cls", "kwargs"), [
    (FGLMCTS, {"n_inner_steps": 30}), (MALATS, {"n_inner_steps": 30}), (HMCTS, {"n_inner_steps": 10, "n_leapfrog": 3}),
    (ULMCTS, {"n_inner_steps": 30}), (EnsembleSampling, {}), (VITS, {"n_inner_steps": 15}),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_sampler_regret_is_well_below_uniform_random(cls, kwargs, uniform_regret):
    assert uniform_regret > 100  # the reference learns nothing: linear regret
    regret = mean_regret(cls, **kwargs)
    assert regret < 0.5 * uniform_regret, (regret, uniform_regret)
