"""LinUCB, LinTS and EpsGreedy: oracle fits, the LinTS posterior, bad input, CUDA.

Seeding, batching and persistence: ``test_baseline_contract.py``. Agents built without an env say
``device="cpu"``: these tests check the CPU math, and ``"auto"`` would pick a GPU where there is one."""

from __future__ import annotations

import math

import pytest
import torch
from replicas import make_vec

import bandit_gym  # noqa: F401  (registers the envs)
from agents import EpsGreedy, LinTS, LinUCB

SMALL = {"n_arms": 8, "dim": 5, "horizon": 300}
AGENTS = [LinUCB, LinTS, EpsGreedy]


def _feed(agent, contexts, actions, rewards) -> None:
    """Play recorded rounds through ``update``: ``(T, R, K, d), (T, R), (T, R)``."""
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x, a, r)


def _noise_free_rounds(n_rounds, num_replicas, n_arms, dim, seed=0):
    gen = torch.Generator().manual_seed(seed)
    theta_star = torch.randn(num_replicas, dim, generator=gen)  # (R, d)
    contexts = torch.randn(n_rounds, num_replicas, n_arms, dim, generator=gen)  # (T, R, K, d)
    actions = torch.randint(n_arms, (n_rounds, num_replicas), generator=gen)  # (T, R)
    played = contexts.gather(2, actions[..., None, None].expand(-1, -1, 1, dim))[:, :, 0]  # (T, R, d)
    rewards = (played * theta_star).sum(-1)  # (T, R)
    return theta_star, contexts, actions, played, rewards


@pytest.mark.parametrize("cls", AGENTS)
def test_ridge_zero_exploration_recovers_theta(cls):
    """Exploration off, noise-free rewards: theta_hat is the ridge solution and ~theta*."""
    R, K, d, lam = 3, 6, 5, 1e-3
    theta_star, contexts, actions, played, rewards = _noise_free_rounds(200, R, K, d)
    kwargs = {"horizon": 200} if cls is LinTS else {}
    agent = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, exploration_scale=0.0, lambda_reg=lam,
                **kwargs)
    _feed(agent, contexts, actions, rewards)
    X, y = played.double().transpose(0, 1), rewards.double().T  # (R, T, d), (R, T)
    ridge = torch.linalg.solve(X.mT @ X + lam * torch.eye(d, dtype=torch.float64), (X.mT @ y[..., None]))[..., 0]
    torch.testing.assert_close(agent.theta_hat.double(), ridge, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(agent.theta_hat, theta_star, rtol=0, atol=1e-3)  # ridge bias ~ lam / T
    # With exploration off every agent plays the greedy arm.
    x = torch.randn(R, K, d, generator=torch.Generator().manual_seed(1))
    action, _ = agent.predict(x)
    assert torch.equal(action, (x * agent.theta_hat[:, None]).sum(-1).argmax(1))


def test_linucb_zero_bonus_recovers_theta():
    R, K, d = 2, 6, 4
    theta_star, contexts, actions, _, rewards = _noise_free_rounds(100, R, K, d, seed=3)
    agent = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, exploration_scale=0.0, lambda_reg=1e-4)
    _feed(agent, contexts, actions, rewards)
    torch.testing.assert_close(agent.theta_hat, theta_star, rtol=0, atol=1e-3)


def test_linucb_bonus_is_nu_t_times_confidence_width():
    """An arm's index is x^T theta_hat + c sqrt(d log t) sqrt(x^T V^-1 x)."""
    R, K, d = 1, 2, 3
    agent = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, exploration_scale=0.5, lambda_reg=1.0)
    _, contexts, actions, _, rewards = _noise_free_rounds(9, R, K, d, seed=4)
    _feed(agent, contexts, actions, rewards)  # now t = 10
    assert agent.bonus_scale() == pytest.approx(0.5 * math.sqrt(d * math.log(10)))
    # Two arms, one with the larger mean, the other with the larger width: the index decides.
    v_inv = agent.design_inverse[0].double()
    x = torch.randn(2, d, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    index = x @ agent.theta_hat[0].double() + agent.bonus_scale() * torch.sqrt(((x @ v_inv) * x).sum(-1))
    action, _ = agent.predict(x.float().numpy())
    assert int(action) == int(index.argmax())


def test_sherman_morrison_and_square_root_updates_match_linalg_inv():
    R, K, d = 4, 10, 8
    _, contexts, actions, played, rewards = _noise_free_rounds(1000, R, K, d, seed=6)
    linucb = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=1.0)
    lints = LinTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=1.0, horizon=1000)
    _feed(linucb, contexts, actions, rewards)
    _feed(lints, contexts, actions, rewards)
    X = played.double().transpose(0, 1)  # (R, T, d)
    design = X.mT @ X + torch.eye(d, dtype=torch.float64)  # (R, d, d)
    # float32 rank-one updates: errors grow like sqrt(T) * eps32 * |V^-1|; 1e-5 absolute is ~100x that.
    torch.testing.assert_close(linucb.design_inverse.double(), torch.linalg.inv(design), rtol=1e-4, atol=1e-5)
    # LinTS keeps a square root S of V^-1 (Potter's updates): S S^T = V^-1 as closely.
    factor = lints.sampling_factor.double()
    torch.testing.assert_close(factor @ factor.mT, torch.linalg.inv(design), rtol=1e-4, atol=1e-5)


def test_lints_samples_have_covariance_v2_design_inverse():
    """theta_t ~ N(theta_hat, v^2 V^-1), v = c sqrt(d log T), checked over N = 20,000 replicas.

    All replicas see the same data, so they share theta_hat and V but draw independently.
    Whitened with an independent float64 factor of V, w = L^T (theta - theta_hat) / v
    must be N(0, I): each mean has sd 1/sqrt(N) = 0.0071, each covariance entry sd
    <= sqrt(2/N) = 0.01. The bounds are 5 sd (0.035 and 0.05): a wrong scale (v instead
    of v^2, V instead of V^-1, a dropped factor 2) moves entries by far more.
    """
    N, K, d, T = 20_000, 5, 4, 500
    agent = LinTS(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=11, exploration_scale=0.3, lambda_reg=1.0,
                  horizon=T)
    assert agent.posterior_scale == pytest.approx(0.3 * math.sqrt(d * math.log(T)))
    _, contexts, actions, played, rewards = _noise_free_rounds(30, 1, K, d, seed=7)
    rewards = rewards + 0.1 * torch.randn(rewards.shape, generator=torch.Generator().manual_seed(8))
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x.expand(N, K, d), a.expand(N), r.expand(N))
    X, y = played[:, 0].double(), rewards[:, 0].double()  # (T, d), (T,)
    design = X.T @ X + torch.eye(d, dtype=torch.float64)
    theta_hat = torch.linalg.solve(design, X.T @ y)
    samples = agent.sample_theta().double()  # (N, d)
    w = (samples - theta_hat) @ torch.linalg.cholesky(design) / agent.posterior_scale  # (N, d) rows L^T(...)
    assert w.mean(0).abs().max() < 5 / math.sqrt(N)
    cov = torch.cov(w.T)
    assert (cov - torch.eye(d, dtype=torch.float64)).abs().max() < 5 * math.sqrt(2 / N)


def test_lints_draws_differ_between_rounds_and_not_within_one():
    agent = LinTS(None, device="cpu", n_arms=4, dim=3, num_replicas=2, seed=0, horizon=100)
    first, again = agent.sample_theta(), agent.sample_theta()
    assert torch.equal(first, again)  # predict does not change the agent
    agent.update(torch.ones(2, 4, 3), [0, 1], [1.0, 0.0])
    assert not torch.equal(first, agent.sample_theta())


def test_epsgreedy_exploration_rate_schedule():
    agent = EpsGreedy(None, device="cpu", n_arms=4, dim=3, seed=0, exploration_scale=2.0)
    assert [agent.exploration_rate(t) for t in (1, 4, 16, 64)] == [1.0, 1.0, 0.5, 0.25]
    greedy = EpsGreedy(None, device="cpu", n_arms=4, dim=3, seed=0, exploration_scale=0.0)
    assert greedy.exploration_rate(1) == 0.0


def test_epsgreedy_explores_at_rate_c_over_sqrt_t():
    """At t = 16, c = 2: epsilon = 0.5, so P(non-greedy arm) = 0.5 (1 - 1/K) = 0.375 for K = 4.

    Over N = 20,000 replicas the frequency has sd sqrt(0.375 * 0.625 / N) = 0.0034; bound 5 sd.
    """
    N, K, d = 20_000, 4, 2
    agent = EpsGreedy(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=0, exploration_scale=2.0)
    agent.update(torch.eye(d)[None, :1].expand(N, K, d).contiguous(), torch.zeros(N, dtype=torch.long), torch.ones(N))
    agent.t = 16
    x = torch.zeros(N, K, d)
    x[:, 2, 0] = 1.0  # arm 2 is the unique greedy arm
    action, _ = agent.predict(x)
    assert abs((action != 2).float().mean().item() - 0.375) < 5 * math.sqrt(0.375 * 0.625 / N)


def _vec(num_envs=3):
    return make_vec("LinearBandit-v0", num_envs, SMALL)


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (LinUCB, {"exploration_scale": -1.0}, r"exploration_scale must be a finite number >= 0, got -1\.0"),
        (LinUCB, {"exploration_scale": float("nan")}, "exploration_scale"),
        (LinUCB, {"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        (LinTS, {"exploration_scale": True}, "exploration_scale"),
        (LinTS, {"horizon": 0}, r"horizon must be an integer >= 1, got 0"),
        (LinTS, {"lambda_reg": float("inf")}, "lambda_reg"),
        (EpsGreedy, {"exploration_scale": "1"}, "exploration_scale"),
        (EpsGreedy, {"lambda_reg": -2}, "lambda_reg"),
    ],
)
def test_bad_hyperparameters_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(_vec(), seed=0, **kwargs)


def test_lints_needs_a_horizon_without_env():
    with pytest.raises(ValueError, match="horizon must be given"):
        LinTS(None, device="cpu", n_arms=3, dim=2, seed=0)
    assert LinTS(_vec(), seed=0).horizon == SMALL["horizon"]
    assert LinTS(_vec(), seed=0, horizon=50).horizon == 50


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", AGENTS)
def test_cuda_agrees_with_cpu(cls):
    # Both devices learn from the same recorded rounds (their own choices could part at a near-tie,
    # e.g. round 1, where every arm's score is 0): the statistics agree to float32 rounding (CPU:
    # numpy's BLAS, CUDA: torch reductions), and so do TS draws (same random bits on both devices).
    R, K, d, T = 3, SMALL["n_arms"], SMALL["dim"], 100
    _, contexts, actions, _, rewards = _noise_free_rounds(T, R, K, d, seed=21)
    kwargs = {"horizon": T} if cls is LinTS else {}
    agents = {device: cls(None, n_arms=K, dim=d, num_replicas=R, seed=0, device=device, **kwargs)
              for device in ("cpu", "cuda")}
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        for device, agent in agents.items():
            agent.update(x.to(device), a.to(device), r.to(device))
    cpu, cuda = agents["cpu"], agents["cuda"]
    for name in cls.state_names:
        torch.testing.assert_close(getattr(cuda, name).cpu(), getattr(cpu, name), rtol=1e-4, atol=1e-5)
    if cls is LinTS:
        torch.testing.assert_close(cuda.sample_theta().cpu(), cpu.sample_theta(), rtol=1e-4, atol=1e-5)
    probe = contexts[0] * torch.linspace(0.5, 1.5, K)[None, :, None]  # arm norms differ: no near-ties
    assert torch.equal(cuda.predict(probe.cuda())[0].cpu(), cpu.predict(probe)[0])


def test_random_argmax_matches_the_drawn_tie_break_with_and_without_ties():
    """The no-tie shortcut of _math.random_argmax gives what the full draw gives."""
    from agents import _math
    from bandit_gym import _rng

    keys = _rng.seed_to_key(torch.arange(64))
    gen = torch.Generator().manual_seed(0)
    for values in (torch.randn(64, 7, generator=gen), torch.randint(3, (64, 7), generator=gen).float()):
        noise = _rng.uniform(keys, 16, 5, (7,))
        expected = torch.where(values == values.max(1, keepdim=True).values, noise, torch.tensor(-1.0)).argmax(1)
        assert torch.equal(_math.random_argmax(values, keys, 16, 5), expected)
    # Ties among all 7 arms of 4,000 rows: each arm wins with frequency 1/7 (sd 0.0055; bound 5 sd).
    keys = _rng.seed_to_key(torch.arange(4000))
    wins = torch.bincount(_math.random_argmax(torch.zeros(4000, 7), keys, 16, 1), minlength=7) / 4000
    assert (wins - 1 / 7).abs().max() < 5 * math.sqrt((1 / 7) * (6 / 7) / 4000)


def test_lints_batched_draw_equals_single_run_for_odd_dimension():
    """d = 21: a triangular solve against one vector gives batch-size-dependent bits there;
    the draw must still be a per-replica function of the replica's data and seed."""
    R, K, d = 10, 4, 21
    _, contexts, actions, _, rewards = _noise_free_rounds(30, R, K, d, seed=12)
    batched = LinTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=3, horizon=100, exploration_scale=0.5)
    _feed(batched, contexts, actions, rewards)
    for r in (0, 7, R - 1):
        single = LinTS(None, device="cpu", n_arms=K, dim=d, seed=3 + r, horizon=100, exploration_scale=0.5)
        _feed(single, contexts[:, r], actions[:, r], rewards[:, r])
        assert torch.equal(single.sample_theta()[0], batched.sample_theta()[r])
