"""Neural reward models (agents/models/mlp.py) and neural LMC-TS: gradients against autograd, an oracle fit,
seeding, replicas against single runs, the divergence guard, a user's own nn.Module."""

from __future__ import annotations

import pytest
import torch

from agents import LMCTS, DivergenceError, _kernels
from agents.models.mlp import MLP, MLPModel, ModuleModel
from agents.neural import gradient_steps
from bandit_gym import rng

CPU = torch.device("cpu")


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


class TinyNet(torch.nn.Module):
    """A user's network ``(..., d) -> (...)``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(dim, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


def mlp_model(num_replicas, dim, activation="relu", hidden=(6, 5), seed=0, lam=0.5):
    keys = rng.seed_to_key([seed + r for r in range(num_replicas)])
    return MLPModel(num_replicas, dim, torch.full((num_replicas,), lam), CPU, keys=keys, hidden=hidden,
                    activation=activation)


def add_rows(model, n, dim, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        model.add(torch.randn(model.num_replicas, dim, generator=g), torch.randn(model.num_replicas, generator=g))


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
def test_mlp_hand_written_gradient_equals_autograd(activation):
    """The hand-written backward pass (called directly, so both settings of the kernel switch test it) and the
    model's gradient (the path the switch picks) equal autograd of the loss, full batch and a mini-batch with
    repeats."""
    model = mlp_model(3, 4, activation)
    theta = model.initial_params() + 0.1  # away from the initialisation: every unit's gradient is non-trivial
    add_rows(model, 30, 4)
    batch = torch.randint(30, (3, 7), generator=torch.Generator().manual_seed(2))
    for rows in (None, batch):
        with torch.enable_grad():
            p = theta.clone().requires_grad_()
            (expected,) = torch.autograd.grad(model.loss(p, rows).sum(), p)  # (R, p)
        assert expected.abs().amax() > 0.1
        torch.testing.assert_close(_kernels.mlp_gradient(model, theta, rows), expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model.gradient(theta, rows), expected, rtol=1e-5, atol=1e-5)


class SameNet(torch.nn.Module):
    """``mlp_model``'s network (3 -> 6 -> 5 -> 1, leaky ReLU) as a user's module: the same parameter layout."""

    def __init__(self, slope: float) -> None:
        super().__init__()
        act = torch.nn.LeakyReLU(slope)
        self.body = torch.nn.Sequential(torch.nn.Linear(3, 6), act, torch.nn.Linear(6, 5), act, torch.nn.Linear(5, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


def test_mlp_arm_gradients_equal_autograd_per_arm():
    """g(x_k) = df(x_k)/dtheta of every arm and replica (one batched pass) equals autograd arm by arm;
    the user-module path (vmap of grad) gives the same for the same network."""
    model = mlp_model(2, 3, "leaky_relu")
    theta = model.initial_params()
    contexts = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(3))  # (R, K, d)
    mean, g = model.arm_gradients(theta, contexts)
    torch.testing.assert_close(mean, model.scores(theta, contexts))
    for r in range(2):
        for k in range(5):
            p = theta.clone().requires_grad_()
            (expected,) = torch.autograd.grad(model.scores(p, contexts)[r, k], p)
            torch.testing.assert_close(g[r, k], expected[r])
    module = ModuleModel(2, 3, torch.full((2,), 0.5), CPU, keys=rng.seed_to_key([0, 1]),
                         module=SameNet(model.leaky_slope))
    torch.testing.assert_close(module.scores(theta, contexts), mean)  # the same network on the same theta
    module_mean, module_g = module.arm_gradients(theta, contexts)
    torch.testing.assert_close(module_mean, mean)
    torch.testing.assert_close(module_g, g)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
def test_mlp_fits_noise_free_data(activation):
    """Oracle: full-batch gradient descent fits 64 noise-free rewards of a smooth function to a small error.
    (A 16-16 network has ~350 parameters for 64 points; 3000 steps of 0.003 on the summed loss bring the
    mean squared error to ~0.3% of the rewards' variance (measured); the untrained network is at ~140%.)"""
    model = mlp_model(1, 2, hidden=(16, 16), lam=1e-4, activation=activation)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(64, 2, generator=g) * 2 - 1
    y = torch.sin(2 * x[:, 0]) + x[:, 1] ** 2
    for xi, yi in zip(x, y, strict=True):
        model.add(xi[None], yi[None])
    theta = gradient_steps(model, model.initial_params(), torch.tensor([0.003]), 3000)
    error = ((model.scores(theta, x[None])[0] - y) ** 2).mean()
    assert error < 0.01 * y.var(), (error, y.var())


def lmcts(**kwargs):
    return LMCTS(n_arms=4, dim=3, model="mlp", model_kwargs={"hidden": (8, 8)}, n_inner_steps=5, batch_size=4,
                 step_size=0.05, inverse_temperature=100.0, device="cpu", **kwargs)


def feed_rounds(agent, rounds=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(rounds):
        obs = torch.randn(agent.num_replicas, 4, 3, generator=g)
        action = agent.predict(obs)[0]
        agent.update(obs, action, (obs[:, 0, 0] ** 2).expand(agent.num_replicas))


def test_neural_lmcts_seeded_determinism_and_replicas_match_single_runs():
    """Same seed, same numbers; replica r of a batch seeded 5 is the single run seeded 5 + r (up to rounding:
    bmm over 3 replicas and over 1 may round differently; 1e-4 relative covers float32 drift over 12 rounds)."""
    a, b = lmcts(num_replicas=3, seed=5), lmcts(num_replicas=3, seed=5)
    g = torch.Generator().manual_seed(0)
    single = [lmcts(num_replicas=1, seed=5 + r) for r in range(3)]
    for _ in range(12):
        obs = torch.randn(3, 4, 3, generator=g)
        rewards = obs[:, 0, 0] ** 2
        actions = a.predict(obs)[0]
        assert torch.equal(actions, b.predict(obs)[0])
        for agent in (a, b):
            agent.update(obs, actions, rewards)
        for r, s in enumerate(single):
            s.update(obs[r: r + 1], actions[r: r + 1], rewards[r: r + 1])
    assert torch.equal(a.theta, b.theta)
    assert not torch.allclose(a.theta[0], a.theta[1])
    for r, s in enumerate(single):
        torch.testing.assert_close(a.theta[r], s.theta[0], rtol=1e-4, atol=1e-5)


def test_neural_lmcts_initial_network_and_train_every():
    """Round 1 plays the initial network (no prior chain); with train_every=3 the sample changes only
    after rounds 3, 6, ...; MLP(...) is the same as model='mlp' with its keywords."""
    agent = lmcts(num_replicas=2, seed=1, train_every=3)
    torch.testing.assert_close(agent.theta, agent.model.initial_params())
    spec = LMCTS(n_arms=4, dim=3, model=MLP(hidden=(8, 8)), device="cpu", seed=1, num_replicas=2)
    assert spec.hyperparameters()["model_kwargs"] == {"hidden": [8, 8], "activation": "leaky_relu"}
    torch.testing.assert_close(spec.theta, agent.theta)
    before = agent.theta
    feed_rounds(agent, rounds=2)
    assert torch.equal(agent.theta, before)
    feed_rounds(agent, rounds=1)
    assert not torch.equal(agent.theta, before)


def test_neural_lmcts_save_load_round_trip(tmp_path):
    agent = lmcts(num_replicas=2, seed=3)
    feed_rounds(agent, rounds=5)
    agent.save(tmp_path / "agent.pt")
    loaded = LMCTS.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.t == agent.t and loaded.model.n_observations == 5
    feed_rounds(agent, rounds=3, seed=9)
    feed_rounds(loaded, rounds=3, seed=9)
    assert torch.equal(agent.theta, loaded.theta)


def test_neural_lmcts_divergence_names_round_and_step_size():
    """Without the step bound a step of 1e6 overflows and the error names the round and the step size; with it
    (the default) each mini-batch step is capped at 1 / lambda_max(M H_k) and the same run stays finite."""
    agent = lmcts(num_replicas=1, seed=0, step_bound=None)
    agent.step_size = torch.tensor([1e6])
    with pytest.raises(DivergenceError, match=r"round \d+ .*step size eta_t = "):
        feed_rounds(agent, rounds=12)
    bounded = lmcts(num_replicas=1, seed=0)
    bounded.step_size = torch.tensor([1e6])
    feed_rounds(bounded, rounds=12)
    assert torch.isfinite(bounded.theta).all()


def test_mlp_rejects_bad_arguments():
    with pytest.raises(ValueError, match="activation"):
        LMCTS(n_arms=2, dim=2, model="mlp", model_kwargs={"activation": "gelu"}, device="cpu", seed=0)
    with pytest.raises(ValueError, match="hidden"):
        LMCTS(n_arms=2, dim=2, model="mlp", model_kwargs={"hidden": 20}, device="cpu", seed=0)
    with pytest.raises(ValueError, match="model"):
        LMCTS(n_arms=2, dim=2, model="transformer", device="cpu", seed=0)


def test_user_module_replicas_are_independent_copies_seeded_per_replica():
    """R copies of a user's nn.Module: each its own initialisation (replica r = single run seeded s + r),
    the global torch generator untouched; autograd gradients; LMC-TS runs on it."""
    net = TinyNet(3)
    state = torch.random.get_rng_state()
    agent = LMCTS(n_arms=4, dim=3, model=net, n_inner_steps=5, batch_size=4, step_size=0.05,
                  inverse_temperature=100.0, device="cpu", seed=7, num_replicas=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert isinstance(agent.model, ModuleModel) and agent.theta.shape == (3, 3 * 8 + 8 + 8 + 1)
    assert not torch.allclose(agent.theta[0], agent.theta[1])
    single = LMCTS(n_arms=4, dim=3, model=TinyNet(3), device="cpu", seed=8, num_replicas=1)
    torch.testing.assert_close(single.theta[0], agent.theta[1])
    contexts = torch.randn(3, 4, 3)
    net = TinyNet(3)
    torch.nn.utils.vector_to_parameters(agent.theta[2], net.parameters())
    torch.testing.assert_close(agent.model.scores(agent.theta, contexts)[2], net(contexts[2]))
    feed_rounds(agent, rounds=6)
    assert torch.isfinite(agent.theta).all() and agent.model.n_observations == 6


def test_user_module_without_reset_parameters_is_rejected():
    class Bare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x):
            return x @ self.w

    with pytest.raises(ValueError, match="reset_parameters"):
        LMCTS(n_arms=2, dim=3, model=Bare(), device="cpu", seed=0)


def test_mlp_gradient_norms_equal_the_per_arm_gradients():
    """sum_j w_j g_j(x_k)^2 without forming g (one product per layer) equals the sum over g; the user-module
    path computes it from g itself."""
    model = mlp_model(2, 3, "leaky_relu")
    theta = model.initial_params()
    contexts = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(3))  # (R, K, d)
    weights = torch.rand(2, model.n_params, generator=torch.Generator().manual_seed(4)) + 0.5  # (R, p)
    mean, g = model.arm_gradients(theta, contexts)
    fast_mean, norms = model.gradient_norms(theta, contexts, weights)
    torch.testing.assert_close(fast_mean, mean)
    torch.testing.assert_close(norms, (g**2 * weights[:, None, :]).sum(dim=-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("block_arms", [None, 2])
def test_mlp_gradient_squares_equal_the_sum_over_per_row_gradients(block_arms):
    """sum_i g(x_i)^2 over the stored rows without forming g (one product per layer, block-aware layer
    included) equals the sum over autograd's per-row g; over a mini-batch it is (n / B) times the batch's sum.
    The generic path (a user's module) sums arm_gradients' g."""
    keys = rng.seed_to_key([0, 1])
    model = MLPModel(2, 4, torch.full((2,), 0.5), CPU, keys=keys, hidden=(6, 5), activation="leaky_relu",
                     block_arms=block_arms)
    theta = model.initial_params()
    g = torch.Generator().manual_seed(5)
    rows = []
    for _ in range(7):
        x = torch.randn(2, 4, generator=g)
        if block_arms:
            x[0, :2], x[1, 2:] = 0.0, 0.0  # one-hot-block rows: replica 0's in block 1, replica 1's in block 0
        rows.append(x)
        model.add(x, torch.randn(2, generator=g))
    x = torch.stack(rows, dim=1)  # (R, n, d)
    _, per_row = model.arm_gradients(theta, x)  # (R, n, p)
    torch.testing.assert_close(model.gradient_squares(theta), (per_row**2).sum(dim=1), rtol=1e-5, atol=1e-6)
    batch = torch.tensor([[0, 0, 3], [6, 2, 2]])
    expected = 7 / 3 * (per_row.gather(1, batch[:, :, None].expand(-1, -1, model.n_params)) ** 2).sum(dim=1)
    torch.testing.assert_close(model.gradient_squares(theta, batch), expected, rtol=1e-5, atol=1e-6)
    if block_arms is None:
        torch.testing.assert_close(super(MLPModel, model).gradient_squares(theta), (per_row**2).sum(dim=1))


def test_preconditioned_langevin_steps_target_the_same_law():
    """With a fixed diagonal preconditioner M the chain theta - eta M grad L + sqrt(2 eta M / beta) eps on a
    quadratic L = sum_j q_j theta_j^2 (curvatures 2 q_j from 0.2 to 2000: the stiffness the preconditioner
    exists for) is stationary at N(0, 1 / (2 beta q_j)) times the discretisation factor 1 / (1 - eta M_j q_j),
    exactly. With M_j = 1 / (2 q_j) and eta = 0.1 every coordinate mixes at the same rate; 200 steps forget the
    start by 0.9^200 < 1e-9. Tolerance: 5 standard errors of the variance of 20,000 Gaussian chains
    (sqrt(2 / N) relative, 5%)."""
    from agents.chains.langevin import langevin_steps

    q = torch.tensor([0.1, 1.0, 10.0, 1000.0])

    class Quadratic:
        def gradient(self, theta, batch=None):
            return 2 * q * theta

    n, beta, eta = 20_000, 2.0, 0.1
    precond = (1.0 / (2 * q)).expand(n, -1)
    noise = torch.randn(n, 200, 4, generator=torch.Generator().manual_seed(0))
    theta = langevin_steps(Quadratic(), torch.full((n, 4), 3.0), torch.full((n,), eta), torch.full((n,), beta),
                           noise, preconditioner=precond)
    expected = 1 / (2 * beta * q) / (1 - eta * precond[0] * q)
    assert ((theta.var(dim=0) / expected - 1).abs() < 5 * (2 / n) ** 0.5).all(), (theta.var(dim=0), expected)
    assert (theta.mean(dim=0).abs() < 5 * (expected / n).sqrt()).all()


def test_user_module_agent_save_load_round_trip(tmp_path):
    """An agent on your own nn.Module saves; load needs the module again (a clear error names what to pass),
    then predicts and learns exactly as the saved agent."""
    agent = LMCTS(n_arms=4, dim=3, model=TinyNet(3), n_inner_steps=5, batch_size=4, step_size=0.05,
                  inverse_temperature=100.0, device="cpu", seed=7, num_replicas=2)
    feed_rounds(agent, rounds=5)
    agent.save(tmp_path / "agent.pt")
    with pytest.raises(ValueError, match=r"own nn.Module \(.*TinyNet\).*LMCTS.load\(path, model=TinyNet\(...\)\)"):
        LMCTS.load(tmp_path / "agent.pt", device="cpu")
    with pytest.raises(ValueError, match="parameters per replica"):
        LMCTS.load(tmp_path / "agent.pt", device="cpu", model=TinyNet(4))
    for loaded in (LMCTS.load(tmp_path / "agent.pt", device="cpu", model=TinyNet(3)),
                   LMCTS.load(tmp_path / "agent.pt", device="cpu", custom_objects={"model": TinyNet(3)})):
        contexts = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(1))
        assert torch.equal(loaded.model.scores(loaded.theta, contexts), agent.model.scores(agent.theta, contexts))
        assert torch.equal(loaded.predict(contexts)[0], agent.predict(contexts)[0])
    feed_rounds(agent, rounds=3, seed=9)
    feed_rounds(loaded, rounds=3, seed=9)
    assert torch.equal(agent.theta, loaded.theta)


def test_mlp_description_agent_save_load(tmp_path):
    """model=MLP(...) (with the block-aware layer) saves as model='mlp' and its keywords, and loads."""
    from agents.neural import NeuralTS

    agent = NeuralTS(n_arms=2, dim=4, model=MLP(hidden=(5,), block_arms=2), device="cpu", seed=0)
    agent.save(tmp_path / "a.pt")
    loaded = NeuralTS.load(tmp_path / "a.pt", device="cpu")
    assert loaded.model.block_arms == 2 and loaded.model.hidden == (5,)
    torch.testing.assert_close(loaded.theta, agent.theta)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("block_arms", [None, 2])
def test_neural_ts_cuda_matches_cpu(block_arms):
    """NeuralTS (per-arm gradients, widths, training) on CUDA follows the CPU run: fixed actions, parameters and
    the diagonal within 1e-3 relative after 10 rounds (float32 rounding of different kernels)."""
    from agents.neural import NeuralTS

    kwargs = dict(n_arms=2, dim=6, num_replicas=2, model="mlp", n_inner_steps=5, batch_size=4, step_size=0.05,
                  model_kwargs={"hidden": (8, 8), "block_arms": block_arms}, seed=2)
    cpu, cuda = NeuralTS(device="cpu", **kwargs), NeuralTS(device="cuda", **kwargs)
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        x = torch.randn(2, 3, generator=g)
        obs = torch.zeros(2, 2, 6)
        obs[:, 0, :3], obs[:, 1, 3:] = x, x  # one-hot blocks
        for agent in (cpu, cuda):
            agent.update(obs, torch.zeros(2, dtype=torch.int64), x[:, 0] ** 2)
    torch.testing.assert_close(cuda.theta.cpu(), cpu.theta, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(cuda.diagonal.cpu(), cpu.diagonal, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(cuda.widths(obs.cuda())[1].cpu(), cpu.widths(obs)[1], rtol=1e-3, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_neural_lmcts_cuda_matches_cpu():
    """The same rounds (fixed actions, so that no near-tie can fork the runs) on CPU and CUDA give the same
    parameters up to float32 rounding of different kernels (1e-3 relative after 10 rounds of 5 steps)."""
    kwargs = dict(n_arms=4, dim=3, num_replicas=2, model="mlp", model_kwargs={"hidden": (8, 8)}, n_inner_steps=5,
                  batch_size=4, step_size=0.05, inverse_temperature=100.0, seed=2)
    cpu, cuda = LMCTS(device="cpu", **kwargs), LMCTS(device="cuda", **kwargs)
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        obs = torch.randn(2, 4, 3, generator=g)
        for agent in (cpu, cuda):
            agent.update(obs, torch.zeros(2, dtype=torch.int64), obs[:, 0, 0] ** 2)
    torch.testing.assert_close(cuda.theta.cpu(), cpu.theta, rtol=1e-3, atol=1e-4)
