"""NeuralUCB, NeuralTS, Neural-LinUCB, Neural epsilon-greedy: their exploration statistics against a direct
computation, a user's nn.Module, the noise estimate. Seeding, replicas against single runs and save/load are
tested for every agent in test_agent_contract.py."""

from __future__ import annotations

import pytest
import torch

from agents.neural import NeuralEpsGreedy, NeuralLinUCB, NeuralTS, NeuralUCB

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def make(cls, num_replicas, seed, **kwargs):
    return cls(n_arms=5, dim=3, num_replicas=num_replicas, seed=seed, device="cpu",
               model_kwargs={"hidden": (8, 8)}, n_inner_steps=3, batch_size=4, **kwargs)


def rounds(num_replicas, n=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        obs = torch.randn(num_replicas, 5, 3, generator=g)
        yield obs, obs[:, :, 0] ** 2  # rewards of every arm (R, K)


def play(agent, n=10, seed=0):
    for obs, rewards in rounds(agent.num_replicas, n, seed):
        actions = agent.predict(obs)[0]
        agent.update(obs, actions, rewards.gather(1, actions[:, None])[:, 0])


@pytest.mark.parametrize("cls", [NeuralUCB, NeuralTS])
def test_diagonal_design_matrix_and_widths(cls):
    """U = lambda + sum of squared gradients of the played arms (at the parameters they were played with);
    sigma(x) = sqrt(lambda sum_j g_j(x)^2 / U_j), computed here arm by arm with autograd."""
    agent = make(cls, 2, seed=0, lambda_reg=0.5)
    expected = torch.full((2, agent.model.n_params), 0.5)
    for obs, rewards in rounds(2, n=4):
        actions = agent.predict(obs)[0]
        for r in range(2):
            p = agent.theta.clone().requires_grad_()
            (g,) = torch.autograd.grad(agent.model.scores(p, obs)[r, actions[r]], p)
            expected[r] += g[r] ** 2
        agent.update(obs, actions, rewards.gather(1, actions[:, None])[:, 0])
    torch.testing.assert_close(agent.diagonal, expected)
    obs = next(rounds(2, n=1, seed=5))[0]
    mean, width = agent.widths(obs)
    for r in range(2):
        for k in range(5):
            p = agent.theta.clone().requires_grad_()
            (g,) = torch.autograd.grad(agent.model.scores(p, obs)[r, k], p)
            torch.testing.assert_close(width[r, k], (0.5 * (g[r] ** 2 / expected[r]).sum()).sqrt())


def test_neural_ucb_with_zero_exploration_is_greedy_and_ts_explores():
    """nu = 0 plays argmax f; NeuralTS with a large nu does not always play it."""
    ucb, ts = make(NeuralUCB, 4, 0, exploration_scale=0.0), make(NeuralTS, 4, 0, exploration_scale=100.0)
    differs = 0
    for obs, _ in rounds(4, n=5):
        greedy = ucb.model.scores(ucb.theta, obs).argmax(dim=1)
        assert torch.equal(ucb.predict(obs)[0], greedy)
        differs += int((ts.predict(obs)[0] != ts.model.scores(ts.theta, obs).argmax(dim=1)).sum())
    assert differs > 0


def test_neural_linucb_feature_gram_inverse():
    """A^-1 = (lambda I + sum phi phi^T)^-1 over the played arms' last-layer features."""
    agent = make(NeuralLinUCB, 1, seed=0, lambda_reg=2.0)
    gram = 2.0 * torch.eye(8)
    for obs, rewards in rounds(1, n=6):
        actions = agent.predict(obs)[0]
        phi = agent.model.features(agent.theta, obs)[0, actions[0]]
        gram += torch.outer(phi, phi)
        agent.update(obs, actions, rewards.gather(1, actions[:, None])[:, 0])
    torch.testing.assert_close(agent.feature_gram_inverse[0], torch.linalg.inv(gram), rtol=1e-4, atol=1e-5)


def test_neural_eps_greedy_exploration_rate():
    agent = make(NeuralEpsGreedy, 2, seed=0, exploration_scale=[0.5, 4.0])
    torch.testing.assert_close(agent.exploration_rate(4), torch.tensor([0.25, 1.0]))


def test_neural_ts_with_a_user_module():
    """Per-arm gradients of a user's nn.Module come from vmap(grad); NeuralTS runs on it."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1), torch.nn.Flatten(-2))
    agent = NeuralTS(n_arms=5, dim=3, num_replicas=2, seed=0, device="cpu", model=net, n_inner_steps=2, batch_size=4)
    play(agent, n=4)
    assert torch.isfinite(agent.theta).all() and (agent.diagonal > agent.lambda_reg[:, None]).any()
    with pytest.raises(ValueError, match="NeuralLinUCB needs"):
        NeuralLinUCB(n_arms=5, dim=3, seed=0, device="cpu", model=net)


def test_minibatch_gradient_estimates_the_full_sum_gradient():
    """The SGLD design decision (docs/agents.md): a mini-batch gradient is (n / B) x the sum over its rows
    + 2 lambda theta, so that it estimates the gradient of the paper's full-sum loss. Exactly: the mean over
    the n one-row batches {i} is the full gradient, and a batch holding every row once is the full gradient."""
    agent = make(NeuralTS, 2, seed=0, lambda_reg=0.5)
    play(agent, n=6)
    model, theta = agent.model, agent.theta + 0.1  # away from the trained point: a non-trivial gradient
    full = model.gradient(theta)
    one_row = torch.stack([model.gradient(theta, torch.full((2, 1), i)) for i in range(6)]).mean(dim=0)
    torch.testing.assert_close(one_row, full, rtol=1e-4, atol=1e-5)
    every_row = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(r)) for r in range(2)])
    torch.testing.assert_close(model.gradient(theta, every_row), full, rtol=1e-4, atol=1e-5)


def test_neural_defaults_are_the_tuned_values():
    """LMCTS(model="mlp") takes eta_0, beta and lambda from ``LMCTS.defaults["neural"]`` (not the linear model's);
    the baselines their per-agent defaults (docs/agents.md, benchmarks/results/quadratic_paper.md)."""
    from agents import LMCTS

    table = LMCTS.defaults["neural"]
    chosen = LMCTS(n_arms=5, dim=3, model="mlp", seed=0, device="cpu").hyperparameters()
    names = ("inverse_temperature", "lambda_reg", "n_inner_steps", "batch_size", "step_schedule", "preconditioner",
             "step_bound")
    assert {k: chosen[k] for k in names} == {k: table[k] for k in names}
    assert chosen["step_size"] == table["step_size"]["constant"]
    assert LMCTS(n_arms=5, dim=3, seed=0, device="cpu").hyperparameters()["inverse_temperature"] == 10.0
    expected = {NeuralTS: (0.003, 9.0), NeuralUCB: (0.003, 1000 ** 0.5), NeuralLinUCB: (0.01, 3.0),
                NeuralEpsGreedy: (0.01, 1.0)}
    for cls, (step_size, exploration_scale) in expected.items():
        agent = cls(n_arms=5, dim=3, seed=0, device="cpu")
        assert (agent.step_size.item(), agent.exploration_scale.item(), agent.batch_size) == pytest.approx(
            (step_size, exploration_scale, 32))
        # the width agents estimate sigma by default; epsilon-greedy has no width and no such argument
        assert agent.hyperparameters().get("noise_scale") == ("auto" if cls in WIDTH_AGENTS else None)


def test_neural_and_linear_epsilon_greedy_share_one_rule():
    """NeuralEpsGreedy and EpsGreedy differ only in the reward model: with the same ``c`` their rates agree at
    every round, and with ``c = 100`` (``epsilon_t = 1`` up to round 10,000) the same seed makes them play the
    same random arms every round, whatever their greedy arms."""
    from agents.linear import EpsGreedy

    linear = EpsGreedy(None, n_arms=5, dim=3, num_replicas=2, seed=4, device="cpu", exploration_scale=[0.5, 4.0])
    neural = make(NeuralEpsGreedy, 2, seed=4, exploration_scale=[0.5, 4.0])
    for t in (1, 2, 9, 50, 1000):
        assert torch.equal(linear.exploration_rate(t), neural.exploration_rate(t))
    linear = EpsGreedy(None, n_arms=5, dim=3, num_replicas=2, seed=4, device="cpu", exploration_scale=100.0)
    neural = make(NeuralEpsGreedy, 2, seed=4, exploration_scale=100.0)
    played = []
    for obs, rewards in rounds(2, n=30):
        a, b = linear.predict(obs)[0], neural.predict(obs)[0]
        assert torch.equal(a, b)
        played.append(a)
        for agent in (linear, neural):
            agent.update(obs, a, rewards.gather(1, a[:, None])[:, 0])
    assert len(set(torch.cat(played).tolist())) == 5  # 60 draws reach every arm


WIDTH_AGENTS = [NeuralUCB, NeuralTS, NeuralLinUCB]


def _played_errors(agent, n, reward_scale):
    """Play ``n`` rounds of ``reward_scale x x_0^2``; return each round's error of the network that played, on the
    played arm's reward, before the update learnt it ``[(R,)]``."""
    errors = []
    for obs, rewards in rounds(agent.num_replicas, n):
        actions = agent.predict(obs)[0]
        played = reward_scale * rewards.gather(1, actions[:, None])[:, 0]
        x = obs[torch.arange(agent.num_replicas), actions]  # (R, d)
        errors.append(played - agent.model.scores(agent.theta, x[:, None, :])[:, 0])
        agent.update(obs, actions, played)
    return errors


@pytest.mark.parametrize("cls", WIDTH_AGENTS)
def test_auto_noise_scale_is_the_prequential_error(cls):
    """``noise_scale="auto"`` (the default of NeuralUCB, NeuralTS, Neural-LinUCB): after ``n`` rounds
    ``sigma_t^2 = (1 + sum_s s^2 e_s^2) / (1 + sum_s s^2)`` (models/noise.py), ``e_s`` the playing network's error on
    round ``s``'s reward. Float32 sums of the same numbers in the same order: equal to rounding (rtol 1e-5)."""
    agent = make(cls, 3, seed=0)
    assert agent.hyperparameters()["noise_scale"] == "auto" and agent.adaptive_noise
    torch.testing.assert_close(agent.noise_scale(), torch.ones(3))  # sigma_0 = 1 before any reward
    errors = torch.stack(_played_errors(agent, 20, 1.0))  # (20, R)
    weights = torch.arange(1.0, 21.0)[:, None] ** 2
    expected = ((1.0 + (weights * errors**2).sum(dim=0)) / (1.0 + weights.sum())).sqrt()
    torch.testing.assert_close(agent.noise_scale(), expected, rtol=1e-5, atol=0)


@pytest.mark.parametrize("cls", WIDTH_AGENTS)
def test_widths_are_scaled_by_the_noise_estimate(cls):
    """The auto agent chooses as the same agent with ``sigma`` fixed at its current estimate: the scores use
    ``nu sigma_t`` in place of ``nu`` (a copy with the estimate fixed plays the same arms on fresh contexts, for
    TS from the same generator state). And the estimate matters: with sigma 100x larger the arms change."""
    import copy

    agent = make(cls, 4, seed=2, exploration_scale=3.0)
    _played_errors(agent, 15, 1.0)
    fixed, wide = copy.deepcopy(agent), copy.deepcopy(agent)
    fixed.adaptive_noise = wide.adaptive_noise = False
    fixed.fixed_noise_scale = agent.noise_scale().clone()
    wide.fixed_noise_scale = 100.0 * agent.noise_scale()
    differ = False
    for obs, _ in rounds(4, n=10, seed=9):
        chosen = agent.predict(obs)[0]
        assert torch.equal(chosen, fixed.predict(obs)[0])
        differ |= not torch.equal(chosen, wide.predict(obs)[0])
    assert differ


def test_auto_noise_scale_follows_the_reward_scale():
    """Scale-free: rewards 40x larger give errors about 40x larger, so sigma_t about 40x (the networks fit the two
    scales differently and the pseudo-error of 1 is not scaled, hence the wide margin: more than 10x). The step
    size is small enough for the larger rewards' gradients (at the default 0.003 the 40x run diverges)."""
    sigmas = []
    for scale in (1.0, 40.0):
        agent = make(NeuralTS, 3, seed=0, step_size=1e-5)
        _played_errors(agent, 30, scale)
        sigmas.append(agent.noise_scale())
    assert (sigmas[1] > 10 * sigmas[0]).all(), sigmas


def test_noise_estimate_survives_save_and_load_and_a_number_stays_fixed(tmp_path):
    agent = make(NeuralUCB, 2, seed=1)
    _played_errors(agent, 10, 1.0)
    agent.save(tmp_path / "agent.zip")
    loaded = NeuralUCB.load(tmp_path / "agent.zip")
    assert loaded.adaptive_noise
    torch.testing.assert_close(loaded.noise_scale(), agent.noise_scale(), rtol=0, atol=0)
    fixed = make(NeuralUCB, 2, seed=1, noise_scale=[1.0, 0.25])
    _played_errors(fixed, 10, 1.0)
    assert not fixed.adaptive_noise and fixed.noise_scale().tolist() == [1.0, 0.25]
    with pytest.raises(ValueError, match="noise_scale must be a number > 0, one per replica, or 'auto'.*'fixed'"):
        make(NeuralTS, 1, seed=0, noise_scale="fixed")
    with pytest.raises(TypeError, match="noise_scale"):
        make(NeuralEpsGreedy, 1, seed=0, noise_scale=1.0)


@pytest.mark.parametrize("cls", [NeuralUCB, NeuralTS, NeuralLinUCB, NeuralEpsGreedy])
def test_neural_agent_old_grad_steps_keyword_names_n_inner_steps(cls):
    with pytest.raises(TypeError, match=rf"{cls.__name__} got an unexpected keyword argument 'n_grad_steps'.*"
                                        r"n_inner_steps"):
        cls(n_arms=3, dim=2, device="cpu", n_grad_steps=3)
