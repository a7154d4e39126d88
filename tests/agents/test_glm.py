"""UCBGLM, GLMTSL and SGDTS: the MLE against scikit-learn, the Laplace draw, SGD-TS's epochs, bad input.

Agents built without an env say ``device="cpu"``: ``"auto"`` would pick a GPU where there is one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from replicas import feed, logistic_rounds, make_vec
from sklearn.linear_model import LogisticRegression

from agents import GLMTSL, SGDTS, UCBGLM
from agents.models.reward import logistic_gradient, logistic_loss

SMALL = {"n_arms": 8, "dim": 5, "horizon": 300}


def _sklearn_mle(X: torch.Tensor, y: torch.Tensor, lambda_reg: float) -> torch.Tensor:
    """Minimiser of sum NLL + lambda |theta|^2: scikit-learn's penalty is |theta|^2 / (2 C), so C = 1 / (2 lambda)."""
    clf = LogisticRegression(C=1.0 / (2.0 * lambda_reg), fit_intercept=False, tol=1e-12, max_iter=10_000)
    return torch.from_numpy(clf.fit(X.double().numpy(), y.numpy()).coef_[0])


@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL])
@pytest.mark.parametrize("refit_growth", [0.0, 0.02])
def test_glm_mle_matches_sklearn(cls, refit_growth):
    """At round 296, a refit round of the default schedule (g = 0.02), and with a refit every round (g = 0)."""
    R, K, d, T = 2, 5, 4, 296
    contexts, actions, played, rewards = logistic_rounds(T, R, K, d)
    agent = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=[0.5, 1.0],
                refit_growth=refit_growth, scale_features=False)  # lambda ||theta||^2: sklearn's penalty
    feed(agent, contexts, actions, rewards)
    reference = torch.stack([_sklearn_mle(played[:, r], rewards[:, r], lam) for r, lam in enumerate([0.5, 1.0])])
    # Two warm-started steps per round track the MLE (each shrinks the error by ~0.2 against a drift of
    # O(1/t) per round): 1e-2 is loose. Run to convergence, they agree to float32 rounding.
    torch.testing.assert_close(agent.theta_hat.double(), reference, rtol=0, atol=1e-2)
    torch.testing.assert_close(agent.fit_mle(100).double(), reference, rtol=0, atol=1e-5)


def test_refit_schedule_is_geometric_and_its_cost_per_round_is_flat():
    """g = 0.02: every row up to 50 = 1 / g, then n_(k+1) = n_k + ceil(g n_k). The rows the refits pass over,
    sum of n_k, are at most (1 + g) / g + n_0 = 101 per round on average at T = 2,000 and at T = 20,000 (flat);
    g = 0 refits every round (T (T + 1) / 2 rows)."""
    from agents.glm import refit_due

    due = [n for n in range(1, 20_001) if refit_due(n, 0.02)]
    assert due[:50] == list(range(1, 51)) and due[50:53] == [51, 53, 55]
    assert all(b == a + math.ceil(0.02 * a) for a, b in zip(due[49:], due[50:], strict=False))
    for horizon in (2_000, 20_000):
        assert sum(n for n in due if n <= horizon) / horizon <= 1.02 / 0.02 + 50
    assert all(refit_due(n, 0.0) for n in range(1, 500))


def test_glmtsl_between_refits_keeps_the_exact_hessian_at_theta_hat():
    """Between refits theta_hat stays and each new row's mu'(x theta_hat) x x^T is added to H: after 120 rounds
    (refits at 119 and 122, so round 120 is not one) L L^T is the Hessian of the whole history at theta_hat."""
    R, K, d = 2, 5, 4
    contexts, actions, _, rewards = logistic_rounds(120, R, K, d, seed=4)
    agent = GLMTSL(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0)
    feed(agent, contexts[:119], actions[:119], rewards[:119])
    theta_hat = agent.theta_hat.clone()
    feed(agent, contexts[119:], actions[119:], rewards[119:])
    assert torch.equal(agent.theta_hat, theta_hat)
    torch.testing.assert_close(agent.hessian_cholesky @ agent.hessian_cholesky.mT, agent.hessian(theta_hat),
                               rtol=1e-5, atol=1e-4)


def test_logistic_gradient_is_autograd_of_the_loss_and_the_loss_is_stable():
    contexts, actions, played, rewards = logistic_rounds(50, 3, 4, 5, seed=9)
    x, r = played.transpose(0, 1), rewards.T  # (R, n, d), (R, n)
    lam = torch.tensor([0.1, 1.0, 3.0])
    theta = torch.randn(3, 5, generator=torch.Generator().manual_seed(1)).requires_grad_()
    logistic_loss(x, r, theta, lam).sum().backward()
    torch.testing.assert_close(logistic_gradient(x, r, theta.detach(), lam), theta.grad)
    big = torch.tensor([[[1000.0, 0.0], [-1000.0, 0.0]]])  # (1, 2, 2)
    value = logistic_loss(big, torch.tensor([[0.0, 1.0]]), torch.tensor([[1.0, 0.0]]), torch.zeros(1))
    torch.testing.assert_close(value, torch.tensor([2000.0]))  # softplus(1000) + softplus(1000) - 0


def test_glmtsl_samples_have_covariance_a2_inverse_hessian():
    """theta_t ~ N(theta_hat, a^2 H^-1), H = 2 lambda I + sum mu' x x^T at theta_hat, over N = 20,000
    replicas fed the same data. Whitened by an independent float64 factor of H the draws must be
    N(0, I): means sd 1/sqrt(N), covariance entries sd <= sqrt(2/N); bounds 5 sd."""
    N, K, d, a = 20_000, 4, 3, 0.7
    contexts, actions, played, rewards = logistic_rounds(40, 1, K, d, seed=2)
    agent = GLMTSL(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=3, exploration_scale=a,
                   scale_features=False)  # H's penalty 2 lambda I, as written below
    for x, act, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x.expand(N, K, d), act.expand(N), r.expand(N))
    theta_hat = agent.theta_hat[0].double()
    X = played[:, 0].double()
    p = torch.sigmoid(X @ theta_hat)
    hessian = (X * (p * (1 - p))[:, None]).T @ X + 2.0 * torch.eye(d, dtype=torch.float64)
    torch.testing.assert_close(agent.hessian(agent.theta_hat[:1].expand(N, d))[0].double(), hessian,
                               rtol=1e-5, atol=1e-5)
    w = (agent.sample_theta().double() - theta_hat) @ torch.linalg.cholesky(hessian) / a  # (N, d)
    assert w.mean(0).abs().max() < 5 / math.sqrt(N)
    assert (torch.cov(w.T) - torch.eye(d, dtype=torch.float64)).abs().max() < 5 * math.sqrt(2 / N)


def test_sgdts_initial_mle_projection_and_averaging():
    R, K, d, tau = 2, 5, 3, 30
    contexts, actions, played, rewards = logistic_rounds(tau + 3 * tau, R, K, d, seed=4)
    agent = SGDTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, n_explore_rounds=tau, step_size=50.0,
                  projection_radius=[0.1, 0.2], lambda_reg=1.0)
    feed(agent, contexts[:tau], actions[:tau], rewards[:tau])
    reference = torch.stack([_sklearn_mle(played[:tau, r], rewards[:tau, r], 1.0) for r in range(R)])
    torch.testing.assert_close(agent.anchor.double(), reference, rtol=0, atol=1e-5)
    iterates = [agent.theta_tilde.clone()]
    for epoch in range(3):
        rounds = slice(tau * (epoch + 1), tau * (epoch + 2))
        feed(agent, contexts[rounds], actions[rounds], rewards[rounds])
        iterates.append(agent.theta_tilde.clone())
    # A huge step is projected back onto each replica's ball around the anchor ...
    distance = (agent.theta_tilde - agent.anchor).norm(dim=-1)
    torch.testing.assert_close(distance, torch.tensor([0.1, 0.2]), rtol=1e-5, atol=1e-6)
    # ... and theta_bar is the mean of the anchor and the epochs' iterates.
    torch.testing.assert_close(agent.theta_bar, torch.stack(iterates).mean(0), rtol=1e-5, atol=1e-6)


def test_random_rounds_first_per_replica():
    """UCBGLM with tau = [40, 0]: replica 0 plays uniformly for its 40 rounds (40 uniform draws over 8
    arms show at least 6 of them with probability > 0.999); replica 1 follows its estimate from round 1
    and settles on fewer arms."""
    venv = make_vec("LogisticBandit-v0", 2, SMALL)
    agent = UCBGLM(venv, seed=0, n_explore_rounds=[40, 0]).learn(venv, total_timesteps=40)
    assert agent.hyperparameters()["n_explore_rounds"] == [40, 0]
    explorer, learner = agent.history["action"][:, 0], agent.history["action"][:, 1]
    assert len(np.unique(explorer)) >= 6 and len(np.unique(learner[20:])) < len(np.unique(explorer))


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (UCBGLM, {"exploration_scale": -0.5}, r"exploration_scale must be a finite number >= 0, got -0\.5"),
        (UCBGLM, {"n_inner_steps": 0}, r"n_inner_steps must be an integer >= 1, got 0"),
        (UCBGLM, {"n_explore_rounds": -1}, r"n_explore_rounds must be an integer >= 0, got -1"),
        (UCBGLM, {"refit_growth": -0.1}, "refit_growth"),
        (GLMTSL, {"refit_growth": float("nan")}, "refit_growth"),
        (GLMTSL, {"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        (GLMTSL, {"n_inner_steps": 2.5}, "n_inner_steps"),
        (SGDTS, {"step_size": 0.0}, r"step_size must be a finite number > 0, got 0\.0"),
        (SGDTS, {"n_explore_rounds": 0}, r"n_explore_rounds must be an integer >= 1, got 0"),
        (SGDTS, {"n_explore_rounds": [5, 6, 7]}, r"n_explore_rounds must be one integer for all replicas"),
        (SGDTS, {"projection_radius": float("inf")}, "projection_radius"),
        (SGDTS, {"exploration_scale": None}, "exploration_scale"),
    ],
)
def test_bad_hyperparameters_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(make_vec("LogisticBandit-v0", 3, SMALL), seed=0, **kwargs)


@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL, SGDTS])
def test_glm_agent_old_mle_steps_keyword_names_n_inner_steps(cls):
    with pytest.raises(TypeError, match=rf"{cls.__name__} got an unexpected keyword argument 'n_mle_steps'.*"
                                        r"n_inner_steps"):
        cls(n_arms=3, dim=2, device="cpu", n_mle_steps=3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL, SGDTS])
def test_cuda_agrees_with_cpu(cls):
    R, K, d, T = 3, 8, 5, 100
    contexts, actions, _, rewards = logistic_rounds(T, R, K, d, seed=22)
    agents = {device: cls(None, n_arms=K, dim=d, num_replicas=R, seed=0, device=device) for device in ("cpu", "cuda")}
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        for device, agent in agents.items():
            agent.update(x.to(device), a.to(device), r.to(device))
    torch.testing.assert_close(agents["cuda"].theta_hat.cpu(), agents["cpu"].theta_hat, rtol=1e-3, atol=1e-4)


def test_glm_agents_and_lmcts_logistic_model_minimise_one_loss():
    """UCB-GLM's MLE and LMC-TS's ``LogisticModel`` use the one logistic loss: at the MLE run to convergence
    (200 bound-optimisation steps; the test above shows 100 agree with scikit-learn to 1e-5) the model's
    gradient on the same rows vanishes to float32 rounding of a sum of 200 rows (1e-3, against an initial
    gradient of order 10), the model's loss equals ``logistic_loss`` exactly, and a mini-batch of all the rows
    in order gives the full-batch gradient (``scale = n / B = 1``)."""
    from agents.models.reward import LogisticModel

    R, K, d, T = 2, 5, 4, 200
    contexts, actions, played, rewards = logistic_rounds(T, R, K, d, seed=6)
    lam = torch.tensor([0.5, 1.0])
    agent = UCBGLM(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=lam.tolist(),
                   scale_features=False)  # LogisticModel's penalty lambda ||theta||^2
    feed(agent, contexts, actions, rewards)
    theta_hat = agent.fit_mle(200)
    model = LogisticModel(R, d, lam, torch.device("cpu"))
    for x, r in zip(played, rewards, strict=True):
        model.add(x, r)
    assert model.gradient(torch.zeros(R, d)).norm(dim=1).min() > 1.0
    torch.testing.assert_close(model.gradient(theta_hat), torch.zeros(R, d), rtol=0, atol=1e-3)
    x, r = played.transpose(0, 1), rewards.T  # (R, n, d), (R, n)
    assert torch.equal(model.loss(theta_hat), logistic_loss(x, r, theta_hat, lam))
    every_row = torch.arange(T).expand(R, T)
    assert torch.equal(model.gradient(theta_hat, every_row), model.gradient(theta_hat))


def test_glm_random_rounds_play_uniform_randoms_arms():
    """The GLM agents' first ``tau`` rounds draw their arms as UniformRandom does (one ``uniform_arms`` from the
    same stream): the same seed plays the same arms. ``uniform_arms`` is ``floor(u K)`` exactly on the uniforms'
    ``2^-24`` grid (a float32 product is not: it rounds some ``u K`` just below an integer up to it)."""
    from agents import UniformRandom
    from agents.uniform import uniform_arms

    R, K, d, tau = 3, 6, 4, 25
    contexts, actions, _, rewards = logistic_rounds(tau, R, K, d, seed=8)
    glm = UCBGLM(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=11, n_explore_rounds=tau)
    uniform = UniformRandom(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=11)
    played = []
    for x, r in zip(contexts, rewards, strict=True):
        a = glm.predict(x)[0]
        assert torch.equal(a, uniform.predict(x)[0])
        played.append(a)
        glm.update(x, a, r)
        uniform.update(x, a, r)
    assert len(set(torch.cat(played).tolist())) == K
    i = torch.arange(0, 2**24, 3)  # every third uniform of the 2^-24 grid: u = i / 2^24
    u, K = (i.double() / 2**24).float(), 1000
    exact = (i * K) // 2**24  # floor(u K) in integers
    assert torch.equal(uniform_arms(u, K), exact)
    assert not torch.equal((u * K).long(), exact)  # a float32 product rounds some of them up to the next arm
