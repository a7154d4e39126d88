"""The Showdown's synthetic bandits (``bandit_gym/showdown.py``) against the definitions of its code.

The per-id tests (env checker, seeds, pickles, ``next_rounds``, vector replicas) reach these ids by their
registration; here: the Wheel's geometry and rewards, the regret each one is scored by, the linear arms.
"""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)

ROUNDS = 4096


def chunk_of(env_id: str, seed: int = 0, rounds: int = ROUNDS, **kwargs):
    """``rounds`` rounds of one seeded single env, drawn at once, and its simulator."""
    env = gym.make(env_id, horizon=rounds, **kwargs)
    env.reset(seed=seed)
    return env.unwrapped.next_rounds(rounds), env.unwrapped.sim


def contexts_of(chunk, context_dim: int) -> torch.Tensor:
    """The contexts ``(n, d)`` of a single env's chunk: arm 0's row holds the context in its first block."""
    return chunk.contexts[:, 0, 0, :context_dim]


def quadrant_arm(x: torch.Tensor) -> torch.Tensor:
    """The code's quadrant arm ``(n,)``: 0 for ``x1 > 0, x2 > 0``, 1 for ``x1 > 0, x2 <= 0``, 2, 3."""
    arms = torch.empty(len(x), dtype=torch.int64)
    for i, (a, b) in enumerate(x.tolist()):
        arms[i] = (0 if b > 0 else 1) if a > 0 else (2 if b > 0 else 3)
    return arms


@pytest.mark.parametrize("delta", [0.5, 0.95])
def test_wheel_contexts_fill_the_disc_and_the_outer_ring_holds_its_share(delta):
    chunk, _ = chunk_of("WheelBandit-v0", delta=delta)
    x = contexts_of(chunk, 2).double()  # (n, 2)
    norms = x.norm(dim=1)
    assert norms.max() <= 1
    outer = (norms >= delta).double().mean().item()
    share, sd = 1 - delta**2, math.sqrt((1 - delta**2) * delta**2 / ROUNDS)
    assert abs(outer - share) < 5 * sd  # uniform in the disc: the ring's area share
    assert (x[:, 0] > 0).double().mean().item() == pytest.approx(0.5, abs=5 * 0.5 / math.sqrt(ROUNDS))


def test_wheel_optimal_arm_and_rewards_follow_the_showdown_code():
    delta = 0.5
    chunk, _ = chunk_of("WheelBandit-v0", delta=delta)
    x = contexts_of(chunk, 2)
    outer = x.double().norm(dim=1) >= delta  # (n,)
    optimal = chunk.optimal_action[:, 0]  # (n,)
    assert torch.equal(optimal, torch.where(outer, quadrant_arm(x), torch.full_like(optimal, 4)))
    rows = chunk.rewards[:, 0]  # (n, 5)
    large = torch.zeros_like(rows, dtype=torch.bool)
    large[outer, optimal[outer]] = True
    assert (rows[large] - 50).abs().max() < 7 * 0.01  # N(50, 0.01^2)
    centre = rows[:, 4][~large[:, 4]]
    assert centre.double().mean().item() == pytest.approx(1.2, abs=5 * 0.05 / math.sqrt(len(centre)))
    base = rows[:, :4][~large[:, :4]]
    assert base.double().mean().item() == pytest.approx(1.0, abs=5 * 0.05 / math.sqrt(len(base)))
    assert base.double().std().item() == pytest.approx(0.05, rel=0.05)


def test_wheel_sampled_regret_is_against_the_optimal_arms_draw_not_the_best_draw():
    # A wide base_std makes other arms' draws beat the centre arm's often inside the disc.
    chunk, _ = chunk_of("WheelBandit-v0", base_std=0.5)
    rows, optimal = chunk.rewards[:, 0], chunk.optimal_action[:, 0]  # (n, 5), (n,)
    assert torch.equal(chunk.best[:, 0], rows.gather(1, optimal[:, None])[:, 0])
    regret = chunk.regret_of(torch.zeros_like(chunk.optimal_action))  # always arm 0
    assert torch.equal(regret[:, 0], chunk.best[:, 0] - rows[:, 0])
    assert (regret < 0).any()  # a lucky draw of arm 0 beats the optimal arm's: the code's score allows it
    assert torch.equal(chunk.rewards_of(optimal[:, None]), chunk.best)  # the optimal arm: regret exactly 0


def test_wheel_tf_agents_variant_numbers_the_centre_first_and_scores_against_means():
    showdown, _ = chunk_of("WheelBandit-v0", seed=3)
    tf_agents, _ = chunk_of("WheelBandit-v0", seed=3, centre_arm_first=True, regret="expected")
    assert torch.equal(contexts_of(showdown, 2), contexts_of(tf_agents, 2))  # the same streams
    a = showdown.optimal_action
    assert torch.equal(tf_agents.optimal_action, torch.where(a == 4, 0, a + 1))
    outer = tf_agents.optimal_action != 0
    assert torch.all(tf_agents.best[outer] == 50) and torch.all(tf_agents.best[~outer] == torch.tensor(1.2))
    assert torch.equal(tf_agents.rewards, showdown.rewards.roll(1, dims=2))  # the same draws, relabelled


def test_wheel_rllib_std_applies_to_every_arm():
    chunk, _ = chunk_of("WheelBandit-v0", delta=0.5, base_std=0.01)
    inner = chunk.optimal_action[:, 0] == 4
    rows = chunk.rewards[:, 0][inner]  # (m, 5)
    assert rows[:, :4].double().std().item() == pytest.approx(0.01, rel=0.05)


def test_wheel_strict_boundary_puts_the_points_on_the_circle_inside():
    first, _ = chunk_of("WheelBandit-v0", rounds=64)
    norms = contexts_of(first, 2).norm(dim=1)  # (n,) float32, as the env computes them
    delta = float(norms[norms < 0.95][0])  # a round exactly on the circle of this radius
    on_circle = norms == delta
    closed, _ = chunk_of("WheelBandit-v0", rounds=64, delta=delta)
    strict, _ = chunk_of("WheelBandit-v0", rounds=64, delta=delta, strict_boundary=True)
    assert torch.all(closed.optimal_action[on_circle] != 4) and torch.all(strict.optimal_action[on_circle] == 4)
    assert torch.equal(closed.optimal_action[~on_circle], strict.optimal_action[~on_circle])


@pytest.mark.parametrize("env_id", ["LinearShowdown-v0", "SparseLinearShowdown-v0"])
def test_linear_showdown_rows_are_linear_means_plus_the_codes_noise(env_id):
    chunk, sim = chunk_of(env_id)
    K, d = sim.n_arms, sim.context_dim
    betas = sim.betas[0]  # (d, K)
    torch.testing.assert_close(betas.norm(dim=0), torch.ones(K))
    if env_id.startswith("Sparse"):
        assert d == 10 and torch.equal((betas != 0).sum(dim=0), torch.full((K,), 3))  # int(10 / 3) per arm
    x = contexts_of(chunk, d)  # (n, d)
    means = x @ betas  # (n, K)
    assert torch.equal(chunk.optimal_action[:, 0], means.argmax(dim=1))  # the highest mean, not the highest draw
    noise = (chunk.rewards[:, 0] - means).double()  # (n, K)
    expected = torch.tensor([0.01 * (j + 1) for j in range(K)], dtype=torch.float64)
    torch.testing.assert_close(noise.std(dim=0), expected, rtol=0.05, atol=0)
    assert x.double().std().item() == pytest.approx(1.0, rel=0.05)


def test_linear_showdown_expected_regret_scores_against_the_optimal_mean():
    sampled, sim = chunk_of("LinearShowdown-v0", seed=4)
    expected, _ = chunk_of("LinearShowdown-v0", seed=4, regret="expected")
    means = contexts_of(expected, sim.context_dim) @ sim.betas[0]  # (n, K)
    torch.testing.assert_close(expected.best[:, 0], means.amax(dim=1))
    assert torch.equal(sampled.rewards, expected.rewards) and not torch.equal(sampled.best, expected.best)


def test_showdown_replica_r_is_the_single_env_seeded_s_plus_r():
    venv = gym.make_vec("WheelBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", horizon=100)
    venv.reset(seed=10)
    batch = venv.unwrapped.next_rounds(50)
    for r in range(3):
        single, _ = chunk_of("WheelBandit-v0", seed=10 + r, rounds=100)
        assert torch.equal(batch.rewards[:, r], single.rewards[:50, 0])


@pytest.mark.parametrize(("env_id", "kwargs", "match"), [
    ("WheelBandit-v0", {"delta": 1.5}, r"delta must be a finite number >= 0.0 and <= 1.0, got 1.5"),
    ("WheelBandit-v0", {"centre_mean": 0.9}, r"centre_mean must exceed base_mean=1.0 .*got 0.9"),
    ("WheelBandit-v0", {"large_mean": 1.2}, r"large_mean must exceed centre_mean=1.2 .*got 1.2"),
    ("WheelBandit-v0", {"regret": "max"}, r"regret must be one of \['sampled', 'expected'\], got 'max'"),
    ("WheelBandit-v0", {"base_std": -1.0}, r"base_std must be a finite number >= 0.0, got -1.0"),
    ("LinearShowdown-v0", {"noise_stds": [0.1, 0.2]}, r"noise_stds must be None, a number >= 0 or a list of 8"),
    ("LinearShowdown-v0", {"noise_stds": [0.1] * 7 + [-1.0]}, r"noise_stds\[7\] must be a finite number >= 0.0"),
    ("SparseLinearShowdown-v0", {"sparse_dim": 11}, r"sparse_dim must be an integer >= 1 and <= 10, got 11"),
])
def test_showdown_bad_keywords_are_refused_naming_the_argument(env_id, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(env_id, **kwargs)
