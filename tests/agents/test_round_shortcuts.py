"""The per-round shortcuts of agents/base.py give the answers of the plain definitions they skip."""

from __future__ import annotations

import math

import pytest
import torch

from agents import LinUCB, _kernels
from agents._kernels import unique_argmax
from agents.base import DivergenceError, random_argmax
from bandit_gym.rng import Stream


def _agent(num_replicas: int) -> LinUCB:
    return LinUCB(n_arms=4, dim=3, num_replicas=num_replicas, seed=7)


@pytest.mark.parametrize("rows", [
    [[0.1, 0.7, 0.3, 0.2]],  # one maximiser
    [[0.5, 0.5, 0.1, 0.5]],  # a three-way tie: the draws decide
    [[0.0, 0.0, 0.0, 0.0]],  # all tied (round 1 of LinUCB)
    [[math.nan, 0.2, 0.9, 0.1]],  # no maximiser: arm 0
    [[-math.inf, -math.inf, -1.0, -math.inf]],
    [[0.1, 0.7, 0.3, 0.2], [math.nan, 0.2, 0.9, 0.1], [0.3, 0.3, 0.3, 0.0]],  # a NaN row beside a tied row
    [[0.1, 0.7, 0.3, 0.2], [0.4, 0.1, 0.9, 0.1], [0.3, 0.0, 0.2, 0.9]],
])
def test_argmax_is_random_argmax_with_the_rounds_draws(rows):
    """``_argmax`` skips the tie draws when no row has a tie; its answer must be ``random_argmax`` with them,
    row for row, in every round (ties, NaN rows and infinities included)."""
    values = torch.tensor(rows, dtype=torch.float32)
    agent = _agent(len(rows))
    for t in range(1, 30):
        agent.t = t
        draws = agent._draws("uniform", Stream.TIES, (agent.n_arms,))
        assert torch.equal(agent._argmax(values), random_argmax(values, draws))


def test_argmax_breaks_a_tie_by_the_draws_not_the_first_index():
    """A two-way tie between arms 1 and 3 must go to each in some round (the draws differ by round), which the
    first-maximiser shortcut alone would never do."""
    agent = _agent(1)
    values = torch.tensor([[0.0, 1.0, 0.0, 1.0]])
    chosen = set()
    for t in range(1, 40):
        agent.t = t
        chosen.add(int(agent._argmax(values)))
    assert chosen == {1, 3}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_finite_catches_every_non_finite_entry(dtype, bad):
    agent = _agent(2)
    tensor = torch.ones(2, 3, dtype=dtype)
    tensor[1, 2] = bad
    with pytest.raises(DivergenceError, match="became NaN or Inf in round 1"):
        agent._check_finite(tensor, "theta")


def test_check_finite_passes_huge_finite_float32():
    """The float32 check sums in float64: entries near float32's largest value must not overflow it."""
    agent = _agent(2)
    agent._check_finite(torch.full((2, 3), torch.finfo(torch.float32).max), "theta")
    agent._check_finite(torch.full((2, 3), -torch.finfo(torch.float32).max), "theta")


@pytest.mark.parametrize("rows", [
    [[0.1, 0.7, 0.3, 0.2], [0.4, 0.1, 0.9, 0.1]],
    [[0.1, 0.7, 0.3, 0.2], [0.3, 0.3, 0.3, 0.0]],  # a tie in one row: the device answers None
    [[math.nan, 0.2, 0.9, 0.1]],
    [[0.2, math.nan, 0.9, 0.9]],  # a NaN and a tie in one row: the NaN row answers 0, no tie counted
    [[-math.inf, -math.inf, -math.inf, -math.inf]],  # all tied
    [[-math.inf, 0.5, -math.inf, 0.1], [math.inf, 0.0, 1.0, -1.0]],
    [[0.0, -0.0, -1.0, -2.0]],  # 0 == -0: a tie
    [[-3.0, -2.0, -1.0, -0.5]],  # the last arm
])
def test_unique_argmax_is_random_argmax_where_it_answers_and_none_at_a_tie(rows):
    """The speed device of _argmax: where no row has a tie it gives random_argmax's answer for any draws; it
    answers None (the round then draws its ties) exactly where some row has a tie."""
    values = torch.tensor(rows)
    tied = bool(((values == values.amax(dim=1, keepdim=True)).sum(dim=1) > 1).any())
    answer = unique_argmax(values)
    assert (answer is None) == tied
    if answer is not None:
        for seed in range(5):
            draws = torch.rand(values.shape, generator=torch.Generator().manual_seed(seed))
            assert torch.equal(answer, random_argmax(values, draws))


def test_unique_argmax_matches_the_tie_count_row_by_row_on_many_rows():
    """The loop against the definition written out in torch (each row's maximisers ``values == amax``, counted):
    None exactly where a row has more than one, else that maximiser (0 for a row with a NaN), on 200 batches of
    coarse values (ties frequent) with NaNs and infinities sprinkled in."""
    gen = torch.Generator().manual_seed(11)
    answered = 0
    for _ in range(200):
        values = torch.randint(0, 6, (3, 5), generator=gen).float()
        special = torch.rand(3, 5, generator=gen)
        values[special < 0.05] = math.nan
        values[(special > 0.95)] = math.inf
        is_best = values == values.amax(dim=1, keepdim=True)
        expected = None if int(is_best.sum(dim=1).amax()) > 1 else is_best.byte().argmax(dim=1)
        answer = unique_argmax(values)
        if expected is None:
            assert answer is None, values
        else:
            answered += 1
            assert answer is not None and torch.equal(answer, expected), values
    assert 20 < answered < 180  # both outcomes exercised


def test_argmax_with_kernels_off_is_the_plain_definition(monkeypatch):
    """BANDIT_GYM_KERNELS=0 switches the tie shortcut off: _argmax then draws the round's ties every round."""
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    answered = []
    monkeypatch.setattr(_kernels, "unique_argmax", lambda values: answered.append(values))
    agent = _agent(1)
    values = torch.tensor([[0.1, 0.7, 0.3, 0.2]])
    assert int(agent._argmax(values)) == 1 and answered == []
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    assert int(agent._argmax(values)) == 1 and len(answered) == 1
