"""LangevinOptimizer: exact stationary law on a quadratic, reproducibility, argument errors."""

from __future__ import annotations

import math

import pytest
import torch

from agents import LangevinOptimizer


@pytest.fixture(autouse=True)
def kernels():
    """LangevinOptimizer is plain torch (no kernel): one run (overrides conftest.py's two-way fixture)."""

# A quadratic loss L(w) = (w - mu)^T Q (w - mu) on each row w of an nn.Linear weight: every
# row is an independent chain. The discrete chain w <- w - eta 2 Q (w - mu) + sqrt(2 eta / beta) eps
# is stationary at N(mu, S) with S = (2 beta)^-1 Q^-1 (I - eta Q)^-1 (solve S = M S M + 2 eta / beta I
# with M = I - 2 eta Q).
MU = torch.tensor([0.5, -1.0])
Q = torch.tensor([[2.0, 0.6], [0.6, 1.0]])
BETA = 4.0
N_CHAINS = 20_000


def _stationary_cov(eta: float) -> torch.Tensor:
    eye = torch.eye(2, dtype=torch.float64)
    q = Q.double()
    return torch.linalg.inv(q) @ torch.linalg.inv(eye - eta * q) / (2 * BETA)


def _quadratic_chains(step_sizes: list[float], seed: int = 0) -> torch.Tensor:
    model = torch.nn.Linear(2, N_CHAINS, bias=False)  # weight (N, 2): one chain per row
    with torch.no_grad():
        model.weight.copy_(MU.expand(N_CHAINS, 2))
    opt = LangevinOptimizer(model.parameters(), step_size=step_sizes[0], inverse_temperature=BETA,
                            generator=torch.Generator().manual_seed(seed))
    for eta in step_sizes:
        opt.param_groups[0]["step_size"] = eta
        opt.zero_grad()
        diff = model.weight - MU  # (N, 2)
        ((diff @ Q) * diff).sum().backward()
        opt.step()
    return model.weight.detach().double()


def _assert_gaussian_law(samples: torch.Tensor, mean: torch.Tensor, cov: torch.Tensor) -> None:
    """Sample mean and covariance within 5 standard errors of the exact values.

    For N Gaussian samples the mean's standard error is sqrt(S_ii / N) and the sample
    covariance's is sqrt((S_ii S_jj + S_ij^2) / N); 5 s.e. has a false-alarm rate below 1e-5
    per entry, while a missing factor 2 or a frozen noise scale is off by tens of s.e.
    """
    n = samples.shape[0]
    mean_se = (cov.diagonal() / n).sqrt()
    assert ((samples.mean(0) - mean).abs() <= 5 * mean_se).all(), (samples.mean(0), mean)
    var = cov.diagonal()
    cov_se = ((var[:, None] * var[None, :] + cov**2) / n).sqrt()
    emp = torch.cov(samples.T)
    assert ((emp - cov).abs() <= 5 * cov_se).all(), (emp, cov)


def test_langevin_quadratic_chain_matches_exact_stationary_law():
    eta = 0.1  # eta * Q has eigenvalues up to 0.23: the (I - eta Q)^-1 term is a visible 30% effect
    samples = _quadratic_chains([eta] * 150)  # contraction (1 - 2 eta q_min)^150 < 1e-6
    _assert_gaussian_law(samples, MU.double(), _stationary_cov(eta))


def test_langevin_noise_follows_changed_step_size():
    # After the step size drops from 0.2 to 0.02 the law is the one of eta = 0.02; noise frozen at
    # eta_0 would give a covariance 10x too large.
    samples = _quadratic_chains([0.2] * 50 + [0.02] * 1000)
    _assert_gaussian_law(samples, MU.double(), _stationary_cov(0.02))


def test_langevin_same_generator_seed_gives_identical_trajectory():
    def trajectory(seed: int) -> list[torch.Tensor]:
        torch.manual_seed(123)  # same initial weights; the global RNG is not used by the steps
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        opt = LangevinOptimizer(model.parameters(), step_size=1e-2, inverse_temperature=10.0,
                                generator=torch.Generator().manual_seed(seed))
        x, y = torch.linspace(-1, 1, 32).reshape(8, 4), torch.ones(8, 1)
        out = []
        for _ in range(5):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            torch.manual_seed(999)  # disturbing the global RNG must not matter
            opt.step()
            out.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
        return out

    a, b, c = trajectory(0), trajectory(0), trajectory(1)
    for u, v in zip(a, b, strict=True):
        torch.testing.assert_close(u, v, rtol=0, atol=0)
    assert not torch.equal(a[-1], c[-1])


def test_langevin_skips_parameters_without_gradient():
    w = torch.nn.Parameter(torch.ones(3))
    opt = LangevinOptimizer([w], step_size=0.1, inverse_temperature=1.0)
    opt.step()
    torch.testing.assert_close(w.detach(), torch.ones(3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"step_size": 0.0}, r"step_size must be a finite number > 0, got 0\.0"),
        ({"step_size": -1e-3}, r"step_size .* got -0\.001"),
        ({"step_size": math.nan}, r"step_size .* got nan"),
        ({"inverse_temperature": 0}, r"inverse_temperature must be a finite number > 0, got 0"),
        ({"inverse_temperature": math.inf}, r"inverse_temperature .* got inf"),
        ({"inverse_temperature": True}, r"inverse_temperature .* got True"),
        ({"generator": 0}, r"generator must be a torch.Generator or None, got int"),
    ],
)
def test_langevin_bad_arguments_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LangevinOptimizer([torch.nn.Parameter(torch.zeros(2))], **kwargs)


def test_langevin_bad_step_size_set_later_raises():
    w = torch.nn.Parameter(torch.zeros(2))
    w.grad = torch.ones(2)
    opt = LangevinOptimizer([w], step_size=0.1)
    opt.param_groups[0]["step_size"] = -0.5
    with pytest.raises(ValueError, match=r"step_size .* got -0\.5"):
        opt.step()


def test_langevin_optimizer_and_lmcts_chain_take_the_same_step():
    """The optimizer on one replica's theta and ``langevin_steps`` on a LinearModel, fed the same noise (drawn
    from the same generator state), give bit-identical iterates: both apply ``langevin_update``. ``eta = 1/8``
    and ``beta = 4`` make the noise scale ``sqrt(2 eta / beta) = 1/4`` exact in float32 and float64, so the two
    callers' number types (Python floats, float32 tensors) cannot round it differently."""
    from agents.chains.langevin import langevin_steps
    from agents.models.reward import LinearModel

    eta, beta, n_steps, d = 0.125, 4.0, 6, 3
    model = LinearModel(1, d, torch.tensor([1.0]), torch.device("cpu"))
    g = torch.Generator().manual_seed(5)
    for _ in range(4):
        model.add(torch.randn(1, d, generator=g) / 4, torch.randn(1, generator=g))
    theta0 = torch.randn(1, d, generator=g)

    theta = theta0.clone().requires_grad_()
    opt = LangevinOptimizer([theta], step_size=eta, inverse_temperature=beta,
                            generator=torch.Generator().manual_seed(7))
    for _ in range(n_steps):
        theta.grad = model.gradient(theta.detach())
        opt.step()
    noise = torch.Generator().manual_seed(7)
    eps = torch.stack([torch.randn(1, d, generator=noise) for _ in range(n_steps)], dim=1)  # (1, K, d)
    chain = langevin_steps(model, theta0, torch.tensor([eta]), torch.tensor([beta]), eps)
    assert torch.equal(theta.detach(), chain)
    assert not torch.equal(chain, theta0)
