"""Changing arm sets computed a block ahead on a background thread: the same numbers, safely."""

from __future__ import annotations

import pickle
from concurrent.futures import Future

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym import _kernels, _rng, synthetic

CHANGING = ["LinearBandit-v0", "QuadraticBandit-v0"]
SIZES = {"n_arms": 6, "dim": 5, "horizon": 60}  # blocks of 8192 // 30 = 273 rounds: use a small horizon
BLOCKED = {"n_arms": 50, "dim": 20, "horizon": 40}  # blocks of 8 rounds: 5 blocks and the round after


def _play(env_id: str, prefetch: bool, sizes: dict, rounds: int, reset_at: int | None = None,
          group_blocks: int | None = None) -> list:
    env = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **sizes)
    env.unwrapped.sim.prefetch = prefetch
    if group_blocks is not None:  # by default all 6 blocks of the horizon make one group
        env.unwrapped.sim._group_blocks = group_blocks
    out = [env.reset(seed=5)]
    actions = torch.tensor([0, 1, 2])
    for t in range(rounds):
        out.append(env.step(actions))
        if t == reset_at:
            out.append(env.reset(seed=9))  # while the next block may be under way
    return out


@pytest.mark.parametrize("env_id", CHANGING)
@pytest.mark.parametrize("reset_at", [None, 11])
@pytest.mark.parametrize("group_blocks", [1, 2, 4])
def test_prefetched_groups_equal_blocks_computed_in_turn(env_id, reset_at, group_blocks):
    # Blocks of 8 rounds, in groups of 1, 2 or 4 computed ahead, against all 6 in one group
    # computed in turn; 45 steps cross the horizon (an autoreset), and a reset may come mid-group.
    with_thread = _play(env_id, True, BLOCKED, 45, reset_at, group_blocks)
    in_turn = _play(env_id, False, BLOCKED, 45, reset_at)
    for a, b in zip(with_thread, in_turn, strict=True):
        for x, y in zip(a[:-1], b[:-1], strict=True):
            assert torch.equal(x, y)
        assert a[-1].keys() == b[-1].keys()
        for key in a[-1]:
            assert torch.equal(a[-1][key], b[-1][key])


def test_fused_block_kernel_equals_unit_normal_then_linear_scores():
    keys = _rng.seed_to_key(torch.arange(4) + 3)
    theta = _rng.unit_normal(keys, _rng.STREAM_INSTANCE, 0, (7,))  # (R, d)
    starts = np.stack([_rng.start_words(keys, _rng.STREAM_CONTEXT, b) for b in (2, 3, 4)])  # three blocks
    for th in (theta, theta[:1]):  # one theta per replica, or one for all (instance_seed)
        arms, scores = np.empty((4, 3, 30 * 7), np.float32), np.empty((4, 3, 30), np.float32)
        _kernels.unit_arms_and_scores(starts, 7, th.numpy(), arms, scores)
        for g, b in enumerate((2, 3, 4)):
            want = _rng.unit_normal(keys, _rng.STREAM_CONTEXT, b, (30, 7))
            assert torch.equal(torch.from_numpy(arms[:, g].reshape(4, 30, 7)), want)
            np.testing.assert_array_equal(scores[:, g], _kernels.linear_scores(want.numpy(), th.numpy()))


def test_linear_scores_sum_in_float64():
    features = torch.randn(2, 9, 20, generator=torch.Generator().manual_seed(0))
    theta = torch.randn(2, 20, generator=torch.Generator().manual_seed(1))
    want = (features.double() * theta.double()[:, None, :]).sum(-1).float()
    assert torch.equal(torch.from_numpy(_kernels.linear_scores(features.numpy(), theta.numpy())), want)


def test_an_env_with_a_block_under_way_pickles_and_continues_alike():
    env = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", **BLOCKED)
    env.unwrapped.sim._group_blocks = 1
    env.reset(seed=1)
    actions = torch.tensor([3, 4])
    for _ in range(9):  # into the second block, the third under way
        env.step(actions)
    twin = pickle.loads(pickle.dumps(env))
    for _ in range(20):
        a, b = env.step(actions), twin.step(actions)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_the_background_thread_is_made_again_in_a_forked_child(monkeypatch):
    first = synthetic._background()
    assert synthetic._background() is first
    monkeypatch.setattr(synthetic.os, "getpid", lambda: -1)  # what a forked child sees: another pid
    assert synthetic._background() is not first


def test_a_forked_child_computes_the_pending_group_itself(monkeypatch):
    # After fork the child holds the parent's pending group, whose thread it does not have:
    # waiting for it would hang. The child (another pid) must compute the group in turn.
    twins = []
    for _ in range(2):
        env = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", **BLOCKED)
        env.unwrapped.sim._group_blocks = 1
        env.reset(seed=6)
        twins.append(env)
    actions = torch.tensor([1, 2])
    for _ in range(5):  # the second block is under way in both
        for env in twins:
            env.step(actions)
    stuck = twins[0].unwrapped.sim._pending
    never = Future()  # stands for a computation nobody will finish; waiting for it fails the test
    never.set_exception(AssertionError("waited for a group computed in another process"))
    twins[0].unwrapped.sim._pending = (stuck[0], stuck[1], never)
    monkeypatch.setattr(synthetic.os, "getpid", lambda: -1)
    for _ in range(20):
        a, b = twins[0].step(actions), twins[1].step(actions)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    twins[0].reset(seed=7)  # dropping a foreign pending group must not wait for it either


def test_single_envs_keep_one_block_and_do_not_prefetch():
    # Many single envs side by side (SyncVectorEnv) must stay small: one block of rounds each.
    env = gym.make("LinearBandit-v0", **BLOCKED)
    env.reset(seed=0)
    sim = env.unwrapped.sim
    assert sim._group_blocks == 1 and not sim.prefetch and sim._pending is None
    assert len(sim._group) == sim._context_block == 8


def test_fixed_arms_do_not_prefetch():
    fixed = gym.make_vec("LinearBanditFixed-v0", num_envs=2, vectorization_mode="vector_entry_point", **SIZES)
    fixed.reset(seed=0)
    fixed.step(torch.tensor([0, 1]))
    assert fixed.unwrapped.sim._pending is None
    changing = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", **BLOCKED)
    changing.reset(seed=0)
    assert changing.unwrapped.sim._pending is None  # the horizon's 6 blocks fit the first group
    long = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", n_arms=50, dim=20,
                        horizon=4000)
    long.reset(seed=0)
    assert long.unwrapped.sim._pending is not None and long.unwrapped.sim._pending[0] == 1
