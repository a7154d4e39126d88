"""UCBGLM, GLMTSL and SGDTS: the MLE against scikit-learn, the Laplace draw, SGD-TS's epochs,
bad input, CUDA. Seeding, batching and persistence: ``test_baseline_contract.py``. Agents built
without an env say ``device="cpu"``: these tests check the CPU math, and ``"auto"`` would pick a GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from replicas import make_vec
from sklearn.linear_model import LogisticRegression

import bandit_gym  # noqa: F401  (registers the envs)
from agents import GLMTSL, SGDTS, UCBGLM
from agents.glm import logistic_nll

SMALL = {"n_arms": 8, "dim": 5, "horizon": 300}
AGENTS = [UCBGLM, GLMTSL, SGDTS]


def _logistic_rounds(n_rounds, num_replicas, n_arms, dim, seed=0):
    """Random arms, Bernoulli(sigmoid(x^T theta*)) rewards: ``(T, R, K, d), (T, R), (T, R, d), (T, R)``."""
    gen = torch.Generator().manual_seed(seed)
    theta_star = torch.randn(num_replicas, dim, generator=gen)  # (R, d)
    contexts = torch.randn(n_rounds, num_replicas, n_arms, dim, generator=gen) / 2  # (T, R, K, d)
    actions = torch.randint(n_arms, (n_rounds, num_replicas), generator=gen)  # (T, R)
    played = contexts.gather(2, actions[..., None, None].expand(-1, -1, 1, dim))[:, :, 0]  # (T, R, d)
    p = torch.sigmoid((played * theta_star).sum(-1))  # (T, R)
    rewards = (torch.rand(n_rounds, num_replicas, generator=gen) < p).float()
    return contexts, actions, played, rewards


def _feed(agent, contexts, actions, rewards) -> None:
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x, a, r)


def _sklearn_mle(X: torch.Tensor, y: torch.Tensor, lambda_reg: float) -> torch.Tensor:
    """Penalised MLE of sum NLL + (lambda/2)|theta|^2: scikit-learn's C is 1 / lambda."""
    clf = LogisticRegression(C=1.0 / lambda_reg, fit_intercept=False, tol=1e-12, max_iter=10_000)
    return torch.from_numpy(clf.fit(X.double().numpy(), y.numpy()).coef_[0])


@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL])
def test_glm_mle_matches_sklearn(cls):
    R, K, d, T, lam = 2, 5, 4, 300, 1.0
    contexts, actions, played, rewards = _logistic_rounds(T, R, K, d)
    agent = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=lam)
    _feed(agent, contexts, actions, rewards)
    reference = torch.stack([_sklearn_mle(played[:, r], rewards[:, r], lam) for r in range(R)])  # (R, d)
    # Two warm-started steps per round track the MLE; each step shrinks the error by a factor ~0.2
    # times the MLE's drift per round (O(1/t)), so 1e-2 is a loose bound.
    torch.testing.assert_close(agent.theta_hat.double(), reference, rtol=0, atol=1e-2)
    # Run to convergence: equal up to float32 rounding.
    torch.testing.assert_close(agent.fit_mle(100).double(), reference, rtol=0, atol=1e-5)
    # The history buffer holds exactly the played rounds (it grew from 64 by doubling).
    assert agent.history_contexts.shape[1] == 512
    torch.testing.assert_close(agent.history_contexts[:, :T], played.transpose(0, 1), rtol=0, atol=0)


def test_glmtsl_hessian_matches_reference_at_mle():
    R, K, d, T, lam = 1, 5, 3, 200, 0.5
    contexts, actions, played, rewards = _logistic_rounds(T, R, K, d, seed=1)
    agent = GLMTSL(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=lam)
    _feed(agent, contexts, actions, rewards)
    X = played[:, 0].double()  # (T, d)
    theta = agent.theta_hat[0].double()
    w = torch.sigmoid(X @ theta) * (1 - torch.sigmoid(X @ theta))
    reference = (X * w[:, None]).T @ X + lam * torch.eye(d, dtype=torch.float64)
    torch.testing.assert_close(agent.hessian(agent.theta_hat)[0].double(), reference, rtol=1e-5, atol=1e-5)
    factor = agent.sampling_factor[0].double()  # S with S S^T = H^-1, from the end of the last round
    torch.testing.assert_close(factor @ factor.T, torch.linalg.inv(reference), rtol=1e-4, atol=1e-4)


def test_glmtsl_samples_have_covariance_a2_inverse_hessian():
    """theta_t ~ N(theta_hat, a^2 H^-1) over N = 20,000 replicas in the state of one fitted run.

    Whitened by an independent float64 factor of H, the draws must be N(0, I): means have
    sd 1/sqrt(N), covariance entries sd <= sqrt(2/N); the bounds are 5 sd.
    """
    N, K, d, a = 20_000, 4, 3, 0.7
    contexts, actions, played, rewards = _logistic_rounds(40, 1, K, d, seed=2)
    fitted = GLMTSL(None, device="cpu", n_arms=K, dim=d, seed=3, exploration_scale=a)
    _feed(fitted, contexts, actions, rewards)
    agent = GLMTSL(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=3, exploration_scale=a)
    agent.t, agent.theta_hat = fitted.t, fitted.theta_hat.expand(N, d)
    agent.sampling_factor = fitted.sampling_factor.expand(N, d, d)
    theta_hat = agent.theta_hat[0].double()
    X = played[:, 0].double()
    p = torch.sigmoid(X @ theta_hat)
    hessian = (X * (p * (1 - p))[:, None]).T @ X + torch.eye(d, dtype=torch.float64)
    w = (agent.sample_theta().double() - theta_hat) @ torch.linalg.cholesky(hessian) / a  # (N, d)
    assert w.mean(0).abs().max() < 5 / math.sqrt(N)
    assert (torch.cov(w.T) - torch.eye(d, dtype=torch.float64)).abs().max() < 5 * math.sqrt(2 / N)


def test_logistic_nll_is_stable_for_large_scores():
    X = torch.tensor([[[1000.0, 0.0], [-1000.0, 0.0]]])  # (1, 2, 2)
    y = torch.tensor([[0.0, 1.0]])
    value = logistic_nll(X, y, torch.tensor([[1.0, 0.0]]), lambda_reg=0.0)
    torch.testing.assert_close(value, torch.tensor([2000.0]))  # softplus(1000) + softplus(1000) - 0


def test_sgdts_initial_mle_projection_and_averaging():
    R, K, d, tau = 2, 5, 3, 30
    contexts, actions, played, rewards = _logistic_rounds(tau + 3 * tau, R, K, d, seed=4)
    agent = SGDTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, n_explore_rounds=tau, step_size=50.0,
                  projection_radius=0.1, lambda_reg=1.0)
    _feed(agent, contexts[:tau], actions[:tau], rewards[:tau])
    reference = torch.stack([_sklearn_mle(played[:tau, r], rewards[:tau, r], 1.0) for r in range(R)])
    torch.testing.assert_close(agent.anchor.double(), reference, rtol=0, atol=1e-5)
    iterates = [agent.theta_tilde.clone()]
    for epoch in range(3):
        rounds = slice(tau * (epoch + 1), tau * (epoch + 2))
        _feed(agent, contexts[rounds], actions[rounds], rewards[rounds])
        iterates.append(agent.theta_tilde.clone())
    # A huge step is projected back onto the ball of radius 0.1 around theta_hat_tau ...
    distance = (agent.theta_tilde - agent.anchor).norm(dim=-1)
    torch.testing.assert_close(distance, torch.full((R,), 0.1), rtol=1e-5, atol=1e-6)
    # ... and theta_bar is the mean of theta_hat_tau and the epochs' iterates.
    torch.testing.assert_close(agent.theta_bar, torch.stack(iterates).mean(0), rtol=1e-5, atol=1e-6)


def test_sgdts_explores_uniformly_for_tau_rounds():
    venv = _vec()
    agent = SGDTS(venv, seed=0, n_explore_rounds=40).learn(venv, total_timesteps=40)
    counts = np.bincount(agent.history["action"].ravel(), minlength=SMALL["n_arms"])
    assert counts.min() > 0  # 120 uniform draws over 8 arms: every arm appears (P(miss) < 1e-6)
    assert torch.equal(agent.theta_bar, agent.anchor) and agent.anchor.abs().sum() > 0


def _vec(num_envs=3):
    return make_vec("LogisticBandit-v0", num_envs, SMALL)


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (UCBGLM, {"exploration_scale": -0.5}, r"exploration_scale must be a finite number >= 0, got -0\.5"),
        (UCBGLM, {"n_mle_steps": 0}, r"n_mle_steps must be an integer >= 1, got 0"),
        (UCBGLM, {"n_explore_rounds": -1}, r"n_explore_rounds must be an integer >= 0, got -1"),
        (GLMTSL, {"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        (GLMTSL, {"n_mle_steps": 2.5}, "n_mle_steps"),
        (SGDTS, {"step_size": 0.0}, r"step_size must be a finite number > 0, got 0\.0"),
        (SGDTS, {"n_explore_rounds": 0}, r"n_explore_rounds must be an integer >= 1, got 0"),
        (SGDTS, {"projection_radius": float("inf")}, "projection_radius"),
        (SGDTS, {"exploration_scale": None}, "exploration_scale"),
    ],
)
def test_bad_hyperparameters_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(_vec(), seed=0, **kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", AGENTS)
def test_cuda_agrees_with_cpu(cls):
    # The same recorded rounds on both devices (see the linear baselines' twin of this test):
    # the MLE and the samplers' state agree to float32 rounding.
    R, K, d, T = 3, SMALL["n_arms"], SMALL["dim"], 100
    contexts, actions, _, rewards = _logistic_rounds(T, R, K, d, seed=22)
    agents = {device: cls(None, n_arms=K, dim=d, num_replicas=R, seed=0, device=device)
              for device in ("cpu", "cuda")}
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        for device, agent in agents.items():
            agent.update(x.to(device), a.to(device), r.to(device))
    cpu, cuda = agents["cpu"], agents["cuda"]
    torch.testing.assert_close(cuda.theta_hat.cpu(), cpu.theta_hat, rtol=1e-3, atol=1e-4)
    if cls is not UCBGLM:
        torch.testing.assert_close(cuda.sample_theta().cpu(), cpu.sample_theta(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("cls", [GLMTSL, SGDTS])
def test_batched_draw_equals_single_run_for_odd_dimension(cls):
    """d = 21: a triangular solve against one vector gives batch-size-dependent bits there;
    the draw must still be a per-replica function of the replica's data and seed."""
    R, K, d = 10, 4, 21
    contexts, actions, _, rewards = _logistic_rounds(30, R, K, d, seed=13)
    kwargs = {"n_explore_rounds": 10} if cls is SGDTS else {}
    batched = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=3, exploration_scale=0.5, **kwargs)
    _feed(batched, contexts, actions, rewards)
    for r in (0, 7, R - 1):
        single = cls(None, device="cpu", n_arms=K, dim=d, seed=3 + r, exploration_scale=0.5, **kwargs)
        _feed(single, contexts[:, r], actions[:, r], rewards[:, r])
        assert torch.equal(single.sample_theta()[0], batched.sample_theta()[r])


def test_sgdts_sampling_factor_tracks_the_inverse_design():
    """S S^T = V^-1, V = lambda I + sum x x^T over every round (Potter's updates), and the draw's scale is g S."""
    R, K, d, T, lam = 3, 5, 4, 300, 2.0
    gen = torch.Generator().manual_seed(12)
    agent = SGDTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=lam, exploration_scale=0.3)
    design = lam * torch.eye(d, dtype=torch.float64).expand(R, d, d).clone()
    for _ in range(T):
        contexts = torch.randn(R, K, d, generator=gen)
        actions = torch.randint(0, K, (R,), generator=gen)
        agent.update(contexts, actions, torch.randint(0, 2, (R,), generator=gen).float())
        x = contexts[torch.arange(R), actions].double()
        design += x[:, :, None] * x[:, None, :]
    factor = agent.sampling_factor.double()
    torch.testing.assert_close(factor @ factor.mT, torch.linalg.inv(design), rtol=1e-4, atol=1e-6)
    z = agent._normals(agent.keys, agent.t).double()  # this round's z
    want = agent.theta_bar.double() + 0.3 * (factor @ z[..., None])[..., 0]
    torch.testing.assert_close(agent.sample_theta().double(), want)
