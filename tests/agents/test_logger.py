"""learn logs every round to Stable-Baselines3's logger when asked (``set_logger``, ``tensorboard_log=``)."""

from __future__ import annotations

import csv
import importlib.util

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.logger import configure  # noqa: E402

from agents import EpsGreedy, LinUCB  # noqa: E402
from agents.samplers import MALATS  # noqa: E402


def _rows(folder) -> list[dict[str, str]]:
    with open(folder / "progress.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_csv_log_holds_one_row_per_round_with_the_regret_of_the_history(tmp_path):
    agent = LinUCB("LinearBandit-v0", num_replicas=3, seed=0, device="cpu")
    agent.set_logger(configure(str(tmp_path), ["csv"]))
    agent.learn(40)
    rows = _rows(tmp_path)
    assert len(rows) == 40
    assert {"rollout/regret", "rollout/cumulative_regret", "rollout/reward", "time/rounds"} <= set(rows[0])
    logged = np.array([float(row["rollout/regret"]) for row in rows])
    expected = agent.history["regret"].mean(axis=1)  # (T,) the mean over the 3 replicas
    np.testing.assert_allclose(logged, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose([float(row["rollout/cumulative_regret"]) for row in rows], np.cumsum(expected),
                               rtol=1e-9)
    np.testing.assert_allclose([float(row["rollout/reward"]) for row in rows],
                               agent.history["reward"].astype(np.float64).mean(axis=1), rtol=1e-6)
    assert [int(row["time/rounds"]) for row in rows] == list(range(1, 41))


def test_the_agents_own_quantities_are_logged_where_the_agent_has_them(tmp_path):
    greedy = EpsGreedy("LinearBandit-v0", num_replicas=2, seed=0, device="cpu", exploration_scale=[0.5, 2.0])
    greedy.set_logger(configure(str(tmp_path / "eps"), ["csv"]))
    greedy.learn(10)
    rows = _rows(tmp_path / "eps")
    # epsilon_t = min(1, c / sqrt(t)): the mean over c = 0.5 and c = 2 of round t's
    expected = [(min(1, 0.5 / np.sqrt(t)) + min(1, 2.0 / np.sqrt(t))) / 2 for t in range(1, 11)]
    np.testing.assert_allclose([float(row["agent/exploration_rate"]) for row in rows], expected, rtol=1e-6)
    assert "agent/acceptance_rate" not in rows[0]

    sampler = MALATS("LinearBandit-v0", num_replicas=2, seed=0, device="cpu", n_inner_steps=5)
    sampler.set_logger(configure(str(tmp_path / "mala"), ["csv"]))
    sampler.learn(5)
    rates = [float(row["agent/acceptance_rate"]) for row in _rows(tmp_path / "mala")]
    assert rates[-1] == pytest.approx(float(sampler.acceptance_rate.double().mean()), rel=1e-6)
    assert all(0.0 <= r <= 1.0 for r in rates)


def test_without_a_logger_nothing_is_written_and_learn_is_unchanged(tmp_path):
    plain = LinUCB("LinearBandit-v0", num_replicas=2, seed=3, device="cpu").learn(30)
    logged = LinUCB("LinearBandit-v0", num_replicas=2, seed=3, device="cpu")
    logged.set_logger(configure(str(tmp_path), ["csv"]))
    logged.learn(30)
    np.testing.assert_array_equal(plain.history["regret"], logged.history["regret"])
    np.testing.assert_array_equal(plain.history["action"], logged.history["action"])


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is not None, reason="tensorboard is installed")
def test_tensorboard_log_without_tensorboard_names_the_extra(tmp_path):
    agent = LinUCB("LinearBandit-v0", num_replicas=1, seed=0, device="cpu")
    with pytest.raises(ModuleNotFoundError, match=r"tensorboard_log=.*'tensorboard'.*bandit-gym\[tensorboard\]"):
        agent.learn(5, tensorboard_log=tmp_path / "tb")
    assert not (tmp_path / "tb").exists()


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="needs tensorboard")
def test_tensorboard_log_writes_csv_and_event_files(tmp_path):
    agent = LinUCB("LinearBandit-v0", num_replicas=1, seed=0, device="cpu")
    agent.learn(5, tensorboard_log=tmp_path / "tb")
    assert len(_rows(tmp_path / "tb")) == 5
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


def test_an_sb3_callback_logs_into_the_same_row_of_its_round(tmp_path):
    from stable_baselines3.common.callbacks import BaseCallback

    class RecordRound(BaseCallback):
        def _on_step(self) -> bool:
            self.logger.record("custom/round", self.model.t - 1)  # the round just played
            return True

    agent = LinUCB("LinearBandit-v0", num_replicas=2, seed=0, device="cpu")
    agent.set_logger(configure(str(tmp_path), ["csv"]))
    agent.learn(12, callback=RecordRound())
    rows = _rows(tmp_path)
    assert len(rows) == 12
    assert [int(row["custom/round"]) for row in rows] == [int(row["time/rounds"]) for row in rows] == list(range(1, 13))
