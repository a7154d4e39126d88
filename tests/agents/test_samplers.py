"""The posterior samplers after LMC-TS (agents/samplers.py): their stationary laws on the linear-Gaussian
posterior, FG-LMC-TS's reduction to LMC-TS, HMC with one leapfrog step as MALA, the neural models of the seam,
and their hyperparameters' errors. What every agent promises (seeding, replicas, save/load, CUDA parity) is tested in
test_agent_contract.py.

Statistical tests use fixed seeds; their tolerances are 5 standard errors of the sample moments of N
independent replicas (the replicas have different seeds and share the data), derived in the docstrings.
Whether each agent learns on LinearBanditFixed-v0 is tested in test_samplers_regret.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replicas import feed, linear_rounds, logistic_rounds, make_vec

from agents import FGLMCTS, HMCTS, LMCTS, MALATS, ULMCTS, VITS, EnsembleSampling
from agents.models.feelgood import FeelGood

# The linear-Gaussian posterior of tests/agents/test_lmcts.py: fixed data shared by all replicas, d = 3,
# lambda = 1, V = I + X^T X with eigenvalues in [1.6, 3.6].
FEATURES = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0], [0.8, 0.0, 0.6]])
REWARDS = torch.tensor([0.5, -0.2, 1.0, 0.3, 0.7])
BETA, N_CHAINS = 2.0, 4000


def posterior_fit(cls, num_replicas=N_CHAINS, **kwargs):
    """An agent whose replicas all saw the five rows; the chain runs only after the fifth (``train_every=5``)."""
    agent = cls(n_arms=2, dim=3, num_replicas=num_replicas, inverse_temperature=BETA, lambda_reg=1.0, seed=0,
                device="cpu", **kwargs)
    for x, r in zip(FEATURES, REWARDS, strict=True):
        obs = torch.stack([x, -x]).expand(num_replicas, 2, 3)  # (R, K, d)
        agent.update(obs, torch.zeros(num_replicas, dtype=torch.int64), r.expand(num_replicas))
    return agent


def misfit(samples: torch.Tensor, penalty: torch.Tensor | None = None) -> tuple[float, float]:
    """Largest |error| in standard errors of the sample mean and covariance of ``samples`` (N, 3) against the exact
    posterior N(V^-1 b, (2 beta)^-1 V^-1), ``V = diag(penalty) + X^T X`` (penalty: lambda = 1 for each feature by
    default): s.e. sqrt(S_ii / N) for the mean, sqrt((S_ii S_jj + S_ij^2) / N) for the covariance (Gaussian
    samples). Under the exact law each entry exceeds 5 with probability < 1e-6."""
    penalty = torch.ones(3) if penalty is None else penalty
    v = torch.diag(penalty.double()) + FEATURES.double().T @ FEATURES.double()
    mean = torch.linalg.solve(v, FEATURES.double().T @ REWARDS.double())
    cov = torch.linalg.inv(v) / (2 * BETA)
    s, n = samples.double(), samples.shape[0]
    var = cov.diagonal()
    z_mean = ((s.mean(0) - mean).abs() / (var / n).sqrt()).max().item()
    z_cov = ((torch.cov(s.T) - cov).abs() / ((var[:, None] * var[None, :] + cov**2) / n).sqrt()).max().item()
    return z_mean, z_cov


# Step eta = 0.1: eta V reaches 0.36, so LMC-TS's chain is stationary at a covariance 56% too wide in one
# direction (test_lmcts.py): a 20-standard-error effect at N = 4000, which the Metropolis samplers must remove.
EXACT = {"step_size": 0.1, "step_schedule": "constant", "train_every": 5}


def test_lmc_chain_at_this_step_size_misses_the_posterior():
    """The power of the next test: the unadjusted chain at the same step fails its criterion."""
    z_mean, z_cov = misfit(posterior_fit(LMCTS, n_inner_steps=60, **EXACT).theta)
    assert z_cov > 10


@pytest.mark.parametrize(("cls", "kwargs"), [(MALATS, {"n_inner_steps": 100}),
                                            (HMCTS, {"n_inner_steps": 40, "n_leapfrog": 3})], ids=["MALA", "HMC"])
def test_metropolis_samplers_are_stationary_at_the_exact_posterior(cls, kwargs):
    """MALA and HMC leave N(V^-1 b, (2 beta)^-1 V^-1) invariant exactly, whatever the step: after the round's
    chain (from round 1's prior sample, forgotten after 100 MALA steps at acceptance ~0.9, each contracting the
    slowest direction by about 1 - 2 eta 1.6 = 0.68 when accepted; HMC: 40 trajectories of 3 leapfrog steps)
    the N replicas are N independent draws of it: every mean and covariance entry within 5 standard errors."""
    agent = posterior_fit(cls, **kwargs, **EXACT)
    z_mean, z_cov = misfit(agent.theta)
    assert z_mean < 5 and z_cov < 5, (z_mean, z_cov)
    rate = agent.acceptance_rate
    assert bool(((rate > 0) & (rate <= 1)).all()) and 0.5 < rate.mean().item() < 1, rate.mean()


def test_ulmc_approaches_the_posterior_as_the_step_shrinks():
    """Underdamped Langevin keeps a step-size bias: at eta = 0.1 (h = 0.32) the covariance misses by more than
    5 standard errors; at eta = 0.001 (h = 0.032, friction 0.1 per step: gamma = 3.2, near critical damping
    2 sqrt(2 * 1.6) = 3.6 of the slowest direction; 500 steps are 16 time units, 9 relaxation times) the bias
    is below the noise of N = 4000 replicas."""
    coarse = misfit(posterior_fit(ULMCTS, n_inner_steps=100, **EXACT).theta)
    fine = misfit(posterior_fit(ULMCTS, n_inner_steps=500, friction=0.1, **{**EXACT, "step_size": 0.001}).theta)
    assert coarse[1] > 5 and fine[1] < coarse[1] / 2, (coarse, fine)
    assert fine[0] < 5 and fine[1] < 5, fine


def test_ensemble_members_are_exact_posterior_samples_for_the_linear_model():
    """Member m solves V theta = b + sum_s z_{s,m} x_s + lambda theta_{0,m} with z ~ N(0, 1/(2 beta)) and
    theta_0 ~ N(0, I/(2 beta lambda)): mean V^-1 b, covariance V^-1 (X^T X + lambda I) V^-1 / (2 beta) =
    (2 beta)^-1 V^-1. 400 replicas of 10 members are 4000 independent draws."""
    agent = posterior_fit(EnsembleSampling, num_replicas=400, n_members=10, scale_features=False)
    z_mean, z_cov = misfit(agent.theta)
    assert z_mean < 5 and z_cov < 5, (z_mean, z_cov)


def test_ensemble_members_are_exact_posterior_samples_with_scaled_features():
    """At the defaults the penalty is lambda D (D: each feature's mean square over the rows shown, renewed at
    rounds 2, 4, 8, ...) and theta_0 = D^(-1/2) u, u ~ N(0, I/(2 beta lambda)): lambda D theta_0 ~ N(0, lambda D /
    (2 beta)), so member m is an exact draw of N(V^-1 b, (2 beta)^-1 V^-1) with V = lambda D + X^T X. The rows'
    scales (0.50-0.68) are not 1, and the plain posterior (penalty lambda) fails the same criterion."""
    agent = posterior_fit(EnsembleSampling, num_replicas=400, n_members=10)
    scales = agent.scaling.scales[0]  # D, the same for every replica (the same rows)
    assert torch.equal(agent.scaling.scales, scales.expand_as(agent.scaling.scales))
    assert not torch.allclose(scales, torch.ones(3), atol=0.1), scales
    z_mean, z_cov = misfit(agent.theta, penalty=scales)
    assert z_mean < 5 and z_cov < 5, (z_mean, z_cov)
    assert max(misfit(agent.theta)) > 5


def test_vits_moves_to_the_gaussian_fixed_point_of_its_update():
    """VITS on the linear-Gaussian posterior (Hessian H = 2 V): the mean update is exact gradient descent, so mu
    reaches V^-1 b; z is fresh at every step and h_i = sum_j H_ij z_i z_j s_j / s_i, so E[s^2] follows the linear
    recursion E[s'^2] = (I - 2 eta diag(H) + eta^2 (2 diag(H)^2 + H o H)) E[s^2] + 2 eta / beta, whose fixed point
    is (2 / beta) (2 diag(H) - eta (2 diag(H)^2 + H o H))^-1 1 (contraction about 0.7 per step at eta = 0.05: 200
    steps forget the prior). Over 4000 replicas each coordinate's mean variance lies within 5 standard errors
    of it (s.e. from the replicas' spread)."""
    eta = 0.05
    agent = posterior_fit(VITS, n_inner_steps=200, **{**EXACT, "step_size": eta})
    v = torch.eye(3, dtype=torch.float64) + FEATURES.double().T @ FEATURES.double()
    torch.testing.assert_close(agent.mean.double(), torch.linalg.solve(v, FEATURES.double().T @ REWARDS.double())
                               .expand(N_CHAINS, 3), rtol=1e-4, atol=1e-4)
    h = 2 * v
    a = 2 * torch.diag(h.diagonal()) - eta * (2 * torch.diag(h.diagonal() ** 2) + h * h)
    fixed_point = (2 / BETA) * torch.linalg.solve(a, torch.ones(3, dtype=torch.float64))
    var = agent.variance.double()
    z = ((var.mean(0) - fixed_point).abs() / (var.std(0) / N_CHAINS**0.5)).max().item()
    assert z < 5, (var.mean(0), fixed_point)
    # the draw is mu + s z': its spread is the variational one, not the posterior's
    torch.testing.assert_close(agent.theta.double().var(0), var.mean(0), rtol=0.1, atol=0.0)


# -- FG-LMC-TS ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("env_id", "kwargs"), [("LinearBandit-v0", {}), ("LogisticBandit-v0", {"model": "glm"}),
                                                ("LinearBandit-v0", {"model": "mlp", "model_kwargs": {"hidden": [8]}}),
                                                ("LinearBandit-v0", {"model": "mlp", "model_kwargs": {"hidden": [8]},
                                                                     "batch_size": None})],
                         ids=["linear", "glm-minibatch", "mlp", "mlp-full-batch"])
def test_fglmcts_with_lambda_zero_is_lmcts_bit_for_bit(env_id, kwargs):
    sizes = {"n_arms": 5, "dim": 4, "horizon": 30}
    runs = []
    for cls, extra in ((LMCTS, {}), (FGLMCTS, {"lambda_fg": 0.0})):
        env = make_vec(env_id, 3, sizes)
        runs.append(cls(env, seed=2, device="cpu", n_inner_steps=10, **kwargs, **extra).learn(env))
    assert torch.equal(runs[0].theta, runs[1].theta)
    np.testing.assert_array_equal(runs[0].history["action"], runs[1].history["action"])


def test_fglmcts_replica_with_lambda_zero_follows_lmcts_in_a_mixed_batch(kernels):
    """Replica 0 (lambda_fg = 0) of a batch whose replica 1 feels good runs the feel-good chain with a zero
    term: LMC-TS's numbers, bit for bit in plain torch (with the kernels, LMC-TS's own chain is a compiled
    kernel: equal up to float32 rounding). Replica 1 moves away."""
    _, contexts, actions, _, rewards = linear_rounds(40, 2, 6, 4, seed=1, noise=0.3)
    fg = FGLMCTS(n_arms=6, dim=4, num_replicas=2, seed=[5, 5], device="cpu", n_inner_steps=20, lambda_fg=[0.0, 1.0])
    lmc = LMCTS(n_arms=6, dim=4, num_replicas=1, seed=5, device="cpu", n_inner_steps=20)
    feed(fg, contexts, actions, rewards)
    feed(lmc, contexts[:, :1], actions[:, :1], rewards[:, :1])
    if kernels == "kernels-off":
        assert torch.equal(fg.theta[0], lmc.theta[0])
    else:
        torch.testing.assert_close(fg.theta[0], lmc.theta[0], rtol=1e-4, atol=1e-4)
    assert (fg.theta[1] - lmc.theta[0]).abs().max() > 1e-2


def test_fglmcts_full_batch_mlp_keeps_lmcts_chain_beside_its_feel_good_batches():
    """With a full-batch model the feel-good term draws its own mini-batches; the model's loss, its preconditioner
    and its step bound stay LMC-TS's full-batch ones. So replica 0 (lambda_fg = 0) of a batch whose replica 1 feels
    good is LMC-TS's replica 0 of the same batch size bit for bit (before the fix it took the step bound of a
    mini-batch that its full-batch gradient never used), and replica 1 moves away."""
    _, contexts, actions, _, rewards = linear_rounds(40, 2, 6, 4, seed=1, noise=0.3)
    # step 0.05 (five times the default): the old bound of a 4-row mini-batch binds, and differs from no bound
    kwargs = {"model": "mlp", "model_kwargs": {"hidden": [8]}, "batch_size": None, "n_inner_steps": 5,
              "step_size": 0.05, "n_arms": 6, "dim": 4, "num_replicas": 2, "seed": [5, 5], "device": "cpu"}
    fg = FGLMCTS(lambda_fg=[0.0, 1.0], feel_good_batch_size=4, **kwargs)
    lmc = LMCTS(**kwargs)
    feed(fg, contexts, actions, rewards)
    feed(lmc, contexts, actions, rewards)
    assert torch.equal(fg.theta[0], lmc.theta[0])
    assert (fg.theta[1] - lmc.theta[1]).abs().max() > 1e-2


@pytest.mark.parametrize("model", ["linear", "glm"])
def test_feel_good_closed_form_gradient_equals_autograd(model):
    """For scores x . theta the feel-good gradient is lambda_fg sum_s [max < b] x_s*; autograd of the term agrees
    (random arms: no ties, and rows on both sides of the cap b = 0.3)."""
    contexts, actions, _, rewards = logistic_rounds(12, 3, 5, 4, seed=3)
    agent = FGLMCTS(n_arms=5, dim=4, num_replicas=3, seed=0, device="cpu", model=model, lambda_fg=[0.5, 1.0, 2.0],
                    feel_good_cap=0.3, n_inner_steps=2, **({"batch_size": None} if model == "glm" else {}))
    feed(agent, contexts, actions, rewards)
    fg = FeelGood(agent.model, agent.potential.contexts, agent.lambda_fg, 0.3, own_batches=False, batch_size=None)
    theta = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    with torch.enable_grad():
        p = theta.clone().requires_grad_()
        (expected,) = torch.autograd.grad(fg.feel_good(p).sum(), p)
    best = torch.einsum("rnkd,rd->rnk", agent.potential.contexts.rows(), theta).amax(dim=2)
    assert bool((best < 0.3).any()) and bool((best > 0.3).any())
    torch.testing.assert_close(fg.feel_good_gradient(theta), expected, rtol=1e-5, atol=1e-5)
    batch = torch.tensor([[0, 3, 3], [1, 2, 11], [5, 5, 5]])
    with torch.enable_grad():
        p = theta.clone().requires_grad_()
        (expected,) = torch.autograd.grad(fg.feel_good(p, batch).sum(), p)
    torch.testing.assert_close(fg.feel_good_gradient(theta, batch), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model", ["linear", "glm"])
def test_feel_good_gradient_with_repeated_arm_sets_equals_autograd(model, kernels):
    """A run of equal arm sets is stored once and scored once per step, weighted by its rounds in the sum: the
    gradient still equals autograd of the definition (every round's set scored), full sum and mini-batches.
    Replica 0 keeps one arm set for all 12 rounds (1 set stored), replica 1 changes it every 4th round (3),
    replica 2 every round (12): both of the gradient's paths (the distinct sets scored, or the rounds' sets
    gathered) run. With the kernels off every round's set is stored (12 each) and the gradient is autograd's.
    Float32 sums in another order: tolerance 1e-5."""
    contexts, actions, _, rewards = logistic_rounds(12, 3, 5, 4, seed=4)
    contexts[:, 0] = contexts[0, 0]
    contexts[:, 1] = contexts[torch.arange(12) // 4 * 4, 1]
    agent = FGLMCTS(n_arms=5, dim=4, num_replicas=3, seed=0, device="cpu", model=model, lambda_fg=[0.5, 1.0, 2.0],
                    feel_good_cap=0.3, n_inner_steps=2, **({"batch_size": None} if model == "glm" else {}))
    feed(agent, contexts, actions, rewards)
    assert agent.potential.contexts.n_sets.tolist() == ([1, 3, 12] if kernels == "kernels-on" else [12, 12, 12])
    torch.testing.assert_close(agent.potential.contexts.rows(), contexts.transpose(0, 1))
    fg = FeelGood(agent.model, agent.potential.contexts, agent.lambda_fg, 0.3, own_batches=False, batch_size=None)
    theta = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    best = torch.einsum("rnkd,rd->rnk", agent.potential.contexts.rows(), theta).amax(dim=2)
    assert bool((best < 0.3).any()) and bool((best > 0.3).any())
    for batch in (None, torch.tensor([[0, 3, 3, 7], [1, 2, 11, 11], [5, 5, 5, 0]]), torch.tensor([[4] * 20] * 3)):
        with torch.enable_grad():
            p = theta.clone().requires_grad_()
            (expected,) = torch.autograd.grad(fg.feel_good(p, batch).sum(), p)
        torch.testing.assert_close(fg.feel_good_gradient(theta, batch), expected, rtol=1e-5, atol=1e-5)


def test_fglmcts_fixed_arm_set_is_stored_once_and_saved(tmp_path, kernels):
    """On LinearBanditFixed-v0 every replica stores one arm set however many rounds it plays (every round's set
    with the kernels off); saved (every round's set, as before) and loaded, it finds the one set again and
    continues bit for bit."""
    env = make_vec("LinearBanditFixed-v0", 2, {"n_arms": 5, "dim": 4, "horizon": 30})
    agent = FGLMCTS(env, seed=3, device="cpu", n_inner_steps=5, lambda_fg=0.5).learn(env)
    stored = 1 if kernels == "kernels-on" else 30
    assert agent.potential.contexts.n_sets.tolist() == [stored] * 2 and len(agent.potential.contexts) == 30
    agent.save(tmp_path / "agent.pt")
    loaded = FGLMCTS.load(tmp_path / "agent.pt", device="cpu")
    sets = loaded.potential.contexts
    assert sets.n_sets.tolist() == [stored] * 2 and sets.counts[:, 0].tolist() == [30 // stored] * 2
    assert torch.equal(loaded.potential.contexts.rows(), agent.potential.contexts.rows())
    obs, _ = env.reset(seed=7)
    for _ in range(3):
        action = agent.predict(obs)[0]
        np.testing.assert_array_equal(action, loaded.predict(obs)[0])
        obs, reward, *_ = env.step(action)
        agent.update(obs, action, reward)
        loaded.update(obs, action, reward)
    assert torch.equal(loaded.theta, agent.theta)


def test_hmc_with_one_leapfrog_step_is_mala():
    """One leapfrog step from (theta, p) with eps = sqrt(2 eta / beta) is MALA's proposal with noise p, and the
    Hamiltonian's change is MALA's log ratio (samplers.py): the same draws give the same chain (float32
    rounding of the two formulas apart; no accept decision lies within it on these rounds)."""
    _, contexts, actions, _, rewards = linear_rounds(30, 3, 6, 4, seed=2, noise=0.3)
    agents = [cls(n_arms=6, dim=4, num_replicas=3, seed=1, device="cpu", n_inner_steps=10, step_size=1.0, **kw)
              for cls, kw in ((MALATS, {}), (HMCTS, {"n_leapfrog": 1, "step_jitter": 0.0}))]
    for agent in agents:
        feed(agent, contexts, actions, rewards)
    torch.testing.assert_close(agents[0].theta, agents[1].theta, rtol=1e-4, atol=1e-4)
    assert torch.equal(agents[0].chain.accepted, agents[1].chain.accepted)
    assert 0.2 < agents[0].acceptance_rate.mean().item() < 1  # a step large enough that some are rejected


SIZES = {"n_arms": 6, "dim": 4, "horizon": 40}


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(x).squeeze(-1)


@pytest.mark.parametrize("cls", [FGLMCTS, MALATS, HMCTS, ULMCTS, EnsembleSampling, VITS], ids=lambda c: c.__name__)
@pytest.mark.parametrize("model", ["mlp", "module"])
def test_neural_models_run_and_save(cls, model, tmp_path):
    """The samplers take the neural models of the seam (an MLP and a user's nn.Module): finite parameters,
    acceptance rates in (0, 1], and a save/load round trip (the module given again)."""
    net = {"model": TinyNet()} if model == "module" else {"model": "mlp", "model_kwargs": {"hidden": [8]}}
    steps = {"n_leapfrog": 2, "n_inner_steps": 3} if cls is HMCTS else {"n_members": 3} if cls is EnsembleSampling \
        else {"n_inner_steps": 5}
    env = make_vec("LinearBandit-v0", 2, SIZES)
    agent = cls(env, seed=0, device="cpu", **net, **steps).learn(env, total_timesteps=15)
    assert bool(torch.isfinite(agent.theta).all())
    if hasattr(agent, "acceptance_rate"):
        assert bool(((agent.acceptance_rate > 0) & (agent.acceptance_rate <= 1)).all()), agent.acceptance_rate
    agent.save(tmp_path / "a.pt")
    loaded = cls.load(tmp_path / "a.pt", device="cpu", **({"model": TinyNet()} if model == "module" else {}))
    assert torch.equal(loaded.theta, agent.theta)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"cls": MALATS, "model": "glm", "batch_size": 8}, "batch_size must be None for MALATS"),
    ({"cls": HMCTS, "n_leapfrog": 0}, "n_leapfrog"),
    ({"cls": ULMCTS, "model": "mlp", "preconditioner": "diagonal"}, "preconditioner must be 'none' for ULMCTS"),
    ({"cls": ULMCTS, "friction": [1.0, -1.0]}, "friction"),
    ({"cls": FGLMCTS, "lambda_fg": -0.5}, "lambda_fg"),
    ({"cls": FGLMCTS, "feel_good_batch_size": 0}, "feel_good_batch_size"),
    ({"cls": EnsembleSampling, "n_members": 0}, "n_members"),
    ({"cls": VITS, "initial_variance": 0.0}, "initial_variance"),
    ({"cls": VITS, "preconditioner": "diagonal"}, "preconditioner must be 'none' for model='linear'"),
    ({"cls": EnsembleSampling, "step_schedule": "cosine"}, "step_schedule"),
])
def test_bad_hyperparameters_raise_named_errors(kwargs, match):
    kwargs = dict(kwargs)
    cls = kwargs.pop("cls")
    with pytest.raises(ValueError, match=match):
        cls(n_arms=3, dim=2, num_replicas=2, seed=0, device="cpu", **kwargs)
