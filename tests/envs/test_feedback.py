"""The feedback wrappers of ``bandit_gym.feedback``: delayed, batched and drifting worlds.

Exact tests throughout (no statistics): the identity settings against the plain env bit for bit,
the reveal schedules round by round, and, with noise-free rewards, the drifting world's rewards,
expected rewards and regret against one another and against ``theta*`` recovered by least squares.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401
from bandit_gym.feedback import BatchedFeedback, BatchedFeedbackVector, DelayedFeedback, DelayedFeedbackVector, Drift

SMALL = {"n_arms": 6, "dim": 4, "horizon": 40}
X = np.random.default_rng(0).normal(size=(60, 3))
Y = np.arange(60) % 4


def make(env_id: str = "LinearBandit-v0", num_envs: int | None = None, **kwargs):
    kwargs = {**(SMALL if "Classification" not in env_id else {"X": X, "y": Y, "horizon": 30}), **kwargs}
    if num_envs is None:
        return gym.make(env_id, **kwargs)
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def rollout(env, rounds: int, actions: np.ndarray, seed: int = 3) -> list:
    """Every value the env returns over ``rounds`` steps (two episodes when ``rounds`` passes the horizon)."""
    out = [env.reset(seed=seed)]
    for t in range(rounds):
        step = env.step(actions[t])
        out.append(step)
        if np.any(step[3]) and t + 1 < rounds:
            out.append(env.reset())
    return out


def assert_same(plain: list, wrapped: list) -> None:
    assert len(plain) == len(wrapped)
    for a, b in zip(plain, wrapped, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, dict):
                for key in x:  # the wrapper may add keys, never change the env's
                    np.testing.assert_array_equal(np.asarray(x[key]), np.asarray(y[key]), strict=True)
            else:
                assert type(x) is type(y)
                np.testing.assert_array_equal(x, y, strict=True)


IDENTITY = [(DelayedFeedback, {"delay": 0}), (DelayedFeedback, {"delay": [0, 0]}), (BatchedFeedback, {"batch_size": 1}),
            (Drift, {"kind": "abrupt", "every": None}), (Drift, {"kind": "rotation", "rate": 0.0})]


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "LogisticBandit-v0", "ClassificationBandit-v0"])
@pytest.mark.parametrize(("wrapper", "kwargs"), IDENTITY)
@pytest.mark.parametrize("num_envs", [None, 3])
def test_feedback_identity_settings_equal_plain_env_bit_for_bit(env_id, wrapper, kwargs, num_envs):
    if wrapper is Drift and kwargs["kind"] == "rotation" and "Classification" in env_id:
        pytest.skip("rotation needs a theta*")
    horizon = make(env_id).unwrapped.horizon
    shape = (2 * horizon + 5,) if num_envs is None else (2 * horizon + 5, num_envs)
    actions = np.random.default_rng(1).integers(0, make(env_id).action_space.n, shape)
    assert_same(rollout(make(env_id, num_envs), len(actions), actions),
                rollout(wrapper(make(env_id, num_envs), **kwargs), len(actions), actions))


def test_vector_envs_get_the_vector_wrappers():
    assert isinstance(DelayedFeedback(make(num_envs=2), delay=1), DelayedFeedbackVector)
    assert isinstance(BatchedFeedback(make(num_envs=2), batch_size=2), BatchedFeedbackVector)
    assert isinstance(DelayedFeedback(make(), delay=1), DelayedFeedback)


def reveal_log(env, horizon: int, seed: int = 0) -> tuple[list[list[int]], dict[int, float], dict[int, float]]:
    """Per step the rounds revealed; the rewards revealed and the step's own rewards of the plain env."""
    plain = {}
    env.reset(seed=seed)
    twin = make(**{"horizon": horizon})
    twin.reset(seed=seed)
    revealed, paid = [], {}
    for t in range(horizon):
        action = t % 6
        _, reward, _, _, info = env.step(action)
        plain[t] = twin.step(action)[1]
        revealed.append(info["revealed_rounds"].tolist())
        paid.update(zip(info["revealed_rounds"].tolist(), info["revealed_rewards"].tolist(), strict=True))
        if info["revealed_rounds"].tolist() == [t]:  # the step pays its own round alone: its reward
            assert reward == plain[t]
        else:  # any other reward is not a number (a hand-written loop cannot learn it as if it were)
            assert math.isnan(reward)
        np.testing.assert_array_equal(info["revealed_actions"], info["revealed_rounds"] % 6)
    return revealed, paid, plain


def test_delayed_feedback_fixed_delay_reveals_each_round_delay_rounds_later():
    revealed, paid, plain = reveal_log(DelayedFeedback(make(horizon=20), delay=3), 20)
    assert revealed[:3] == [[], [], []]
    assert revealed[3:19] == [[t - 3] for t in range(3, 19)]
    assert revealed[19] == [16, 17, 18, 19]  # the episode's last round pays everything pending
    assert paid == plain  # every round paid once, with the env's reward


def test_delayed_feedback_random_delays_lie_in_range_and_are_seeded():
    env = DelayedFeedback(make(horizon=200), delay=(2, 9), delay_seed=5)
    revealed, paid, plain = reveal_log(env, 200)
    assert paid == plain
    delays = [t - s for t, rounds in enumerate(revealed[:-1]) for s in rounds]
    assert min(delays) == 2 and max(delays) == 9  # 190 draws: each end is missed with probability (7/8)^190
    assert all(rounds == sorted(rounds) for rounds in revealed)
    again, _, _ = reveal_log(DelayedFeedback(make(horizon=200), delay=(2, 9), delay_seed=5), 200)
    other, _, _ = reveal_log(DelayedFeedback(make(horizon=200), delay=(2, 9), delay_seed=6), 200)
    assert again == revealed and other != revealed


def test_batched_feedback_reveals_whole_batches():
    revealed, paid, plain = reveal_log(BatchedFeedback(make(horizon=11), batch_size=4), 11)
    assert revealed == [[], [], [], [0, 1, 2, 3], [], [], [], [4, 5, 6, 7], [], [], [8, 9, 10]]
    assert paid == plain


@pytest.mark.parametrize(("wrapper", "kwargs"), [(DelayedFeedback, {"delay": (0, 4)}),
                                                 (BatchedFeedback, {"batch_size": 3})])
def test_vector_feedback_replica_i_is_the_single_env_with_seed_plus_i(wrapper, kwargs):
    venv = wrapper(make(num_envs=3, horizon=15), **kwargs)
    venv.reset(seed=10)
    singles = [wrapper(make(horizon=15), **kwargs) for _ in range(3)]
    for i, env in enumerate(singles):
        env.reset(seed=10 + i)
    for t in range(17):  # past the horizon: the autoreset step reveals nothing and starts again
        _, reward, _, truncated, info = venv.step(np.full(3, t % 6))
        if t == 15:
            assert "revealed_rounds" not in info and not truncated.any()
            for env in singles:
                env.reset()
            continue
        for i, env in enumerate(singles):
            _, r, _, _, single = env.step(t % 6)
            np.testing.assert_array_equal(info["revealed_rounds"][i], single["revealed_rounds"])
            np.testing.assert_allclose(info["revealed_rewards"][i], single["revealed_rewards"], rtol=1e-6)
            assert reward[i] == pytest.approx(r, rel=1e-6, nan_ok=True)


@pytest.mark.parametrize(("wrapper", "kwargs"), [(DelayedFeedback, {"delay": (0, 3), "delay_seed": 2}),
                                                 (BatchedFeedback, {"batch_size": 4})])
def test_single_feedback_is_row_zero_of_a_one_replica_channel(wrapper, kwargs):
    """The single env is the batched channel's R = 1 case: its revealed arrays are row 0 of a one-replica
    env's, as 1-D numpy arrays of the documented dtypes (all that is pending comes at the last round)."""
    single, venv = wrapper(make(horizon=9), **kwargs), wrapper(make(num_envs=1, horizon=9), **kwargs)
    single.reset(seed=4)
    venv.reset(seed=4)
    for t in range(9):
        _, _, _, _, one = single.step(t % 6)
        _, _, _, _, batched = venv.step(np.array([t % 6]))
        for key, dtype in (("revealed_rounds", np.int64), ("revealed_rewards", np.float64),
                           ("revealed_actions", np.int64)):
            assert type(one[key]) is np.ndarray and one[key].dtype == dtype and one[key].ndim == 1, key
            assert batched[key].shape == (1, len(one[key])), key
        np.testing.assert_array_equal(one["revealed_rounds"], batched["revealed_rounds"][0], strict=True)
        np.testing.assert_array_equal(one["revealed_actions"], batched["revealed_actions"][0], strict=True)
        np.testing.assert_allclose(one["revealed_rewards"], batched["revealed_rewards"][0], rtol=1e-6)
    assert sorted(one["revealed_rounds"].tolist())[-1] == 8  # the last round reveals what is pending


@pytest.mark.parametrize(("wrapper", "kwargs", "message"), [
    (DelayedFeedback, {"delay": -1}, "delay must be an integer >= 0"),
    (DelayedFeedback, {"delay": (5, 2)}, "low <= high"),
    (DelayedFeedback, {"delay": 1.5}, "got 1.5"),
    (BatchedFeedback, {"batch_size": 0}, "batch_size must be an integer >= 1 .* got 0"),
    (Drift, {"kind": "sudden"}, "kind must be 'abrupt'"),
    (Drift, {"kind": "abrupt", "every": 0}, "every must be None .* got 0"),
    (Drift, {"kind": "rotation", "rate": float("nan")}, "rate must be a finite number"),
])
def test_feedback_bad_arguments_are_named(wrapper, kwargs, message):
    with pytest.raises(ValueError, match=message):
        wrapper(make(), **kwargs)


def test_drift_rotation_refused_on_dataset_envs():
    with pytest.raises(ValueError, match="kind='rotation' needs a synthetic env"):
        Drift(make("ClassificationBandit-v0"), kind="rotation", rate=0.1)


def noise_free_rollout(env, rounds: int, seed: int = 0):
    """Arms, expected rewards shown with them, actions, rewards and regrets of ``rounds`` steps."""
    obs, info = env.reset(seed=seed)
    rows = []
    for t in range(rounds):
        action = (3 * t) % env.action_space.n
        next_obs, reward, _, _, next_info = env.step(action)
        rows.append((obs, info["expected_rewards"], info["optimal_action"], action, reward, next_info["regret"]))
        obs, info = next_obs, next_info
    return rows


def test_drift_abrupt_rewards_and_regret_follow_the_current_world():
    """noise_std=0: a reward is its arm's expected reward; each segment's theta* is recovered by least squares
    from its 10 rounds x 1 reward (d = 4), and explains every expected reward and regret of the segment."""
    env = Drift(make(noise_std=0.0, horizon=40), kind="abrupt", every=10)
    rows = noise_free_rollout(env, 40)
    thetas = []
    for segment in range(4):
        part = rows[10 * segment: 10 * segment + 10]
        chosen = np.stack([obs[action] for obs, _, _, action, _, _ in part]).astype(np.float64)  # (10, d)
        theta = np.linalg.lstsq(chosen, np.array([r for *_, r, _ in part]), rcond=None)[0]
        thetas.append(theta)
        assert np.linalg.norm(theta) == pytest.approx(1.0, abs=1e-5)  # unit theta*
        for obs, expected, optimal, action, reward, regret in part:
            np.testing.assert_allclose(expected, obs @ theta, atol=1e-5)
            assert reward == expected[action]
            assert regret == pytest.approx(expected.max() - expected[action], abs=1e-6)
            assert optimal == int(np.argmax(expected))
    for a, b in zip(thetas, thetas[1:], strict=False):
        assert np.abs(a - b).max() > 0.1  # the world changed at each change point


def test_drift_rotation_turns_theta_by_rate_per_round():
    env = Drift(make(noise_std=0.0, horizon=40, changing_arms=True), kind="rotation", rate=0.05)
    rows = noise_free_rollout(env, 40)
    theta0 = env.theta_at(0)[0].double().numpy()
    for t, (obs, expected, _, action, reward, regret) in enumerate(rows):
        theta = env.theta_at(t)[0].double().numpy()
        assert math.acos(min(1.0, theta @ theta0)) == pytest.approx(0.05 * t, abs=1e-3)
        np.testing.assert_allclose(expected, obs @ theta, atol=1e-5)
        assert reward == expected[action]
        assert regret == pytest.approx(expected.max() - expected[action], abs=1e-6)


def test_drift_dataset_classes_swap_rewards_at_change_points():
    """The plain twin's expected rewards name the true class ``y``; under drift arm ``perm[y]`` pays it."""
    env = Drift(make("ClassificationBandit-v0"), kind="abrupt", every=10)
    rows, plain = noise_free_rollout(env, 30), noise_free_rollout(make("ClassificationBandit-v0"), 30)
    moved = 0
    for t, ((obs, expected, optimal, action, reward, regret), twin) in enumerate(zip(rows, plain, strict=True)):
        np.testing.assert_array_equal(obs, twin[0])
        label = int(np.argmax(twin[1]))
        perm = env.permutation_at(t)[0].numpy()
        np.testing.assert_array_equal(expected, np.eye(4, dtype=np.float32)[perm[label]])
        assert reward == expected[action] and regret == expected.max() - expected[action]
        assert optimal == perm[label]
        moved += perm[label] != label
        if t < 10:
            np.testing.assert_array_equal(perm, np.arange(4))
    assert moved > 0


@pytest.mark.parametrize("num_envs", [None, 2])
def test_apply_wrappers_from_a_config_list_and_describe_them(num_envs):
    from bandit_gym.feedback import apply_wrappers, describe_wrappers

    specs = [{"Drift": {"kind": "abrupt", "every": 50}}, {"DelayedFeedback": {"delay": 10}}]
    env = apply_wrappers(make(num_envs=num_envs), specs)
    assert describe_wrappers(env) == [{"Drift": {"kind": "abrupt", "every": 50, "rate": 0.0}},
                                      {"DelayedFeedback": {"delay": 10, "delay_seed": 0}}]
    assert describe_wrappers(make()) == []
    assert apply_wrappers(make(), None).unwrapped is not None


@pytest.mark.parametrize(("specs", "message"), [
    ({"DelayedFeedback": {}}, "wrappers must be a list"),
    ([{"DelayedFeedbak": {"delay": 1}}], "unknown wrapper 'DelayedFeedbak'; did you mean 'DelayedFeedback'"),
    ([{"BatchedFeedback": {"size": 2}}], "BatchedFeedback takes the keywords batch_size"),
    ([{"BatchedFeedback": {"batch_size": 2}}, {"Drift": {"every": 5}}], "Drift must be the first wrapper"),
])
def test_apply_wrappers_names_a_bad_entry(specs, message):
    from bandit_gym.feedback import apply_wrappers

    with pytest.raises(ValueError, match=message):
        apply_wrappers(make(), specs)


@pytest.mark.parametrize(("env_id", "kwargs"), [("LinearBandit-v0", {"kind": "abrupt", "every": 7}),
                                                ("LinearBandit-v0", {"kind": "rotation", "rate": 0.1}),
                                                ("ClassificationBandit-v0", {"kind": "abrupt", "every": 7})])
def test_drift_vector_replica_i_is_the_single_env_with_seed_plus_i(env_id, kwargs):
    """The new worlds come from each replica's key: replica i's rewards, expected rewards and regret are the
    single env's (float32 tolerances, as for the plain batched env)."""
    venv = Drift(make(env_id, num_envs=3), **kwargs)
    _, vector_info = venv.reset(seed=20)
    singles = [Drift(make(env_id), **kwargs) for _ in range(3)]
    infos = [env.reset(seed=20 + i)[1] for i, env in enumerate(singles)]
    for t in range(25):
        for i in range(3):
            np.testing.assert_allclose(vector_info["expected_rewards"][i], infos[i]["expected_rewards"], atol=1e-6)
        action = t % 4
        _, rewards, _, _, vector_info = venv.step(np.full(3, action))
        for i, env in enumerate(singles):
            _, reward, _, _, infos[i] = env.step(action)
            assert rewards[i] == pytest.approx(reward, abs=1e-6)
            assert vector_info["regret"][i] == pytest.approx(infos[i]["regret"], abs=1e-6)


@pytest.mark.parametrize(("wrapper", "kwargs"), [(DelayedFeedback, {"delay": (1, 5)}),
                                                 (BatchedFeedback, {"batch_size": 4}),
                                                 (Drift, {"kind": "abrupt", "every": 5}),
                                                 (Drift, {"kind": "rotation", "rate": 0.2})])
def test_feedback_wrappers_pass_check_env_and_pickle_mid_episode(wrapper, kwargs):
    import pickle

    from gymnasium.utils.env_checker import check_env

    check_env(wrapper(make(), **kwargs), skip_render_check=True)
    env = wrapper(make(), **kwargs)
    env.reset(seed=1)
    for t in range(12):
        env.step(t % 6)
    copy = pickle.loads(pickle.dumps(env))
    for t in range(12, 40):
        a, b = env.step(t % 6), copy.step(t % 6)
        assert_same([a], [b])
