"""LMC-TS: the chain's exact law (Proposition 3.1), the models' gradients, errors."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, DivergenceError
from agents.lmcts import paper_inverse_temperature
from agents.models import LinearModel, LogisticModel

CPU = torch.device("cpu")
SMALL = {"n_arms": 8, "dim": 5, "horizon": 40}

# Fixed data shared by all replicas; d = 3, lambda = 1.
FEATURES = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0], [0.8, 0.0, 0.6]])
REWARDS = torch.tensor([0.5, -0.2, 1.0, 0.3, 0.7])
BETA, N_CHAINS, N_STEPS = 2.0, 10_000, 60


@pytest.mark.parametrize(("schedule", "step_size"), [("constant", 0.1), ("inverse_t", 0.6)])
def test_lmcts_linear_chain_matches_gaussian_posterior(schedule, step_size):
    """After round t the chain is stationary at N(V^-1 b, (2 beta)^-1 V^-1 (I - eta_t V)^-1).

    The paper's (1/beta) V^-1 drops the factor 2 and the discretisation term. Here V has
    eigenvalues in [1.6, 3.6] and eta_t = 0.1, so eta_t V reaches 0.36: the (I - eta V)^-1 term is a
    56% effect and a frozen noise scale (eta_0 = 0.6 instead of eta_6 = 0.1) a 6x one. Each round's
    chain contracts by (1 - 2 eta v_min)^60 < 1e-9, so the warm start is forgotten.
    Tolerance: 5 standard errors of N_CHAINS Gaussian samples: sqrt(S_ii / N) for the mean and
    sqrt((S_ii S_jj + S_ij^2) / N) for the covariance (false-alarm rate < 1e-5 per entry).
    """
    agent = LMCTS(n_arms=2, dim=3, num_replicas=N_CHAINS, step_size=step_size, inverse_temperature=BETA,
                  n_inner_steps=N_STEPS, lambda_reg=1.0, step_schedule=schedule, seed=0, device="cpu")
    for x, r in zip(FEATURES, REWARDS, strict=True):
        obs = torch.stack([x, -x]).expand(N_CHAINS, 2, 3)  # (R, K, d)
        agent.update(obs, torch.zeros(N_CHAINS, dtype=torch.int64), r.expand(N_CHAINS))
    eta = agent.current_step_size(agent.t)[0].item()
    assert eta == pytest.approx(0.1)
    v = torch.eye(3, dtype=torch.float64) + FEATURES.double().T @ FEATURES.double()
    b = FEATURES.double().T @ REWARDS.double()
    mean = torch.linalg.solve(v, b)
    cov = torch.linalg.inv(v) @ torch.linalg.inv(torch.eye(3, dtype=torch.float64) - eta * v) / (2 * BETA)
    samples = agent.theta.double()  # (N, d)
    assert ((samples.mean(0) - mean).abs() <= 5 * (cov.diagonal() / N_CHAINS).sqrt()).all(), (samples.mean(0), mean)
    var = cov.diagonal()
    cov_se = ((var[:, None] * var[None, :] + cov**2) / N_CHAINS).sqrt()
    assert ((torch.cov(samples.T) - cov).abs() <= 5 * cov_se).all(), (torch.cov(samples.T), cov)


@pytest.mark.parametrize("model_class", [LinearModel, LogisticModel])
def test_model_gradient_is_autograd_of_its_loss(model_class):
    """Both models' closed-form gradients equal autograd's gradient of L = sum of losses + lambda |theta|^2;
    a mini-batch of every row is the full batch."""
    g = torch.Generator().manual_seed(1)
    lam = torch.tensor([0.5, 1.0, 2.0])
    model = model_class(3, 4, lam, CPU)
    for _ in range(300):  # past the history's first capacity: it must grow
        model.add(torch.randn(3, 4, generator=g) / 2, (torch.rand(3, generator=g) < 0.5).float())
    theta = torch.randn(3, 4, generator=g)
    torch.testing.assert_close(model.gradient(theta), super(model_class, model).gradient(theta), rtol=1e-4, atol=1e-4)
    if model.supports_minibatch:
        every_row = torch.arange(300).expand(3, 300)
        torch.testing.assert_close(model.gradient(theta, every_row), model.gradient(theta), rtol=1e-5, atol=1e-5)
        assert torch.isfinite(model.loss(torch.full((3, 4), 1e3))).all()  # softplus: no overflow


def test_linear_and_logistic_models_share_the_ridge_convention():
    """With no data both losses are lambda |theta|^2 (not lambda / 2)."""
    theta = torch.tensor([[1.0, 2.0]])
    for model_class in (LinearModel, LogisticModel):
        model = model_class(1, 2, torch.tensor([0.3]), CPU)
        torch.testing.assert_close(model.loss(theta), torch.tensor([0.3 * 5.0]))


def test_lmcts_divergence_raises_naming_round_and_step_size():
    env = gym.make("LinearBandit-v0", **SMALL)
    agent = LMCTS(env, seed=0, device="cpu", step_size=0.9, step_schedule="constant")
    # With eta = 0.9 the chain is stable while eta * lambda_max(V) < 1, and V grows every round.
    with pytest.raises(DivergenceError, match=r"round \d+ became NaN or Inf with step size eta_t = 0\.9 \(replica 0"):
        agent.learn(env)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "neural"}, r"model must be one of \[.*'glm', 'linear'.*\], got 'neural'"),
        ({"step_size": 0.0}, r"step_size must be a finite number > 0, got 0\.0"),
        ({"step_size": -0.1}, r"step_size .* got -0\.1"),
        ({"step_size": math.nan}, r"step_size .* got nan"),
        ({"step_size": [0.1, 0.2]}, r"step_size must be a number or hold one value per replica \(1\), got 2"),
        ({"inverse_temperature": 0}, r"inverse_temperature must be a finite number > 0, got 0"),
        ({"inverse_temperature": "1"}, r"inverse_temperature .* got '1'"),
        ({"n_inner_steps": 0}, r"n_inner_steps must be an integer >= 1, got 0"),
        ({"n_inner_steps": 2.5}, r"n_inner_steps .* got 2\.5"),
        ({"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        ({"step_schedule": "exponential"}, r"step_schedule must be one of \['inverse_t', 'constant'\], got 'expo"),
        ({"model": "glm", "batch_size": 0}, r"batch_size must be an integer >= 1, got 0"),
        ({"batch_size": 16}, r"batch_size must be None \(full batch\) for model='linear', got 16"),
        ({"batch_size": "full"}, r"batch_size .* got 'full'"),
        ({"preconditioner": "full"}, r"preconditioner must be one of \['none', 'diagonal'\], got 'full'"),
        ({"model": "glm", "preconditioner": "diagonal"}, r"preconditioner must be 'none' for model='glm'"),
    ],
)
def test_lmcts_bad_hyperparameters_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LMCTS(n_arms=4, dim=3, seed=0, device="cpu", **kwargs)


def test_lmcts_defaults_keep_a_rounds_cost_flat():
    """The defaults per model: the linear model's K = 100 steps are O(d^2) each; the history models take K steps on
    mini-batches (glm K = 20, B = 64; neural K = 10, B = 32, preconditioned, constant step); batch_size=None is
    still the full batch."""
    def resolved(**kwargs):
        h = LMCTS(n_arms=4, dim=3, seed=0, device="cpu", **kwargs).hyperparameters()
        return h["n_inner_steps"], h["batch_size"], h["step_schedule"], h["preconditioner"]

    assert resolved() == (100, None, "inverse_t", "none")
    assert resolved(model="glm") == (20, 64, "inverse_t", "none")
    assert resolved(model="mlp") == (10, 32, "constant", "diagonal")
    assert resolved(model="glm", batch_size=None, n_inner_steps=100) == (100, None, "inverse_t", "none")
    assert resolved(model="mlp", preconditioner="none", step_schedule="inverse_t")[2:] == ("inverse_t", "none")


def test_lmcts_paper_inverse_temperature_scaling():
    assert paper_inverse_temperature(1e-3, 20, 10_000) == pytest.approx(1 / (1e-3 * 20 * math.log(10_000)))
    with pytest.raises(ValueError, match=r"beta_inv must be a finite number > 0, got -1"):
        paper_inverse_temperature(-1, 20, 10_000)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("model", ["linear", "glm"])
def test_lmcts_cuda_agrees_with_cpu(model):
    """Same data (the CPU run's actions fed to both), parameters agree to float32 rounding."""
    env = gym.make("LinearBandit-v0" if model == "linear" else "LogisticBandit-v0", **SMALL)
    cpu = LMCTS(env, seed=2, device="cpu", model=model, n_inner_steps=20)
    cuda = LMCTS(env, seed=2, device="cuda", model=model, n_inner_steps=20)
    obs, _ = env.reset(seed=2)
    for _ in range(SMALL["horizon"]):
        action, _ = cpu.predict(obs)
        next_obs, reward, _, _, _ = env.step(action)
        cpu.update(obs, action, reward)
        cuda.update(obs, action, reward)
        obs = next_obs
        torch.testing.assert_close(cuda.theta.cpu(), cpu.theta, rtol=1e-3, atol=1e-4)
