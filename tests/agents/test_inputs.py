"""Bad input to an agent gets a clear one-line error naming the argument, the value and what is
accepted (issue 19, "Data and inputs"): non-finite observations, a damaged saved file, a huge
``total_timesteps`` and something that is not an env."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, UCBGLM, LinUCB

SIZES = {"n_arms": 4, "dim": 3}


def fitted(cls=LinUCB, **kwargs):
    """An agent of 2 replicas after 5 rounds of fixed data."""
    agent = cls(None, **SIZES, num_replicas=2, seed=0, device="cpu", **kwargs)
    contexts = torch.linspace(-1, 1, 5 * 2 * 4 * 3).reshape(5, 2, 4, 3)
    for x in contexts:
        agent.update(x, torch.tensor([0, 1]), torch.tensor([0.5, 1.0]))
    return agent


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("as_type", ["numpy", "torch"])
def test_predict_and_update_refuse_non_finite_observations(bad, as_type):
    agent = fitted()
    obs = np.zeros((2, 4, 3), dtype=np.float32)
    obs[1, 2, 0] = bad
    obs = torch.from_numpy(obs) if as_type == "torch" else obs
    with pytest.raises(ValueError, match=r"^observation must be finite.*1 NaN or Inf value.*\(1, 2, 0\)"):
        agent.predict(obs)
    t = agent.t
    with pytest.raises(ValueError, match=r"^observation must be finite"):
        agent.update(obs, np.array([0, 1]), np.array([0.0, 1.0]))
    assert agent.t == t  # nothing was learned from it


def test_predict_refuses_a_nan_single_observation():
    agent = LinUCB(None, **SIZES, seed=0, device="cpu")
    obs = np.full((4, 3), np.nan)
    with pytest.raises(ValueError, match=r"^observation must be finite.*12 NaN or Inf values"):
        agent.predict(obs)


def test_load_refuses_a_negative_round_count(tmp_path):
    path = tmp_path / "agent.pt"
    fitted().save(path)
    payload = torch.load(path, weights_only=True)
    for bad in (-3, 0, 2.5):
        payload["t"] = bad
        torch.save(payload, path)
        with pytest.raises(ValueError, match=rf"agent\.pt: the saved round count 't' must be an integer >= 1, "
                                             rf"got {bad!r}"):
            LinUCB.load(path, device="cpu")


@pytest.mark.parametrize(("cls", "key", "damage"), [
    (LinUCB, "gram_inverse", lambda shape: (*shape[:-1], shape[-1] - 1)),  # a column short
    (LinUCB, "theta_hat", lambda shape: (shape[0] + 1, *shape[1:])),  # a replica too many
    (LMCTS, "model.gram", lambda shape: (shape[0], shape[1] * shape[2])),  # flattened
    (UCBGLM, "data.features", lambda shape: (shape[0], shape[1], shape[2] + 1)),  # a feature too many
])
def test_load_refuses_state_tensors_of_the_wrong_shape(tmp_path, cls, key, damage):
    path = tmp_path / "agent.pt"
    agent = fitted(cls)
    agent.save(path)
    payload = torch.load(path, weights_only=True)
    bad_shape = damage(tuple(payload["state"][key].shape))
    payload["state"][key] = torch.zeros(bad_shape, dtype=payload["state"][key].dtype)
    torch.save(payload, path)
    fresh = cls(None, **SIZES, num_replicas=2, seed=0, device="cpu")._state()[key].shape  # 0: history rows
    expected = re.escape(f"({', '.join(str(n) if n else 'n' for n in fresh)})")
    with pytest.raises(ValueError, match=rf"agent\.pt: state tensor '{key}' has shape {re.escape(str(bad_shape))}, "
                                         rf"expected {expected}"):
        cls.load(path, device="cpu")


def test_load_refuses_missing_extra_and_mismatched_history_tensors(tmp_path):
    path = tmp_path / "agent.pt"
    fitted(UCBGLM).save(path)
    good = torch.load(path, weights_only=True)
    damaged = {
        "missing": ({k: v for k, v in good["state"].items() if k != "theta_hat"},
                    r"lacks the state tensor 'theta_hat'"),
        "extra": ({**good["state"], "junk": torch.zeros(1)}, r"has an unknown state tensor 'junk'"),
        "length": ({**good["state"], "data.rewards": torch.zeros(2, 4)},
                   r"'data.rewards' has shape \(2, 4\), expected \(2, 5\)"),
        "dtype": ({**good["state"], "theta_hat": torch.zeros(2, 3, dtype=torch.int64)},
                  r"'theta_hat' has dtype torch.int64, expected torch.float32"),
    }
    for state, message in damaged.values():
        torch.save({**good, "state": state}, path)
        with pytest.raises(ValueError, match=message):
            UCBGLM.load(path, device="cpu")
    torch.save(good, path)
    assert UCBGLM.load(path, device="cpu").t == 6  # the undamaged file still loads


def test_learn_with_a_huge_total_timesteps_grows_its_log():
    """Before: ``np.empty((10**12, 1))`` raised MemoryError (7.3 TiB) before the first round."""
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3)
    agent = LinUCB(env, seed=0, device="cpu")
    agent.learn(total_timesteps=10**12, callback=lambda agent, played: played < 7)
    assert agent.t == 8
    assert {name: rows.shape for name, rows in agent.history.items()} == {"regret": (7,), "reward": (7,),
                                                                          "action": (7,)}


def test_learn_log_across_chunks_keeps_every_round_in_order(monkeypatch):
    """The log grows in chunks: with 4-row chunks, 10 rounds give the rows of a run logged in one chunk."""
    from agents import base

    def run():
        env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=100)
        return LinUCB(env, seed=1, device="cpu").learn(total_timesteps=10).history

    whole = run()
    monkeypatch.setattr(base._RoundLog, "CHUNK_ROWS", 4)
    chunked = run()
    for name in ("regret", "reward", "action"):
        assert chunked[name].shape == (10,) and chunked[name].dtype == whole[name].dtype
        np.testing.assert_array_equal(chunked[name], whole[name])
    assert len(set(whole["action"].tolist())) > 1  # rows that differ, so an order mistake would show


@pytest.mark.parametrize("bad", [5, 2.5, [1, 2], object()])
def test_an_env_that_is_not_an_env_is_named(bad):
    with pytest.raises(TypeError, match=rf"^env must be a Gymnasium env, a vector env, a registered env id or "
                                        rf"None, got {type(bad).__name__} "):
        LinUCB(env=bad)
    agent = LinUCB(None, **SIZES, seed=0, device="cpu")
    if not isinstance(bad, int):  # an int given to learn is total_timesteps, as in Stable-Baselines3
        with pytest.raises(TypeError, match=r"^env must be a Gymnasium env"):
            agent.learn(bad, total_timesteps=3)
    with pytest.raises(TypeError, match=r"^env must be a Gymnasium env"):
        agent.set_env(bad)
