"""What every agent promises: seeded runs repeat and seeds differ; replica r of a batch is the single
run with seed s + r; per-replica hyperparameters [a, b] are two single runs with a and b; a saved
agent (per-replica values included) continues as the original; any env's numpy or torch arrays work.

Batched and single runs may differ in the last float bits (another summation order), so states are
compared with float32 tolerances, on recorded rounds fed through ``update`` (fixed data), or on
LinearBandit-v0's continuous arm features over 30 rounds, where no two arms come within rounding
of a tie.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from replicas import feed, linear_rounds, logistic_rounds, make_vec

from agents import GLMTSL, LMCTS, SGDTS, UCBGLM, EpsGreedy, LinTS, LinUCB, UniformRandom

SIZES = {"n_arms": 8, "dim": 5, "horizon": 300}
# (name, class, keywords, env id, a numeric hyperparameter and two values for it)
CASES = [
    ("LinUCB", LinUCB, {}, "LinearBandit-v0", ("exploration_scale", [0.05, 1.0])),
    ("LinTS", LinTS, {}, "LinearBandit-v0", ("exploration_scale", [0.01, 0.5])),
    ("EpsGreedy", EpsGreedy, {}, "LinearBandit-v0", ("lambda_reg", [0.5, 2.0])),
    ("LMCTS", LMCTS, {"n_inner_steps": 20}, "LinearBandit-v0", ("inverse_temperature", [3.0, 300.0])),
    ("LMCTS-glm", LMCTS, {"model": "glm", "n_inner_steps": 10}, "LogisticBandit-v0", ("step_size", [0.3, 0.9])),
    ("LMCTS-sgld", LMCTS, {"model": "glm", "n_inner_steps": 10, "batch_size": 8}, "LogisticBandit-v0",
     ("lambda_reg", [0.5, 2.0])),
    ("UCBGLM", UCBGLM, {}, "LogisticBandit-v0", ("exploration_scale", [0.1, 1.0])),
    ("GLMTSL", GLMTSL, {}, "LogisticBandit-v0", ("exploration_scale", [0.1, 1.0])),
    ("SGDTS", SGDTS, {}, "LogisticBandit-v0", ("step_size", [1.0, 10.0])),
]
IDS = [case[0] for case in CASES]
ROUNDS = 60  # recorded rounds: past SGD-TS's first epoch (d = 5 random rounds) and several SGD steps


def estimate(agent) -> torch.Tensor:
    """The agent's learned parameters: LMC-TS's sample theta, the others' estimate theta_hat."""
    return agent.theta if isinstance(agent, LMCTS) else agent.theta_hat


def recorded_rounds(env_id: str, num_replicas: int, seed: int = 0):
    K, d = SIZES["n_arms"], SIZES["dim"]
    if env_id == "LinearBandit-v0":
        _, contexts, actions, _, rewards = linear_rounds(ROUNDS, num_replicas, K, d, seed=seed, noise=0.5)
        return contexts, actions, rewards
    contexts, actions, _, rewards = logistic_rounds(ROUNDS, num_replicas, K, d, seed=seed)
    return contexts, actions, rewards


def build(cls, kwargs, num_replicas, seed, **extra):
    return cls(None, n_arms=SIZES["n_arms"], dim=SIZES["dim"], num_replicas=num_replicas, seed=seed, device="cpu",
               **({"horizon": 300} if cls is LinTS else {}), **kwargs, **extra)


@pytest.mark.parametrize(("name", "cls", "kwargs", "env_id", "hyper"), CASES, ids=IDS)
def test_seeded_learn_is_reproducible_and_seeds_differ(name, cls, kwargs, env_id, hyper):
    def run(seed):
        env = make_vec(env_id, 3, SIZES)
        return cls(env, seed=seed, device="cpu", **kwargs).learn(env, total_timesteps=40).history

    a, b, c = run(0), run(0), run(1)
    for key in ("action", "regret", "reward"):
        np.testing.assert_array_equal(a[key], b[key])
    assert a["regret"].shape == (40, 3)
    assert not np.array_equal(a["action"], c["action"])


@pytest.mark.parametrize(("name", "cls", "kwargs", "env_id", "hyper"), CASES, ids=IDS)
def test_batched_replica_equals_single_run_on_recorded_rounds(name, cls, kwargs, env_id, hyper):
    R = 5
    contexts, actions, rewards = recorded_rounds(env_id, R)
    batched = build(cls, kwargs, R, seed=3)
    feed(batched, contexts, actions, rewards)
    for r in (0, 2, 4):
        single = build(cls, kwargs, 1, seed=3 + r)
        feed(single, contexts[:, r : r + 1], actions[:, r : r + 1], rewards[:, r : r + 1])
        # float32 sums in another order: differences of a few ulps, grown over 60 rounds to < 1e-4.
        torch.testing.assert_close(estimate(single)[0], estimate(batched)[r], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy, LMCTS, UniformRandom], ids=lambda c: c.__name__)
def test_batched_replica_plays_the_single_runs_arms(cls):
    venv = make_vec("LinearBandit-v0", 4, SIZES)
    batched = cls(venv, seed=5, device="cpu").learn(venv, total_timesteps=30)
    for r in (0, 3):
        env = gym.make("LinearBandit-v0", **SIZES)
        single = cls(env, seed=5 + r, device="cpu").learn(env, total_timesteps=30)
        np.testing.assert_array_equal(single.history["action"], batched.history["action"][:, r])
        np.testing.assert_allclose(single.history["regret"], batched.history["regret"][:, r], rtol=1e-6)


@pytest.mark.parametrize(("name", "cls", "kwargs", "env_id", "hyper"), CASES, ids=IDS)
def test_per_replica_hyperparameters_equal_single_runs(name, cls, kwargs, env_id, hyper):
    key, values = hyper
    contexts, actions, rewards = recorded_rounds(env_id, 2)
    batched = build(cls, kwargs, 2, seed=[7, 7], **{key: values})
    assert batched.hyperparameters()[key] == values
    feed(batched, contexts, actions, rewards)
    for r, value in enumerate(values):
        single = build(cls, kwargs, 1, seed=7, **{key: value})
        feed(single, contexts[:, r : r + 1], actions[:, r : r + 1], rewards[:, r : r + 1])
        torch.testing.assert_close(estimate(single)[0], estimate(batched)[r], rtol=1e-4, atol=1e-4)
    assert not torch.allclose(estimate(batched)[0], estimate(batched)[1])  # the two values made a difference


@pytest.mark.parametrize(("name", "cls", "kwargs", "env_id", "hyper"), CASES, ids=IDS)
def test_save_load_round_trip_keeps_per_replica_values(name, cls, kwargs, env_id, hyper, tmp_path):
    key, values = hyper
    contexts, actions, rewards = recorded_rounds(env_id, 2)
    agent = build(cls, kwargs, 2, seed=2, **{key: values})
    feed(agent, contexts[:40], actions[:40], rewards[:40])
    agent.save(tmp_path / "agent.pt")
    loaded = cls.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.t == agent.t and loaded.hyperparameters() == agent.hyperparameters()
    assert loaded.hyperparameters()[key] == values
    torch.testing.assert_close(estimate(loaded), estimate(agent), rtol=0, atol=0)
    for x, a, r in zip(contexts[40:], actions[40:], rewards[40:], strict=True):  # both continue identically
        assert torch.equal(agent.predict(x)[0], loaded.predict(x)[0])
        agent.update(x, a, r)
        loaded.update(x, a, r)
    torch.testing.assert_close(estimate(loaded), estimate(agent), rtol=0, atol=0)


def test_predict_does_not_change_the_agent_and_answers_in_the_input_type():
    env = gym.make("LinearBandit-v0", **SIZES)
    agent = LMCTS(env, seed=4, device="cpu").learn(env, total_timesteps=10)
    theta, t = agent.theta.clone(), agent.t
    obs, _ = env.reset(seed=9)  # numpy (K, d)
    answers = [agent.predict(obs)[0] for _ in range(3)]
    assert isinstance(answers[0], np.ndarray) and answers[0].shape == () and len(set(map(int, answers))) == 1
    action, _ = agent.predict(torch.from_numpy(obs))
    assert isinstance(action, torch.Tensor) and int(action) == int(answers[0])
    assert torch.equal(agent.theta, theta) and agent.t == t


def test_learn_on_gymnasium_sync_vector_env_with_numpy_arrays():
    """SyncVectorEnv gives numpy observations and rewards; the same seeds give the native env's rounds."""
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("LinearBandit-v0", **SIZES) for _ in range(3)])
    with pytest.raises(ValueError, match="SyncVectorEnv has no horizon: give total_timesteps"):
        LinUCB(sync, seed=0, device="cpu").learn(sync)
    on_sync = LinUCB(sync, seed=0, device="cpu").learn(sync, total_timesteps=25)
    native = make_vec("LinearBandit-v0", 3, SIZES)
    on_native = LinUCB(native, seed=0, device="cpu").learn(native, total_timesteps=25)
    assert on_sync.history["regret"].shape == (25, 3)
    np.testing.assert_array_equal(on_sync.history["action"], on_native.history["action"])
    np.testing.assert_allclose(on_sync.history["regret"], on_native.history["regret"], rtol=1e-5, atol=1e-6)


def test_update_accepts_numpy_arrays_without_copying_them():
    agent = LinUCB(None, n_arms=3, dim=2, num_replicas=2, seed=0, device="cpu")
    obs = np.ones((2, 3, 2), dtype=np.float32)
    agent.update(obs, np.array([0, 1]), np.array([1.0, 0.0]))
    assert agent.theta_hat[0].sum() > 0 and agent.t == 2
    with pytest.raises(ValueError, match=r"observation must have shape \(3, 2\) or \(2, 3, 2\), got \(3, 3, 2\)"):
        agent.update(np.ones((3, 3, 2)), np.array([0, 1]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"action must be in \[0, 3\), got \[0, 3\]"):
        agent.update(obs, np.array([0, 3]), np.array([1.0, 0.0]))
