"""The envs' speed devices against their torch definitions, and the envs with kernels on and off."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS  # tests/integration is on pytest's pythonpath

from bandit_gym import _kernels, rng
from bandit_gym._base import best_arms
from bandit_gym.rng import Stream
from bandit_gym.synthetic import _counters_per_call, _unit_normal_counters


@pytest.mark.parametrize("shape", [(20,), (8, 50, 20), (3, 7, 5), (1,), (1, 4), (2, 16_401)])
def test_unit_normal_kernel_matches_torch(shape):
    # The kernel takes numpy's float64 log (torch: its own) and sums each row's squares in another order: they
    # differ in the last bits of float64, so after rounding to float32 a draw may differ by one float32 ulp.
    # The shapes cover passes of several replicas, of one, a replica longer than a pass, and odd sizes.
    keys = rng.seed_to_key(range(5))
    got = _kernels.unit_normal(keys, Stream.CONTEXT, 3, shape)
    want = rng.unit_normal(keys, Stream.CONTEXT, 3, shape)
    assert got.shape == want.shape == (5, *shape) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=2**-23, atol=2**-24)


@pytest.mark.parametrize(("replicas", "theta_rows"), [(4, 4), (4, 1), (1, 1)])
def test_linear_scores_kernel_matches_torch(replicas, theta_rows):
    # float64 sums rounded once against torch's float32 sums of d = 20 products of unit vectors'
    # entries: they differ by a few float32 ulps of the terms at most.
    contexts = rng.unit_normal(rng.seed_to_key(range(replicas)), Stream.CONTEXT, 0, (3, 50, 20))  # (R, B, K, d)
    theta = rng.unit_normal(rng.seed_to_key(range(theta_rows)), Stream.INSTANCE, 0, (20,))  # (R or 1, d)
    want = (contexts * theta[:, None, None, :]).sum(dim=3)
    torch.testing.assert_close(_kernels.linear_scores(contexts, theta), want, rtol=1e-6, atol=1e-6)


def test_best_arms_kernel_matches_torch_max_and_keeps_the_first_of_tied_arms():
    expected = torch.rand(5, 3, 50)  # (R, B, K)
    expected[0, 0, [3, 7]] = 2.0  # a tie for the best: the first arm must win, as torch's argmax
    expected[1, 2, :] = 0.5  # every arm tied
    best, optimal = _kernels.best_arms(expected)
    torch.testing.assert_close(best, expected.amax(dim=2), rtol=0, atol=0)  # a maximum is exact
    assert torch.equal(optimal, expected.argmax(dim=2)) and optimal[0, 0] == 3 and optimal[1, 2] == 0


@pytest.mark.parametrize("kernels", ["1", "0"], ids=["kernels-on", "kernels-off"])
def test_unit_normal_blocks_of_several_counters_are_their_blocks_concatenated(monkeypatch, kernels):
    # One call drawing counters 4..6 (what a single env does to pay the call's cost once per 3 counters) must give
    # exactly the three one-counter calls' numbers: a counter's draws are a pure function of (key, stream, counter).
    monkeypatch.setenv("BANDIT_GYM_KERNELS", kernels)
    keys = rng.seed_to_key(range(3))
    got = _unit_normal_counters(keys, Stream.CONTEXT, 4, (2, 7, 5), count=3)
    want = torch.cat([_unit_normal_counters(keys, Stream.CONTEXT, counter, (2, 7, 5)) for counter in (4, 5, 6)], dim=1)
    assert got.shape == (3, 6, 7, 5) and torch.equal(got, want)


def test_unit_normal_blocks_with_kernels_off_is_rng_unit_normal(monkeypatch):
    keys = rng.seed_to_key(range(3))
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    want = torch.cat([rng.unit_normal(keys, Stream.CONTEXT, counter, (4, 6)) for counter in (1, 2)], dim=1)
    assert torch.equal(_unit_normal_counters(keys, Stream.CONTEXT, 1, (4, 6), count=2), want)


def test_unit_normal_blocks_kernel_is_within_a_float32_ulp_of_the_torch_definition(monkeypatch):
    # The device decided in _unit_normal_counters' first line against its own torch lines (as for the kernel alone).
    keys = rng.seed_to_key(range(4))
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    fast = _unit_normal_counters(keys, Stream.CONTEXT, 2, (2, 50, 20), count=4)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    slow = _unit_normal_counters(keys, Stream.CONTEXT, 2, (2, 50, 20), count=4)
    assert fast.shape == slow.shape == (4, 8, 50, 20)
    torch.testing.assert_close(fast, slow, rtol=2**-23, atol=2**-24)


def test_best_arms_with_kernels_on_and_off_are_the_same_bits(monkeypatch):
    expected = torch.rand(4, 6, 30)  # (R, B, K)
    expected[0, 1, [2, 9]] = 5.0  # a tie: the first arm
    expected[3, 0, :] = 0.25  # every arm tied: arm 0
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    fast = best_arms(expected)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    slow = best_arms(expected)
    assert torch.equal(fast[0], slow[0]) and torch.equal(fast[1], slow[1])
    assert fast[1][0, 1] == 2 and fast[1][3, 0] == 0 and fast[1].dtype == torch.int64


def test_counters_per_call_is_one_with_kernels_off(monkeypatch):
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    assert _counters_per_call(2000) == _kernels.CALL_FEATURES // 2000 > 1
    assert _counters_per_call(10 * _kernels.CALL_FEATURES) == 1  # many replicas: one counter a call anyway
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert _counters_per_call(2000) == 1


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "LogisticBandit-v0", "QuadraticBandit-v0"])
def test_numpy_step_gives_the_torch_steps_numbers_bit_for_bit(monkeypatch, env_id):
    # The single env's numpy round (an int on CPU, kernels on) against the torch step of a twin simulator (an
    # action tensor: the torch lines, the same draws): rewards, regret and the round's arrays are the same bits,
    # across chunks of the arms (chunk_rounds) and of the reward draws (256 rounds).
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    numpy_sim, torch_sim = (gym.make(env_id, n_arms=5, dim=3, horizon=600).unwrapped.sim for _ in range(2))
    for sim in (numpy_sim, torch_sim):
        sim.reset(rng.seed_to_key(11))
    for t in range(600):
        arrays = numpy_sim._round_arrays()
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
        definition = numpy_sim._round_arrays()  # the torch lines: views of the round's tensors
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
        assert all(np.array_equal(a, b) for a, b in zip(arrays, definition, strict=True))
        rewards, regret = numpy_sim.step(t % 5)
        want_rewards, want_regret = torch_sim.step(torch.tensor([t % 5]))
        assert isinstance(rewards, np.ndarray) and isinstance(regret, np.ndarray)
        assert np.array_equal(rewards, want_rewards.numpy()) and np.array_equal(regret, want_regret.numpy())


def test_round_arrays_follow_expected_rewards_set_after_the_block_was_drawn(monkeypatch):
    # bandit_gym.feedback.Drift sets the round's expected rewards, scored values, best value and optimal arm: the
    # numpy views of the chunk must give way to them, as the torch definition (views of the round's tensors) does.
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    sim = gym.make("LinearBandit-v0", n_arms=5, dim=3).unwrapped.sim
    sim.reset(rng.seed_to_key(2))
    sim.expected = sim.scored = -sim.expected
    sim.best, sim.optimal_action = sim.expected.amax(dim=1), sim.expected.argmax(dim=1)
    arrays = sim._round_arrays()
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert all(np.array_equal(a, b) for a, b in zip(arrays, sim._round_arrays(), strict=True))
    assert np.array_equal(arrays[1], -sim._rounds[0][1].numpy()) and np.array_equal(arrays[4], arrays[1])


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_envs_give_the_same_runs_with_kernels_on_and_off(monkeypatch, env_id):
    def run() -> list:
        env = gym.make(env_id, n_arms=6, dim=4, horizon=30)
        obs, info = env.reset(seed=9)
        out = [(obs, info["optimal_action"], 0.0)]
        for t in range(30):
            obs, reward, _, _, info = env.step(t % 6)
            out.append((obs, info["optimal_action"], reward))
        return out

    on = run()
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    off = run()
    for (obs_on, best_on, reward_on), (obs_off, best_off, reward_off) in zip(on, off, strict=True):
        np.testing.assert_allclose(obs_on, obs_off, rtol=2**-23, atol=2**-24)
        assert best_on == best_off  # gaps between arms are far above float32 rounding at these sizes
        assert reward_on == pytest.approx(reward_off, rel=1e-6, abs=1e-6)  # float32 rounding of the scores


def test_random_words_kernel_gives_the_torch_definitions_integers(monkeypatch):
    # Integer arithmetic modulo 2**64: the compiled words must be exactly torch's (keys with the top bit set too).
    keys = torch.cat([rng.seed_to_key(range(4)), torch.tensor([-1, -(2**63)])])
    got = rng.random_words(keys, Stream.SAMPLE, 7, 33)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    want = rng.random_words(keys, Stream.SAMPLE, 7, 33)
    assert got.dtype == want.dtype == torch.int64 and torch.equal(got, want)


def test_block_draws_numpy_view_is_the_tensor_draws_bit_for_bit():
    # The single env's rounds read the reward draws as a cached numpy view of their chunk (a kernel); with the
    # kernels off they convert the round's tensor. Both must be the tensor draws (scaled in float32), exactly,
    # also when the rounds come back to an earlier chunk (t = 3 after 21).
    keys = rng.seed_to_key(range(3))
    for scale in (None, 0.7):
        draws = rng.ChunkDraws("normal", Stream.REWARD, (), chunk_rounds=8, scale=scale)
        reference = rng.ChunkDraws("normal", Stream.REWARD, (), chunk_rounds=8, scale=scale)
        for t in (0, 1, 7, 8, 21, 3):
            assert np.array_equal(_kernels.chunk_draws_numpy(draws, keys, t), reference(keys, t).numpy())


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "LogisticBandit-v0", "QuadraticBandit-v0"])
def test_several_counters_per_call_give_the_same_draws_bit_for_bit(monkeypatch, env_id):
    # With the kernels on a single env draws several counters of its context stream per call (counters_per_chunk,
    # chosen when the env is built); off, one. Run both envs with the kernels off (torch's draws and sums):
    # arms, expected rewards, best arms and rewards are the same bits, and so are the reward draws (numpy
    # views with the kernels on, the round's tensor off).
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    several = gym.make(env_id, n_arms=6, dim=4, horizon=300)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    one = gym.make(env_id, n_arms=6, dim=4, horizon=300)
    assert several.unwrapped.sim.counters_per_chunk > 1 and one.unwrapped.sim.counters_per_chunk == 1
    runs = []
    for env in (several, one):
        obs, info = env.reset(seed=4)
        out = [(obs, info["optimal_action"], 0.0)]
        for t in range(300):
            obs, reward, _, _, info = env.step(t % 6)
            out.append((obs, info["optimal_action"], reward))
        runs.append(out)
    for (obs_a, best_a, reward_a), (obs_b, best_b, reward_b) in zip(*runs, strict=True):
        assert np.array_equal(obs_a, obs_b) and best_a == best_b and reward_a == reward_b
    noise = [env.unwrapped.sim for env in (several, one)]
    zeros = np.zeros(1, np.float32)
    for t in (0, 5, 255, 256, 299):
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
        on = noise[0]._round_noise(zeros, t)
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
        assert isinstance(on, np.ndarray) and np.array_equal(on, noise[1]._round_noise(zeros, t))
