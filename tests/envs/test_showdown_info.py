"""What the Showdown's synthetic envs tell in ``info``: the arms' means as ``expected_rewards`` (every env's
contract), the reward row and the value regret is scored against as ``reward_row`` and ``optimal_reward``, and a
round's ``scored`` values (``bandit_gym/showdown.py``, ``bandit_gym/_base.py``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.feedback import Drift


def rollout(env: gym.Env, rounds: int, seed: int = 0) -> list[tuple]:
    """``(observation, info, action, reward, next info)`` of ``rounds`` steps of arms that change every round."""
    obs, info = env.reset(seed=seed)
    rows = []
    for t in range(rounds):
        action = (3 * t + 1) % env.action_space.n
        next_obs, reward, _, _, next_info = env.step(action)
        rows.append((obs, info, action, reward, next_info))
        obs, info = next_obs, next_info
    return rows


def check_scoring(info: dict, action: int, reward: float, next_info: dict) -> None:
    """A step pays its arm's entry of the reward row and scores it against ``optimal_reward``, in float32."""
    assert reward == info["reward_row"][action]
    assert next_info["regret"] == np.float32(info["optimal_reward"]) - np.float32(reward)


@pytest.mark.parametrize("env_id", ["LinearShowdown-v0", "SparseLinearShowdown-v0"])
def test_linear_showdown_info_expected_rewards_are_the_means_and_rewards_the_rows(env_id):
    env = gym.make(env_id)
    sim = env.unwrapped.sim
    d = sim.context_dim
    for obs, info, action, reward, next_info in rollout(env, 100):
        x = torch.from_numpy(obs[0, :d])  # (d,) the context, in arm 0's block
        means = (x @ sim.betas[0]).numpy()  # (K,) x . beta_j
        np.testing.assert_allclose(info["expected_rewards"], means, rtol=1e-6, atol=1e-6)
        assert info["optimal_action"] == int(np.argmax(info["expected_rewards"]))
        assert np.abs(info["reward_row"] - info["expected_rewards"]).max() > 0  # the row holds draws, not means
        assert info["optimal_reward"] == info["reward_row"][info["optimal_action"]]  # regret="sampled"
        check_scoring(info, action, reward, next_info)


def test_linear_showdown_expected_regret_scores_against_the_optimal_mean_in_info():
    for _, info, action, reward, next_info in rollout(gym.make("LinearShowdown-v0", regret="expected"), 50):
        assert info["optimal_reward"] == info["expected_rewards"][info["optimal_action"]]
        check_scoring(info, action, reward, next_info)


def test_wheel_info_expected_rewards_are_the_arms_means_given_the_context():
    delta = 0.5
    for obs, info, action, reward, next_info in rollout(gym.make("WheelBandit-v0", delta=delta), 200):
        x = obs[0, :2].astype(np.float64)  # arm 0's block: the context
        means = np.array([1.0, 1.0, 1.0, 1.0, np.float32(1.2)], np.float32)  # inside the disc
        if np.linalg.norm(x) >= delta:
            means[info["optimal_action"]] = 50.0  # the quadrant's arm
        assert np.array_equal(info["expected_rewards"], means)
        check_scoring(info, action, reward, next_info)


def make(env_id: str, num_envs: int | None, **kwargs) -> gym.Env | gym.vector.VectorEnv:
    if num_envs is None:
        return gym.make(env_id, **kwargs)
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), [("LinearShowdown-v0", {}), ("WheelBandit-v0", {"base_std": 0.5}),
                                                ("LinearBandit-v0", {})])
@pytest.mark.parametrize("num_envs", [None, 3])
def test_showdown_next_rounds_scored_and_regret_of_agree_with_step_bit_for_bit(env_id, kwargs, num_envs):
    # 70 rounds cross the Showdown's chunks of 32; the ordinary env scores its expected rewards (the same memory).
    chunked, stepped = (make(env_id, num_envs, horizon=80, **kwargs) for _ in range(2))
    chunked.reset(seed=3)
    _, info = stepped.reset(seed=3)
    R, K = num_envs or 1, chunked.unwrapped.n_arms
    chunk = chunked.unwrapped.next_rounds(70)
    arms = (torch.arange(70)[:, None] * 3 + torch.arange(R)[None] * 5) % K  # (n, R)
    regret, rewards = chunk.regret_of(arms), chunk.rewards_of(arms)  # (n, R)
    showdown = "reward_row" in info
    sim = stepped.unwrapped.sim
    assert showdown or (chunk.scored.data_ptr() == chunk.expected.data_ptr() and sim.scored is sim.expected)
    for i in range(70):
        assert np.array_equal(np.asarray(info["expected_rewards"]).reshape(R, K), chunk.expected[i].numpy())
        row = info["reward_row"] if showdown else info["expected_rewards"]
        assert np.array_equal(np.asarray(row).reshape(R, K), chunk.scored[i].numpy())
        if showdown:
            assert np.array_equal(np.asarray(info["optimal_reward"], np.float32).reshape(R), chunk.best[i].numpy())
        _, reward, _, _, info = stepped.step(arms[i].numpy() if num_envs else int(arms[i, 0]))
        assert np.array_equal(np.asarray(reward, np.float32).reshape(R), rewards[i].numpy())
        assert np.array_equal(np.asarray(info["regret"], np.float32).reshape(R), regret[i].numpy())


def test_showdown_drift_permutes_the_means_and_the_rows_and_keeps_the_optimal_reward():
    env_id, every = "LinearShowdown-v0", 10
    drifting = Drift(gym.make(env_id), kind="abrupt", every=every)
    rows, plain = rollout(drifting, 40), rollout(gym.make(env_id), 40)
    moved = 0
    for t, ((_, info, action, reward, next_info), (_, twin, *_)) in enumerate(zip(rows, plain, strict=True)):
        perm = drifting.permutation_at(t)[0].numpy()  # arm perm[c] pays what arm c of the plain env pays
        assert np.array_equal(info["expected_rewards"][perm], twin["expected_rewards"])
        assert np.array_equal(info["reward_row"][perm], twin["reward_row"])
        assert info["optimal_action"] == perm[twin["optimal_action"]]
        assert info["optimal_reward"] == twin["optimal_reward"]
        check_scoring(info, action, reward, next_info)
        moved += t >= every and not np.array_equal(perm, np.arange(len(perm)))
    assert moved > 0
