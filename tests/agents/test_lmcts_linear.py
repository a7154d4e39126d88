"""LMC-TS with the linear model at its defaults: features scaled by their root mean square, per-arm constants on
one-hot-block arms, and the step ``eta_t = eta_0 / lambda_max(S V_t S)`` of the paper's Theorem 4.2."""

from __future__ import annotations

import pytest
import torch

from agents import LMCTS, _kernels
from agents.chains.langevin import langevin_steps, linear_langevin_steps
from agents.models.reward import LinearModel

K, D_CONTEXT, R = 4, 3, 3


def one_hot_block_rounds(n_rounds: int, seed: int, column_scale: torch.Tensor | None = None,
                         bias: torch.Tensor | None = None, zero_contexts: bool = False):
    """One-hot-block arms (arm k's context in block k of K, as the classification bandits'), rewards
    ``w_k . context + bias_k + 0.1 noise``: contexts ``(T, R, K, K D)`` (the context's columns times
    ``column_scale``) and a function ``(t, actions) -> rewards`` of the unscaled context."""
    gen = torch.Generator().manual_seed(seed)
    context = torch.zeros(n_rounds, R, D_CONTEXT) if zero_contexts else torch.randn(n_rounds, R, D_CONTEXT,
                                                                                      generator=gen)
    weights = torch.randn(K, D_CONTEXT, generator=gen)
    bias = torch.zeros(K) if bias is None else bias
    noise = 0.1 * torch.randn(n_rounds, R, generator=gen)
    shown = context if column_scale is None else context * column_scale
    contexts = torch.zeros(n_rounds, R, K, K * D_CONTEXT)
    for k in range(K):
        contexts[:, :, k, k * D_CONTEXT:(k + 1) * D_CONTEXT] = shown

    def rewards(t: int, actions: torch.Tensor) -> torch.Tensor:
        return (context[t] * weights[actions]).sum(-1) + bias[actions] + noise[t]
    return contexts, rewards


def play(agent: LMCTS, contexts: torch.Tensor, rewards) -> torch.Tensor:
    """Play every round with the agent's own choices (``predict``/``update``); the actions ``(T, R)``."""
    played = []
    for t in range(len(contexts)):
        actions = torch.as_tensor(agent.predict(contexts[t].numpy())[0])
        agent.update(contexts[t].numpy(), actions.numpy(), rewards(t, actions).numpy())
        played.append(actions)
    return torch.stack(played)


def scaled_gram(agent: LMCTS) -> torch.Tensor:
    """``S V S`` in float64, ``(R, p, p)``: the linear model's Gram matrix, the GLM's ``lambda D + sum z z^T / 8``."""
    scale = agent.scaling.scale().double()
    gram = agent.model.gram if isinstance(agent.model, LinearModel) else agent.scaling.bound_gram
    return scale[:, :, None] * gram.double() * scale[:, None, :]


def test_defaults_are_the_scaled_chain_at_the_theorems_step_and_the_plain_chain_stays():
    agent = LMCTS(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu")
    h = agent.hyperparameters()
    assert (h["step_schedule"], h["scale_features"], h["intercept"]) == ("inverse_lambda_max", True, None)
    assert agent.step_size.tolist() == [LMCTS.defaults["linear"]["step_size"]["inverse_lambda_max"]] == [0.25]
    assert agent.model_dim == K * D_CONTEXT + K  # one-hot blocks possible (K divides d): a constant per arm
    paper = LMCTS(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu", step_schedule="inverse_t", intercept=False)
    assert (paper.scale_features, paper.model_dim) == (False, K * D_CONTEXT)
    assert paper.step_size.tolist() == pytest.approx([0.3])
    assert LMCTS(n_arms=5, dim=4, seed=0, device="cpu").model_dim == 4  # K does not divide d: no constants


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"model": "mlp", "intercept": True}, "intercept and scale_features must be None for model='mlp'"),
    ({"model": "mlp", "scale_features": True}, "intercept and scale_features must be None for model='mlp'"),
    ({"model": "mlp", "step_schedule": "inverse_lambda_max"}, "step_schedule must be 'inverse_t' or 'constant'"),
    ({"scale_features": "yes"}, "scale_features must be True or False, got 'yes'"),
    ({"intercept": 1}, "intercept must be None"),
])
def test_linear_only_options_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LMCTS(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu", **kwargs)


@pytest.mark.parametrize("model", ["linear", "glm"])
def test_a_feature_multiplied_by_a_constant_changes_nothing(model):
    """Scale-free: the chain runs on ``S z``, so a context column shown 1,000 times larger (or 1,000 times
    smaller) gives the same arms, with ``theta`` divided by that factor. Without the scaling it does not (the
    control shows the test can fail)."""
    column_scale = torch.tensor([1000.0, 1.0, 0.001])
    contexts, rewards = one_hot_block_rounds(60, seed=1)
    scaled, _ = one_hot_block_rounds(60, seed=1, column_scale=column_scale)
    plain = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=7, device="cpu", model=model)
    wide = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=7, device="cpu", model=model)
    actions = play(plain, contexts, rewards)
    assert torch.equal(play(wide, scaled, rewards), actions)
    per_column = torch.cat([column_scale.repeat(K), torch.ones(K)])  # the constants are not scaled
    torch.testing.assert_close(wide.theta * per_column, plain.theta, rtol=1e-3, atol=1e-4)
    unscaled = [LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=7, device="cpu", model=model,
                      scale_features=False) for _ in range(2)]
    assert not torch.equal(play(unscaled[0], contexts, rewards), play(unscaled[1], scaled, rewards))


@pytest.mark.parametrize("model", ["linear", "glm"])
def test_the_step_bound_is_weyls_and_exact_when_the_penalty_is_renewed(model):
    """``scaling.top >= lambda_max(S V_t S)`` every round (the last exact value plus ``|S x|^2`` per row: Weyl's
    inequality), equal to it after rounds 1, 3, 7, 15, 31 (renewed with ``D``), so ``eta_t lambda_max <= eta_0``
    (the GLM: ``V = lambda D + sum z z^T / 8``, half its curvature bound)."""
    contexts, rewards = one_hot_block_rounds(40, seed=2, column_scale=torch.tensor([30.0, 1.0, 0.01]))
    agent = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu", model=model)
    eta_0 = agent.step_size
    for t in range(40):
        actions = torch.as_tensor(agent.predict(contexts[t].numpy())[0])
        agent.update(contexts[t].numpy(), actions.numpy(), rewards(t, actions).numpy())
        exact = torch.linalg.eigvalsh(scaled_gram(agent))[:, -1].float()  # (R,)
        assert bool((agent.scaling.top >= exact * (1 - 1e-5)).all()), t
        assert bool((agent.current_step_size(t + 2) * exact <= eta_0 * (1 + 1e-5)).all()), t
        if t + 2 in (2, 4, 8, 16, 32):
            torch.testing.assert_close(agent.scaling.top, exact, rtol=1e-5, atol=0.0)
        elif t > 4:
            assert bool((agent.scaling.top > exact * (1 + 1e-3)).any()), t  # between renewals: a bound, not exact


@pytest.mark.parametrize("path", ["as_configured", "affine"])
def test_the_chain_in_scaled_coordinates_is_the_preconditioned_definition(path, kernels, monkeypatch):
    """What the round runs (the compiled chain on ``S V S``, ``S b``, ``theta / S`` with kernels on; plain torch
    with them off; ``"affine"``: the GPU's one-``baddbmm``-a-step form, forced here on the CPU) equals
    :func:`langevin_steps` on the raw model preconditioned by ``M = S^2``."""
    if path == "affine":
        if kernels == "kernels-off":
            pytest.skip("the affine form is a kernel: off with the kernels")
        monkeypatch.setattr(_kernels, "enabled", lambda *tensors: False)
        monkeypatch.setattr(_kernels, "enabled_off_cpu", lambda *tensors: True)
    contexts, rewards = one_hot_block_rounds(20, seed=3, column_scale=torch.tensor([5.0, 1.0, 0.2]))
    agent = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu")
    play(agent, contexts, rewards)
    gen = torch.Generator().manual_seed(0)
    noise = torch.randn(R, 100, agent.model_dim, generator=gen)
    eta = agent.current_step_size(21)
    ran = linear_langevin_steps(agent.model, agent.theta, eta, agent.inverse_temperature, noise, agent.scaling.scale())
    definition = langevin_steps(agent.model, agent.theta, eta, agent.inverse_temperature, noise,
                                preconditioner=agent.scaling.scale() ** 2)
    torch.testing.assert_close(ran, definition, rtol=1e-4, atol=1e-5)


def test_per_arm_constants_learn_arms_that_differ_only_by_a_constant():
    """All-zero contexts (one-hot blocks with nothing in them): only the constants tell the arms apart. With
    them, each replica plays the best arm (bias 1, the next 0.5) in at least 90 of the last 100 rounds; without
    them every score is 0 and the arms are drawn at random (about 25 of 100: below 60 for every replica)."""
    bias = torch.tensor([0.0, 0.2, 0.5, 1.0])
    contexts, rewards = one_hot_block_rounds(300, seed=4, bias=bias, zero_contexts=True)
    with_constants = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu")
    late = (play(with_constants, contexts, rewards)[-100:] == 3).sum(0)
    assert bool((late >= 90).all()), late
    without = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu", intercept=False)
    late = (play(without, contexts, rewards)[-100:] == 3).sum(0)
    assert bool((late < 60).all()), late


def test_set_penalty_gives_a_coordinate_without_data_exactly_the_new_penalty():
    model = LinearModel(1, 3, torch.ones(1), torch.device("cpu"))
    x = torch.tensor([[2.0, 1.0, 0.0]])
    model.add(x, torch.tensor([1.0]))
    penalty = torch.tensor([[4.0, 1e-8, 1e-8]])
    model.set_penalty(penalty)
    assert model.gram[0, 2, 2].item() == torch.tensor(1e-8).item()  # (1 + 1e-8) - 1 in float32 would be 0
    torch.testing.assert_close(model.gram, torch.diag_embed(penalty) + x[:, :, None] * x[:, None, :])


def test_save_and_load_keep_the_scales_and_the_bound(tmp_path):
    contexts, rewards = one_hot_block_rounds(30, seed=5, column_scale=torch.tensor([10.0, 1.0, 0.1]))
    agent = LMCTS(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu")
    play(agent, contexts[:13], rewards)
    agent.save(tmp_path / "agent.pt")
    loaded = LMCTS.load(tmp_path / "agent.pt", device="cpu")
    assert torch.equal(loaded.scaling.top, agent.scaling.top) and torch.equal(loaded.model.penalty, agent.model.penalty)
    later = contexts[13:]

    def shifted(t, actions):
        return rewards(t + 13, actions)
    assert torch.equal(play(loaded, later, shifted), play(agent, later, shifted))
    assert torch.equal(loaded.theta, agent.theta)
