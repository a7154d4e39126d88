"""The chain seam of the LMC-TS family: a chain passed to :class:`agents.lmcts.LMCTS` is the whole difference."""

from __future__ import annotations

import pytest
import torch
from replicas import feed, linear_rounds

from agents import HMCTS, LMCTS, MALATS, ULMCTS
from agents.chains.metropolis import HMC, MALA
from agents.chains.schedules import step_size
from agents.chains.underdamped import Underdamped

PAPER = {"step_schedule": "inverse_t", "intercept": False}


@pytest.mark.parametrize(("cls", "chain", "extra"), [(MALATS, lambda: MALA(), {}),
                                                     (HMCTS, lambda: HMC(3, 0.2), {"n_leapfrog": 3}),
                                                     (ULMCTS, lambda: Underdamped(1.0), {})])
def test_lmcts_with_a_sampler_chain_is_that_sampler_bit_for_bit(cls, chain, extra):
    """``LMCTS(chain=C)`` at the sampler's settings plays and samples exactly as the sampler class."""
    _, contexts, actions, _, rewards = linear_rounds(12, 3, 4, 3, seed=5, noise=0.3)
    built = [cls(n_arms=4, dim=3, num_replicas=3, seed=2, device="cpu", n_inner_steps=8, **extra),
             LMCTS(n_arms=4, dim=3, num_replicas=3, seed=2, device="cpu", n_inner_steps=8, chain=chain(), **PAPER)]
    for agent in built:
        feed(agent, contexts, actions, rewards)
    assert torch.equal(built[0].theta, built[1].theta)
    assert built[0].chain.state_dict().keys() == built[1].chain.state_dict().keys()


def test_lmcts_state_holds_the_chain_state_under_its_prefix(tmp_path):
    """The saved state is the model's, ``theta`` and ``chain.<key>``; a loaded agent continues the same chain."""
    _, contexts, actions, _, rewards = linear_rounds(10, 2, 4, 3, seed=1, noise=0.3)
    agent = ULMCTS(n_arms=4, dim=3, num_replicas=2, seed=0, device="cpu", n_inner_steps=5)
    feed(agent, contexts[:5], actions[:5], rewards[:5])
    assert "chain.velocity" in agent._state()
    agent.save(tmp_path / "u.pt")
    loaded = ULMCTS.load(tmp_path / "u.pt")
    assert torch.equal(loaded.chain.velocity, agent.chain.velocity)
    for a in (agent, loaded):
        feed(a, contexts[5:], actions[5:], rewards[5:])
    assert torch.equal(loaded.theta, agent.theta) and torch.equal(loaded.chain.velocity, agent.chain.velocity)


def test_step_size_schedules_follow_their_definitions():
    base, top = torch.tensor([0.3, 0.6]), torch.tensor([2.0, 4.0])
    torch.testing.assert_close(step_size("inverse_t", base, 3), base / 3)
    torch.testing.assert_close(step_size("constant", base, 3), base)
    torch.testing.assert_close(step_size("inverse_lambda_max", base, 3, top), torch.tensor([0.15, 0.15]))
