"""What every baseline promises (LinUCB, LinTS, EpsGreedy on LinearBandit-v0; UCBGLM, GLMTSL,
SGDTS on LogisticBandit-v0): seeded runs repeat, seeds differ, a replica of a batched run is
its single run, and a saved agent continues exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replicas import batched_and_single_runs, make_vec, seeded_histories

from agents import GLMTSL, SGDTS, UCBGLM, DivergenceError, EpsGreedy, LinTS, LinUCB, _math

SIZES = {"n_arms": 8, "dim": 5, "horizon": 300}
# (agent, env, rounds): 150 rounds on the linear env; 100 on the logistic one (70 to save, past
# SGD-TS's first epoch of d random rounds and its first SGD step).
CASES = [(cls, "LinearBandit-v0", 150) for cls in (LinUCB, LinTS, EpsGreedy)] + [
    (cls, "LogisticBandit-v0", 100) for cls in (UCBGLM, GLMTSL, SGDTS)]
IDS = [cls.__name__ for cls, _, _ in CASES]


@pytest.mark.parametrize(("cls", "env_id", "rounds"), CASES, ids=IDS)
def test_seeded_learn_is_reproducible_and_seeds_differ(cls, env_id, rounds):
    runs = seeded_histories(cls, env_id, SIZES, rounds=rounds)
    for key in ("action", "regret", "reward"):
        np.testing.assert_array_equal(runs[0][key], runs[1][key])
    assert not np.array_equal(runs[0]["action"], runs[2]["action"])


@pytest.mark.parametrize(("cls", "env_id", "rounds"), CASES, ids=IDS)
def test_batched_replica_equals_single_run(cls, env_id, rounds):
    batched, singles = batched_and_single_runs(cls, env_id, SIZES, rounds=rounds)
    for r, single in singles.items():
        np.testing.assert_array_equal(single.history["action"], batched.history["action"][:, r])
        np.testing.assert_array_equal(single.history["regret"], batched.history["regret"][:, r])
        assert torch.equal(single.theta_hat[0], batched.theta_hat[r])


@pytest.mark.parametrize(("cls", "env_id", "rounds"), CASES, ids=IDS)
def test_save_load_round_trip(cls, env_id, rounds, tmp_path):
    agent = cls(make_vec(env_id, 3, SIZES), seed=2, device="cpu")
    agent.learn(make_vec(env_id, 3, SIZES), total_timesteps=rounds // 2 + 20)
    agent.save(tmp_path / "agent.pt")
    loaded = cls.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.t == agent.t and loaded.hyperparameters() == agent.hyperparameters()
    for name in cls.state_names:
        assert torch.equal(getattr(loaded, name), getattr(agent, name)), name
    obs, _ = make_vec(env_id, 3, SIZES).reset(seed=9)
    for _ in range(5):  # the two agents act and learn identically from here on
        a1, _ = agent.predict(obs)
        a2, _ = loaded.predict(obs)
        assert torch.equal(a1, a2)
        agent.update(obs, a1, torch.ones(3))
        loaded.update(obs, a2, torch.ones(3))
    assert torch.equal(agent.theta_hat, loaded.theta_hat)


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy])
@pytest.mark.parametrize("device", ["cpu", pytest.param("torch-path", id="torch-path")])
def test_ridge_agents_raise_on_a_non_finite_estimate(cls, device, monkeypatch):
    # Overflowing statistics must stop the run with the round named, never play on NaN scores.
    agent = cls(None, n_arms=4, dim=3, num_replicas=2, seed=0, device="cpu", horizon=10) if cls is LinTS else \
        cls(None, n_arms=4, dim=3, num_replicas=2, seed=0, device="cpu")
    agent.reward_sum[1, 0] = float("inf")
    if device == "torch-path":  # the path of CUDA tensors and autograd
        monkeypatch.setattr(_math, "_kernel_ok", lambda *tensors: False)
    obs = torch.ones(2, 4, 3) / 3**0.5
    with pytest.raises(DivergenceError, match=r"theta_hat became NaN or Inf in round 1"):
        agent.update(obs, np.array([0, 1]), np.array([1.0, 0.5]))


def test_a_callback_stops_learn_and_the_history_holds_the_rounds_played():
    # learn's history is preallocated for the horizon; a run stopped at round 7 must hold exactly
    # the 7 rounds played, equal to the first 7 rounds of a full run.
    full = LinUCB(make_vec("LinearBandit-v0", 3, SIZES), seed=4).learn(make_vec("LinearBandit-v0", 3, SIZES))
    seen = []

    def stop_at_seven(agent, played):
        seen.append((agent.t, played))
        return played < 7

    env = make_vec("LinearBandit-v0", 3, SIZES)
    stopped = LinUCB(env, seed=4).learn(env, callback=stop_at_seven)
    assert seen == [(played + 1, played) for played in range(1, 8)]  # agent.t: the next round, 1-based
    for key in ("regret", "reward", "action"):
        assert stopped.history[key].shape == (7, 3)
        np.testing.assert_array_equal(stopped.history[key], full.history[key][:7])
    assert full.history["regret"].shape == (SIZES["horizon"], 3)


def test_progress_bar_shows_the_rounds_and_changes_nothing(capsys):
    env = make_vec("LinearBandit-v0", 3, SIZES)
    quiet = LinTS(env, seed=2).learn(env, total_timesteps=40)
    capsys.readouterr()
    env = make_vec("LinearBandit-v0", 3, SIZES)
    shown = LinTS(env, seed=2).learn(env, total_timesteps=40, progress_bar=True)
    bar = capsys.readouterr().err
    assert "LinTS" in bar and "40/40" in bar  # tqdm's bar, named after the agent, counted in rounds
    for key in ("regret", "reward", "action"):
        np.testing.assert_array_equal(shown.history[key], quiet.history[key])
