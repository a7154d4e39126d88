"""LMC-TS: the chain's exact law (Proposition 3.1), reproducibility, batching, persistence, errors."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, DivergenceError
from agents._lmc_models import LinearModel, LogisticModel, RewardModel
from agents.lmcts import paper_inverse_temperature

CPU = torch.device("cpu")

# -- Proposition 3.1, done right ----------------------------------------------------------
# Fixed data shared by all replicas; d = 3, lambda = 1.
FEATURES = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0], [0.8, 0.0, 0.6]])
REWARDS = torch.tensor([0.5, -0.2, 1.0, 0.3, 0.7])
BETA, N_CHAINS, N_STEPS = 2.0, 10_000, 150


@pytest.mark.parametrize(("schedule", "step_size"), [("constant", 0.1), ("inverse_t", 0.6)])
def test_lmcts_linear_chain_matches_gaussian_posterior(schedule, step_size):
    """After round t the chain is stationary at N(V^-1 b, (2 beta)^-1 V^-1 (I - eta_t V)^-1).

    The paper's (1/beta) V^-1 drops the factor 2 and the discretisation term. Here V has
    eigenvalues in [1.6, 3.6] and eta_t = 0.1, so eta_t V reaches 0.36: the (I - eta V)^-1 term is a
    56% effect and a frozen noise scale (eta_0 = 0.6 instead of eta_6 = 0.1) a 6x one. Each round's
    chain contracts by (1 - 2 eta v_min)^150 < 1e-13, so the warm start is forgotten.
    Tolerance: 5 standard errors of N_CHAINS Gaussian samples: sqrt(S_ii / N) for the mean and
    sqrt((S_ii S_jj + S_ij^2) / N) for the covariance (false-alarm rate < 1e-5 per entry).
    """
    agent = LMCTS(n_arms=2, dim=3, num_replicas=N_CHAINS, step_size=step_size, inverse_temperature=BETA,
                  n_inner_steps=N_STEPS, lambda_reg=1.0, step_schedule=schedule, seed=0, device="cpu")
    for x, r in zip(FEATURES, REWARDS, strict=True):
        obs = torch.stack([x, -x]).expand(N_CHAINS, 2, 3)  # (R, K, d)
        agent.update(obs, torch.zeros(N_CHAINS, dtype=torch.int64), r.expand(N_CHAINS))
    eta = agent.current_step_size(agent.t)
    assert eta == pytest.approx(0.1)
    v = torch.eye(3, dtype=torch.float64) + FEATURES.double().T @ FEATURES.double()
    b = FEATURES.double().T @ REWARDS.double()
    mean = torch.linalg.solve(v, b)
    cov = torch.linalg.inv(v) @ torch.linalg.inv(torch.eye(3, dtype=torch.float64) - eta * v) / (2 * BETA)

    samples = agent.theta.double()  # (N, d)
    mean_se = (cov.diagonal() / N_CHAINS).sqrt()
    assert ((samples.mean(0) - mean).abs() <= 5 * mean_se).all(), (samples.mean(0), mean)
    var = cov.diagonal()
    cov_se = ((var[:, None] * var[None, :] + cov**2) / N_CHAINS).sqrt()
    emp = torch.cov(samples.T)
    assert ((emp - cov).abs() <= 5 * cov_se).all(), (emp, cov)


def test_lmcts_linear_tree_equals_step_by_step_chain():
    """The linear model's tree evaluation of K steps is the step-by-step chain (float rounding aside)."""
    g = torch.Generator().manual_seed(0)
    model = LinearModel(4, 5, 1.0, CPU)
    for _ in range(30):
        model.add(torch.randn(4, 5, generator=g) / math.sqrt(5), torch.randn(4, generator=g))
    theta, noise = torch.randn(4, 5, generator=g), torch.randn(4, 37, 5, generator=g)
    for n_steps in (1, 2, 3, 37):
        fast = model.chain(theta, 0.05, 0.3, noise[:, :n_steps])
        slow = RewardModel.chain(model, theta, 0.05, 0.3, noise[:, :n_steps])
        torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_lmcts_glm_gradient_matches_autograd_of_softplus_loss():
    g = torch.Generator().manual_seed(1)
    model = LogisticModel(3, 4, 0.5, CPU, capacity=64)  # 70 rows: the buffer must grow
    for _ in range(70):
        model.add(torch.randn(3, 4, generator=g), (torch.rand(3, generator=g) < 0.5).float())
    theta = torch.randn(3, 4, generator=g).requires_grad_()
    model.loss(theta).sum().backward()
    torch.testing.assert_close(model.gradient(theta.detach()), theta.grad)
    every_row = torch.arange(70).expand(3, 70)  # a "mini-batch" of all rows is the full batch
    torch.testing.assert_close(model.gradient(theta.detach(), every_row), theta.grad)
    assert torch.isfinite(model.loss(torch.full((3, 4), 1e3))).all()  # softplus: no overflow


def test_lmcts_glm_gradient_of_a_replica_does_not_depend_on_batch_size():
    """Bit-identical full-batch and mini-batch gradients for replica r alone and inside a batch of 5."""
    g = torch.Generator().manual_seed(2)
    batch = LogisticModel(5, 6, 1.0, CPU)
    singles = [LogisticModel(1, 6, 1.0, CPU) for _ in range(5)]
    for _ in range(150):  # past one 64-row block, not a multiple of 64
        x, r = torch.randn(5, 6, generator=g), (torch.rand(5, generator=g) < 0.5).float()
        batch.add(x, r)
        for i, single in enumerate(singles):
            single.add(x[i : i + 1], r[i : i + 1])
    theta = torch.randn(5, 6, generator=g)
    rows = torch.randint(0, 150, (5, 37), generator=g)
    full, mini = batch.gradient(theta), batch.gradient(theta, rows)
    for i, single in enumerate(singles):
        torch.testing.assert_close(single.gradient(theta[i : i + 1])[0], full[i], rtol=0, atol=0)
        torch.testing.assert_close(single.gradient(theta[i : i + 1], rows[i : i + 1])[0], mini[i], rtol=0, atol=0)


# -- reproducibility and batching ---------------------------------------------------------
CONFIGS = {
    "linear": {},
    "glm": {"model": "glm", "n_inner_steps": 20},
    "glm-minibatch": {"model": "glm", "n_inner_steps": 20, "batch_size": 8},
}
ENV_IDS = {"linear": "LinearBandit-v0", "glm": "LogisticBandit-v0", "glm-minibatch": "LogisticBandit-v0"}
SMALL = {"n_arms": 8, "dim": 5, "horizon": 40}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_lmcts_seeded_learn_twice_identical_and_seeds_differ(config):
    def run(seed):
        env = gym.make(ENV_IDS[config], **SMALL)
        return LMCTS(env, seed=seed, device="cpu", **CONFIGS[config]).learn(env)

    a, b, c = run(0), run(0), run(1)
    for key in ("regret", "reward", "action"):
        np.testing.assert_array_equal(a.history[key], b.history[key])
    assert a.history["regret"].shape == (SMALL["horizon"],)
    torch.testing.assert_close(a.theta, b.theta, rtol=0, atol=0)
    assert not np.array_equal(a.history["action"], c.history["action"])


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_lmcts_batched_replica_equals_single_run(config):
    venv = gym.make_vec(ENV_IDS[config], num_envs=4, vectorization_mode="vector_entry_point", device="cpu", **SMALL)
    batched = LMCTS(venv, seed=3, device="cpu", **CONFIGS[config]).learn(venv)
    assert batched.history["regret"].shape == (SMALL["horizon"], 4)
    for r in range(4):
        env = gym.make(ENV_IDS[config], **SMALL)
        single = LMCTS(env, seed=3 + r, device="cpu", **CONFIGS[config]).learn(env)
        np.testing.assert_array_equal(single.history["action"], batched.history["action"][:, r])
        np.testing.assert_array_equal(single.history["regret"], batched.history["regret"][:, r])
        torch.testing.assert_close(single.theta[0], batched.theta[r], rtol=0, atol=0)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_lmcts_save_load_round_trip_continues_identically(config, tmp_path):
    env = gym.make(ENV_IDS[config], **SMALL)
    agent = LMCTS(env, seed=5, device="cpu", **CONFIGS[config]).learn(env, total_timesteps=15)
    agent.save(tmp_path / "agent.pt")
    loaded = LMCTS.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.hyperparameters() == agent.hyperparameters() and loaded.t == agent.t
    torch.testing.assert_close(loaded.theta, agent.theta, rtol=0, atol=0)
    obs, _ = env.reset(seed=11)
    for _ in range(10):
        action, _ = agent.predict(obs)
        assert loaded.predict(obs)[0] == action
        next_obs, reward, _, _, _ = env.step(action)
        agent.update(obs, action, reward)
        loaded.update(obs, action, reward)
        obs = next_obs
    torch.testing.assert_close(loaded.theta, agent.theta, rtol=0, atol=0)


def test_lmcts_predict_does_not_change_the_agent():
    env = gym.make("LinearBandit-v0", **SMALL)
    agent = LMCTS(env, seed=4, device="cpu").learn(env, total_timesteps=10)
    theta, t = agent.theta.clone(), agent.t
    obs, _ = env.reset(seed=9)
    first = [agent.predict(obs)[0] for _ in range(3)]
    assert first[0] == first[1] == first[2] and np.asarray(first[0]).shape == ()
    torch.testing.assert_close(agent.theta, theta, rtol=0, atol=0)
    assert agent.t == t


def test_lmcts_learns_on_a_vector_env_with_total_timesteps():
    venv = gym.make_vec("LinearBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", device="cpu", **SMALL)
    agent = LMCTS(venv, seed=0, device="cpu").learn(venv, total_timesteps=25)
    assert agent.history["regret"].shape == (25, 3) and agent.t == 26
    assert np.isfinite(agent.history["regret"]).all()


# -- errors ------------------------------------------------------------------------------
def test_lmcts_divergence_raises_naming_round_and_step_size():
    env = gym.make("LinearBandit-v0", **SMALL)
    agent = LMCTS(env, seed=0, device="cpu", step_size=0.9, step_schedule="constant")
    # With eta = 0.9 the chain is stable while eta * lambda_max(V) < 1, and V grows every round.
    with pytest.raises(DivergenceError, match=r"round \d+ became NaN or Inf with step size eta_t = 0\.9"):
        agent.learn(env)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "neural"}, r"model must be one of \['glm', 'linear'\], got 'neural'"),
        ({"step_size": 0.0}, r"step_size must be a finite number > 0, got 0\.0"),
        ({"step_size": -0.1}, r"step_size .* got -0\.1"),
        ({"step_size": math.nan}, r"step_size .* got nan"),
        ({"inverse_temperature": 0}, r"inverse_temperature must be a finite number > 0, got 0"),
        ({"inverse_temperature": "1"}, r"inverse_temperature .* got '1'"),
        ({"n_inner_steps": 0}, r"n_inner_steps must be an integer >= 1, got 0"),
        ({"n_inner_steps": 2.5}, r"n_inner_steps .* got 2\.5"),
        ({"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        ({"step_schedule": "exponential"}, r"step_schedule must be one of \['inverse_t', 'constant'\], got 'expo"),
        ({"model": "glm", "batch_size": 0}, r"batch_size must be an integer >= 1, got 0"),
        ({"batch_size": 16}, r"batch_size must be None \(full batch\) for model='linear', got 16"),
    ],
)
def test_lmcts_bad_hyperparameters_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LMCTS(n_arms=4, dim=3, seed=0, device="cpu", **kwargs)


def test_lmcts_paper_inverse_temperature_scaling():
    assert paper_inverse_temperature(1e-3, 20, 10_000) == pytest.approx(1 / (1e-3 * 20 * math.log(10_000)))
    with pytest.raises(ValueError, match=r"beta_inv must be a finite number > 0, got -1"):
        paper_inverse_temperature(-1, 20, 10_000)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_lmcts_cuda_agrees_with_cpu(config):
    """Same data (the CPU run's actions fed to both), parameters agree to float32 rounding."""
    env = gym.make(ENV_IDS[config], **SMALL)
    cpu = LMCTS(env, seed=2, device="cpu", **CONFIGS[config])
    cuda = LMCTS(env, seed=2, device="cuda", **CONFIGS[config])
    obs, _ = env.reset(seed=2)
    for _ in range(SMALL["horizon"]):
        action, _ = cpu.predict(obs)
        next_obs, reward, _, _, _ = env.step(action)
        cpu.update(obs, action, reward)
        cuda.update(obs, action, reward)
        obs = next_obs
        torch.testing.assert_close(cuda.theta.cpu(), cpu.theta, rtol=1e-3, atol=1e-4)
