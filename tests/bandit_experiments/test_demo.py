"""The default experiment behind the README's first command (``bandit-gym demo``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from bandit_experiments import demo


def _direct_final_regret(agent_class, rounds: int, seeds: int, seed: int) -> np.ndarray:
    venv = gym.make_vec("LinearBandit-v0", num_envs=seeds, vectorization_mode="vector_entry_point", horizon=rounds)
    agent = agent_class(venv, seed=seed, device="cpu").learn(venv)
    return np.asarray(agent.history["regret"], dtype=np.float64).sum(axis=0)  # (seeds,)


def test_play_summarises_the_history_of_the_batched_run():
    from agents import UniformRandom

    result = demo.play("LinearBandit-v0", "UniformRandom", rounds=40, seeds=4, seed=3)
    final = _direct_final_regret(UniformRandom, rounds=40, seeds=4, seed=3)
    np.testing.assert_array_equal(result.final_regret, final)  # same seeds, same batch: the same numbers
    assert result.mean == pytest.approx(float(final.mean()), rel=1e-12)
    assert result.standard_error == pytest.approx(float(final.std(ddof=1) / 2), rel=1e-12)
    assert np.all(final > 0) and result.seconds > 0


def test_progress_bar_changes_no_number():
    plain = demo.play("LinearBandit-v0", "LinUCB", rounds=50, seeds=3)
    shown = demo.play("LinearBandit-v0", "LinUCB", rounds=50, seeds=3, progress=True)
    np.testing.assert_array_equal(plain.final_regret, shown.final_regret)


def test_regret_meter_sums_the_mean_regret_of_the_rounds_since_reset():
    from agents import LinTS

    venv = gym.make_vec("LinearBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", horizon=30)
    meter = demo.RegretMeter(venv)
    agent = LinTS(venv, seed=0, device="cpu").learn(meter, total_timesteps=30)
    # Float32 regrets summed in float64 in two orders: equal to well within 1e-6 relative.
    expected = float(np.asarray(agent.history["regret"], dtype=np.float64).sum(axis=0).mean())
    assert meter.cumulative_regret == pytest.approx(expected, rel=1e-6)
    meter.reset(seed=0)
    assert meter.cumulative_regret == 0.0


def test_one_seed_has_no_standard_error():
    result = demo.play("LinearBandit-v0", "UniformRandom", rounds=10, seeds=1)
    assert result.standard_error is None
    row = demo.format_row(result)
    assert "+-" not in row and "nan" not in row and f"{result.mean:.1f}" in row


def test_explanation_says_how_to_read_the_numbers():
    line = demo.explanation(2000, 10, ["LMCTS", "UniformRandom"])
    assert "lower is better" in line and "UniformRandom" in line and "no-learning reference" in line
    assert "\n" not in line
    assert "UniformRandom" not in demo.explanation(2000, 1, ["LMCTS"])
    assert "one seed" in demo.explanation(2000, 1, ["LMCTS"])


def test_default_rounds_is_the_env_horizon():
    assert demo.default_rounds("LinearBandit-v0") == gym.make("LinearBandit-v0").unwrapped.horizon


def test_unknown_agent_or_env_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown agent 'LMCT'; did you mean 'LMCTS'\?"):
        demo.play("LinearBandit-v0", "LMCT", rounds=5, seeds=1)
    with pytest.raises(ValueError, match=r"unknown env 'LinearBandit-v9'; did you mean 'LinearBandit-v0'\?"):
        demo.play("LinearBandit-v9", "LinUCB", rounds=5, seeds=1)
