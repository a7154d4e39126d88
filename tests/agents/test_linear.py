"""LinUCB, LinTS and EpsGreedy: oracle fits, feature scaling and per-arm constants, the bonus, the LinTS
posterior, exploration, bad input.

Agents built without an env say ``device="cpu"``: ``"auto"`` would pick a GPU where there is one.
"""

from __future__ import annotations

import math

import pytest
import torch
from replicas import feed, linear_rounds, make_vec

from agents import EpsGreedy, LinTS, LinUCB
from agents.linear import ArmFeatures, one_hot_blocks, with_intercepts

SMALL = {"n_arms": 8, "dim": 5, "horizon": 300}


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy])
def test_ridge_zero_exploration_recovers_theta(cls):
    """Exploration off, noise-free rewards: theta_hat is the ridge solution of
    sum (x^T theta - r)^2 + lambda |theta|^2, and close to theta*."""
    R, K, d, lam = 3, 6, 5, 1e-3
    theta_star, contexts, actions, played, rewards = linear_rounds(200, R, K, d)
    kwargs = {"horizon": 200} if cls is LinTS else {}
    agent = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, exploration_scale=0.0, lambda_reg=lam,
                scale_features=False, **kwargs)
    assert agent.model_dim == d  # K does not divide d: no room for one-hot blocks, no per-arm constants
    feed(agent, contexts, actions, rewards)
    X, y = played.double().transpose(0, 1), rewards.double().T  # (R, T, d), (R, T)
    ridge = torch.linalg.solve(X.mT @ X + lam * torch.eye(d, dtype=torch.float64), (X.mT @ y[..., None]))[..., 0]
    torch.testing.assert_close(agent.theta_hat.double(), ridge, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(agent.theta_hat, theta_star, rtol=0, atol=1e-2)  # ridge bias ~ lam / T
    x = torch.randn(R, K, d, generator=torch.Generator().manual_seed(1))
    action, _ = agent.predict(x)  # with exploration off every agent plays the greedy arm
    assert torch.equal(action, (x * agent.theta_hat[:, None]).sum(-1).argmax(1))


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy])
def test_scaled_ridge_penalises_each_feature_by_its_mean_square(cls):
    """scale_features=True: after round 255 (the next round, 256, is a power of 2) theta_hat is the
    minimiser of sum (x^T theta - r)^2 + lambda sum_j D_jj theta_j^2, D_jj the mean square of feature
    j over all 255 x K rows shown; float64 reference, float32 agent. Feature 0 is 1e-4 times the others
    (mean square ~1e-9, as MagicTelescope's smallest columns): its penalty changes from lambda to ~1e-9
    lambda at the first renewal (a change that float32 rounds to -lambda, leaving V singular)."""
    R, K, d, lam, T = 2, 4, 3, 2.0, 255
    scale = torch.tensor([1e-4, 1.0, 1.0])
    _, contexts, actions, played, rewards = linear_rounds(T, R, K, d, seed=3, noise=0.1)
    contexts, played = contexts * scale, played * scale
    kwargs = {"horizon": T} if cls is LinTS else {}
    agent = cls(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, lambda_reg=lam, **kwargs)
    feed(agent, contexts, actions, rewards)
    D = (contexts.double() ** 2).mean(dim=(0, 2))  # (R, d)
    X, y = played.double().transpose(0, 1), rewards.double().T  # (R, T, d), (R, T)
    ridge = torch.linalg.solve(X.mT @ X + lam * torch.diag_embed(D), (X.mT @ y[..., None]))[..., 0]
    # compared as the coefficients of the unscaled features (theta_j scale_j), all of order 1
    torch.testing.assert_close(agent.theta_hat.double() * scale, ridge * scale, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(agent.prior.double(), lam * D, rtol=1e-5, atol=0)


def test_scaled_linucb_is_unchanged_by_rescaling_a_feature():
    """With scale_features=True, multiplying feature 0 by 1/1000 multiplies the penalty on it by 1e-6,
    so every arm's mean x^T theta_hat and width sqrt(x^T V^-1 x) stay the same (to float32 rounding of
    sums over 200 rounds). Without scaling the ridge all but zeroes the tiny feature's coefficient and the
    means move by far more (checked, so the test would notice scaling doing nothing)."""
    R, K, d, T = 2, 5, 4, 200
    _, contexts, actions, _, rewards = linear_rounds(T, R, K, d, seed=8, noise=0.1)
    scale = torch.tensor([1e-3, 1.0, 1.0, 1.0])
    fed = {}
    for scaled in (True, False):
        for factor in (1.0, scale):
            agent = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, scale_features=scaled)
            feed(agent, contexts * factor, actions, rewards)
            z = contexts[-1] * factor  # (R, K, d)
            width = ((z @ agent.gram_inverse) * z).sum(-1).sqrt()
            fed[scaled, factor is scale] = ((z * agent.theta_hat[:, None]).sum(-1), width)
    for a, b in zip(fed[True, False], fed[True, True], strict=True):
        torch.testing.assert_close(a, b, rtol=2e-3, atol=2e-4)
    assert (fed[False, False][0] - fed[False, True][0]).abs().max() > 0.1


def test_one_hot_block_check_matches_its_definition_row_by_row():
    """``one_hot_blocks`` (with the mask ``ArmFeatures`` makes once, and without) against the definition written
    out: arm ``k``'s row is zero outside columns ``k d / K`` to ``(k + 1) d / K``. Replicas: one-hot blocks, one
    stray entry outside a block, and a NaN outside a block (NaN * 0 is not zero: not one-hot)."""
    R, K, block = 3, 4, 5
    gen = torch.Generator().manual_seed(3)
    contexts = torch.zeros(R, K, K * block)
    for k in range(K):
        contexts[:, k, k * block:(k + 1) * block] = torch.randn(R, block, generator=gen)
    contexts[1, 2, 0] = 0.25  # arm 2's row has an entry in arm 0's block
    contexts[2, 1, 0] = float("nan")  # outside arm 1's block
    expected = torch.tensor([all(bool((torch.cat([row[:k * block], row[(k + 1) * block:]]) == 0).all())
                                 for k, row in enumerate(replica)) for replica in contexts])
    features = ArmFeatures(R, K, K * block, None, torch.device("cpu"))
    assert expected.tolist() == [True, False, False]
    assert torch.equal(one_hot_blocks(contexts), expected)
    assert torch.equal(one_hot_blocks(contexts, features.off_block), expected)
    z = features(contexts)  # constants only where the arms are one-hot blocks
    assert torch.equal(z[:, :, K * block:], torch.eye(K) * expected[:, None, None].float())


def test_one_hot_block_arms_get_a_constant_each():
    """Arms in one-hot blocks (as the classification bandits'): the default adds one constant per arm,
    and a per-arm model with constants fits rewards r = c_k + x . w_k exactly (noise-free, tiny ridge)."""
    R, K, d, T = 2, 3, 2, 400
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(T, R, d, generator=gen)  # one example per round
    contexts = torch.zeros(T, R, K, K * d)
    for k in range(K):
        contexts[:, :, k, k * d:(k + 1) * d] = x
    assert one_hot_blocks(contexts[0]).all() and not one_hot_blocks(torch.ones(R, K, K * d)).any()
    w, c = torch.randn(K, d, generator=gen), torch.tensor([0.5, -1.0, 2.0])
    actions = torch.randint(K, (T, R), generator=gen)
    rewards = c[actions] + (x * w[actions]).sum(-1)  # (T, R)
    agent = LinUCB(None, device="cpu", n_arms=K, dim=K * d, num_replicas=R, seed=0, exploration_scale=0.0,
                   lambda_reg=1e-4)
    assert agent.model_dim == K * d + K
    feed(agent, contexts, actions, rewards)
    torch.testing.assert_close(agent.theta_hat[:, K * d:], c.expand(R, K), rtol=0, atol=1e-2)
    torch.testing.assert_close(agent.theta_hat[:, :K * d], w.reshape(-1).expand(R, -1), rtol=0, atol=1e-2)
    dense = torch.randn(R, K, K * d, generator=gen)  # not blocks: the constants' columns stay zero
    assert torch.equal(agent.features(dense)[:, :, K * d:], torch.zeros(R, K, K))
    assert torch.equal(with_intercepts(dense)[:, :, K * d:], torch.eye(K).expand(R, K, K))
    off = LinUCB(None, device="cpu", n_arms=K, dim=K * d, num_replicas=R, seed=0, intercept=False)
    assert off.model_dim == K * d


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy])
def test_one_hot_block_penalty_does_not_shrink_with_the_number_of_arms(cls):
    """On one-hot-block arms a block's features are zero in the other arms' rows. D_jj is each feature's mean
    square where it is nonzero, so after round 255 (D renewed at 256) the penalty of block k's features is
    lambda times the mean square of the examples' features over the 255 rounds, and of the per-arm constants
    lambda, the penalty of K separate per-arm models, for K = 2 and K = 5 alike (float32 sums: rtol 1e-5). Their
    mean square over all shown rows, the definition before 2026-11-27, is 1 / K of it (the test would fail)."""
    R, d, T, lam = 2, 3, 255, 2.0
    x = torch.randn(T, R, d, generator=torch.Generator().manual_seed(6)) * torch.tensor([1e-3, 1.0, 30.0])
    expected = (x.double() ** 2).mean(dim=0)  # (R, d): every example's feature, as one per-arm model sees it
    for K in (2, 5):
        contexts = torch.zeros(T, R, K, K * d)
        for k in range(K):
            contexts[:, :, k, k * d:(k + 1) * d] = x
        actions = torch.randint(K, (T, R), generator=torch.Generator().manual_seed(7))
        rewards = torch.randn(T, R, generator=torch.Generator().manual_seed(8))
        kwargs = {"horizon": T} if cls is LinTS else {}
        agent = cls(None, device="cpu", n_arms=K, dim=K * d, num_replicas=R, seed=0, lambda_reg=lam, **kwargs)
        feed(agent, contexts, actions, rewards)
        assert agent.model_dim == K * d + K
        prior = agent.prior.double()
        for k in range(K):
            torch.testing.assert_close(prior[:, k * d:(k + 1) * d], lam * expected, rtol=1e-5, atol=0)
        torch.testing.assert_close(prior[:, K * d:], torch.full((R, K), lam, dtype=torch.float64), rtol=0, atol=0)


def test_linucb_bonus_is_nu_t_times_confidence_width():
    """An arm's index is x^T theta_hat + c sqrt(log t) sqrt(x^T V^-1 x)."""
    R, K, d = 1, 2, 3
    agent = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, exploration_scale=0.5)
    _, contexts, actions, _, rewards = linear_rounds(9, R, K, d, seed=4)
    feed(agent, contexts, actions, rewards)  # now t = 10
    assert agent.bonus_scale().item() == pytest.approx(0.5 * math.sqrt(math.log(10)))
    v_inv = agent.gram_inverse[0].double()
    gen = torch.Generator().manual_seed(5)
    for _ in range(20):  # arms where the mean and the width disagree: the index decides
        x = torch.randn(2, d, dtype=torch.float64, generator=gen)
        index = x @ agent.theta_hat[0].double() + agent.bonus_scale().item() * ((x @ v_inv) * x).sum(-1).sqrt()
        if abs(index[0] - index[1]) > 1e-4:
            assert int(agent.predict(x.float().numpy())[0]) == int(index.argmax())


def test_sherman_morrison_and_potter_updates_match_linalg_inv():
    R, K, d = 4, 10, 8
    _, contexts, actions, played, rewards = linear_rounds(1000, R, K, d, seed=6)
    linucb = LinUCB(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, scale_features=False)
    lints = LinTS(None, device="cpu", n_arms=K, dim=d, num_replicas=R, seed=0, horizon=1000, scale_features=False)
    feed(linucb, contexts, actions, rewards)
    feed(lints, contexts, actions, rewards)
    X = played.double().transpose(0, 1)  # (R, T, d)
    gram = X.mT @ X + torch.eye(d, dtype=torch.float64)  # (R, d, d)
    torch.testing.assert_close(linucb.gram, gram)  # V itself, kept in float64 from the float32 rows
    # float32 rank-one updates: errors grow like sqrt(T) eps32 |V^-1|; 1e-5 absolute is ~100x that.
    torch.testing.assert_close(linucb.gram_inverse.double(), torch.linalg.inv(gram), rtol=1e-4, atol=1e-5)
    root = lints.gram_inverse_root.double()  # S with S S^T = V^-1 (Potter's updates)
    torch.testing.assert_close(root @ root.mT, torch.linalg.inv(gram), rtol=1e-4, atol=1e-5)


def test_lints_samples_have_covariance_v2_gram_inverse():
    """theta_t ~ N(theta_hat, v^2 V^-1), v = c sqrt(log T), over N = 20,000 replicas fed the same data.

    Whitened with an independent float64 factor of V, w = L^T (theta - theta_hat) / v must be
    N(0, I): each mean has sd 1/sqrt(N), each covariance entry sd <= sqrt(2/N); bounds 5 sd. A
    wrong scale (v instead of v^2, V instead of V^-1, a factor 2) moves entries by far more.
    """
    N, K, d, T = 20_000, 5, 4, 500
    agent = LinTS(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=11, exploration_scale=0.3, horizon=T,
                  scale_features=False)
    v = 0.3 * math.sqrt(math.log(T))
    torch.testing.assert_close(agent.posterior_scale, torch.full((N,), v))
    _, contexts, actions, played, rewards = linear_rounds(30, 1, K, d, seed=7, noise=0.1)
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        agent.update(x.expand(N, K, d), a.expand(N), r.expand(N))
    X, y = played[:, 0].double(), rewards[:, 0].double()  # (T, d), (T,)
    gram = X.T @ X + torch.eye(d, dtype=torch.float64)
    theta_hat = torch.linalg.solve(gram, X.T @ y)
    w = (agent.sample_theta().double() - theta_hat) @ torch.linalg.cholesky(gram) / v  # (N, d)
    assert w.mean(0).abs().max() < 5 / math.sqrt(N)
    assert (torch.cov(w.T) - torch.eye(d, dtype=torch.float64)).abs().max() < 5 * math.sqrt(2 / N)


def test_lints_draws_differ_between_rounds_and_not_within_one():
    agent = LinTS(None, device="cpu", n_arms=4, dim=3, num_replicas=2, seed=0, horizon=100)
    first, again = agent.sample_theta(), agent.sample_theta()
    assert torch.equal(first, again)  # predict does not change the agent
    agent.update(torch.ones(2, 4, 3), [0, 1], [1.0, 0.0])
    assert not torch.equal(first, agent.sample_theta())


def test_epsgreedy_explores_at_rate_c_over_sqrt_t():
    """epsilon_t = min(1, c / sqrt(t)). At t = 16, c = 2: epsilon = 0.5, so P(non-greedy arm) =
    0.5 (1 - 1/K) = 0.375 for K = 4; over N = 20,000 replicas the frequency has sd 0.0034 (bound 5 sd)."""
    agent = EpsGreedy(None, device="cpu", n_arms=4, dim=3, seed=0, exploration_scale=2.0)
    assert [agent.exploration_rate(t).item() for t in (1, 4, 16, 64)] == [1.0, 1.0, 0.5, 0.25]
    N, K, d = 20_000, 4, 2
    agent = EpsGreedy(None, device="cpu", n_arms=K, dim=d, num_replicas=N, seed=0, exploration_scale=2.0)
    agent.update(torch.eye(d)[None, :1].expand(N, K, d).contiguous(), torch.zeros(N, dtype=torch.long), torch.ones(N))
    agent.t = 16
    x = torch.zeros(N, K, d)
    x[:, 2, 0] = 1.0  # arm 2 is the unique greedy arm
    action, _ = agent.predict(x)
    assert abs((action != 2).float().mean().item() - 0.375) < 5 * math.sqrt(0.375 * 0.625 / N)


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (LinUCB, {"exploration_scale": -1.0}, r"exploration_scale must be a finite number >= 0, got -1\.0"),
        (LinUCB, {"exploration_scale": float("nan")}, "exploration_scale"),
        (LinUCB, {"exploration_scale": [0.1, 0.2]}, r"exploration_scale must be a number or hold one value per "
                                                    r"replica \(3\), got 2 values"),
        (LinUCB, {"exploration_scale": [0.1, -0.2, 0.3]}, r"exploration_scale .* got -0\.2"),
        (LinUCB, {"lambda_reg": 0.0}, r"lambda_reg must be a finite number > 0, got 0\.0"),
        (LinTS, {"exploration_scale": True}, "exploration_scale"),
        (LinTS, {"horizon": 1}, r"horizon must be an integer >= 2, got 1"),
        (LinTS, {"lambda_reg": float("inf")}, "lambda_reg"),
        (EpsGreedy, {"exploration_scale": "1"}, "exploration_scale"),
        (EpsGreedy, {"lambda_reg": -2}, "lambda_reg"),
        (LinUCB, {"intercept": 1}, r"intercept must be None \(one-hot-block arms only\), True or False, got 1"),
        (LinTS, {"scale_features": "yes"}, r"scale_features must be True or False, got 'yes'"),
    ],
)
def test_bad_hyperparameters_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(make_vec("LinearBandit-v0", 3, SMALL), seed=0, **kwargs)


def test_lints_needs_a_horizon_without_env():
    with pytest.raises(ValueError, match="horizon must be given"):
        LinTS(None, device="cpu", n_arms=3, dim=2, seed=0)
    assert LinTS(make_vec("LinearBandit-v0", 3, SMALL), seed=0).hyperparameters()["horizon"] == SMALL["horizon"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsGreedy])
def test_cuda_agrees_with_cpu(cls):
    """The same recorded rounds on both devices: the estimates agree to float32 rounding."""
    R, K, d, T = 3, 8, 5, 100
    _, contexts, actions, _, rewards = linear_rounds(T, R, K, d, seed=21)
    kwargs = {"horizon": T} if cls is LinTS else {}
    agents = {device: cls(None, n_arms=K, dim=d, num_replicas=R, seed=0, device=device, **kwargs)
              for device in ("cpu", "cuda")}
    for x, a, r in zip(contexts, actions, rewards, strict=True):
        for device, agent in agents.items():
            agent.update(x.to(device), a.to(device), r.to(device))
    torch.testing.assert_close(agents["cuda"].theta_hat.cpu(), agents["cpu"].theta_hat, rtol=1e-4, atol=1e-5)


def test_arm_features_saved_before_the_nonzero_counts_load_with_the_old_scales():
    """A state saved before 2026-11-27 holds ``rows_seen`` (every shown row) instead of per-feature nonzero counts:
    it loads, and its ``D`` is the mean square over all the rows it saw (the rule it was saved under), 1 for a
    feature never seen nonzero."""
    features = ArmFeatures(num_replicas=2, n_arms=3, dim=6, intercept=None, device=torch.device("cpu"))
    square_sum = torch.tensor([[4.0, 0.0, 9.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0], [1.0] * 9])
    features.load_state_dict({"square_sum": square_sum, "rows_seen": torch.tensor(12)})
    expected = torch.where(square_sum > 0, square_sum / 12, 1.0)
    torch.testing.assert_close(features.scales(), expected, rtol=0, atol=0)
