"""The GLM baselines' model features: per-arm constants on one-hot-block arms and the penalty ``lambda D`` (each
feature's mean square), as the linear agents': the fit does not depend on the features' units."""

from __future__ import annotations

import pytest
import torch

from agents import GLMTSL, SGDTS, UCBGLM

K, D_CONTEXT, R, T = 3, 3, 2, 40
COLUMN_SCALE = torch.tensor([1000.0, 1.0, 0.001])


def recorded_rounds(column_scale: torch.Tensor | None = None):
    """One-hot-block arms, fixed random actions and Bernoulli rewards of a logistic model of the unscaled
    context: contexts ``(T, R, K, K D)`` (the context's columns times ``column_scale``), actions, rewards."""
    gen = torch.Generator().manual_seed(0)
    context = torch.randn(T, R, D_CONTEXT, generator=gen)
    weights = 2.0 * torch.randn(K, D_CONTEXT, generator=gen)
    actions = torch.randint(K, (T, R), generator=gen)
    logits = (context * weights[actions]).sum(-1)
    rewards = (torch.rand(T, R, generator=gen) < torch.sigmoid(logits)).float()
    shown = context if column_scale is None else context * column_scale
    contexts = torch.zeros(T, R, K, K * D_CONTEXT)
    for k in range(K):
        contexts[:, :, k, k * D_CONTEXT:(k + 1) * D_CONTEXT] = shown
    return contexts, actions, rewards


def fitted(cls, column_scale=None, **kwargs):
    agent = cls(n_arms=K, dim=K * D_CONTEXT, num_replicas=R, seed=0, device="cpu", **kwargs)
    for x, a, r in zip(*recorded_rounds(column_scale), strict=True):
        agent.update(x.numpy(), a.numpy(), r.numpy())
    return agent


@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL])
def test_the_fit_does_not_depend_on_the_features_units(cls):
    """The same rounds with a context column shown 1,000 times larger and one 1,000 times smaller: the penalty
    ``lambda D`` and the constants make ``theta_hat`` the same up to those factors (the fit is renewed from the
    float64 sums whenever ``D`` is, after rounds 1, 3, 7, 15, 31), and the UCB widths / Hessian follow. Without the
    scaling the fit changes (the control)."""
    plain, wide = fitted(cls), fitted(cls, COLUMN_SCALE)
    assert plain.model_dim == K * D_CONTEXT + K
    per_column = torch.cat([COLUMN_SCALE.repeat(K), torch.ones(K)])
    torch.testing.assert_close(wide.theta_hat * per_column, plain.theta_hat, rtol=2e-3, atol=1e-4)
    unscaled = fitted(cls, scale_features=False), fitted(cls, COLUMN_SCALE, scale_features=False)
    assert not torch.allclose(unscaled[1].theta_hat * per_column, unscaled[0].theta_hat, rtol=0.1, atol=0.1)


def test_ucbglm_widths_and_glmtsl_hessian_are_renewed_with_the_penalty():
    """After the renewal of round 31 (and the rows since, by Sherman-Morrison), ``V^-1`` is ``(lambda D + sum z
    z^T)^-1`` and GLM-TSL's ``L L^T`` is the Hessian at ``theta_hat`` with the penalty ``2 lambda D``."""
    ucb = fitted(UCBGLM, COLUMN_SCALE)
    gram = torch.diag_embed(ucb.penalty.double()) + ucb.data_gram
    expected = torch.linalg.inv(gram)
    torch.testing.assert_close(ucb.gram_inverse.double(), expected, rtol=1e-3, atol=1e-3 * expected.abs().max().item())
    tsl = fitted(GLMTSL, COLUMN_SCALE, refit_growth=0.0)
    hessian = tsl.hessian(tsl.theta_hat).double()
    torch.testing.assert_close((tsl.hessian_cholesky @ tsl.hessian_cholesky.mT).double(), hessian, rtol=1e-4,
                               atol=1e-4 * hessian.abs().max().item())


def test_sgdts_keeps_the_raw_features_by_default():
    agent = SGDTS(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu")
    h = agent.hyperparameters()
    assert (h["scale_features"], h["intercept"], agent.model_dim) == (False, False, K * D_CONTEXT)
    with_constants = SGDTS(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu", intercept=None, scale_features=True)
    assert with_constants.model_dim == K * D_CONTEXT + K


@pytest.mark.parametrize("cls", [UCBGLM, GLMTSL, SGDTS])
def test_save_and_load_keep_the_scales(cls, tmp_path):
    agent = fitted(cls, COLUMN_SCALE, intercept=None, scale_features=True)
    agent.save(tmp_path / "agent.pt")
    loaded = cls.load(tmp_path / "agent.pt", device="cpu")
    assert torch.equal(loaded.penalty, agent.penalty)
    assert torch.equal(loaded.arm_features.square_sum, agent.arm_features.square_sum)
    assert torch.equal(loaded.arm_features.nonzero_rows, agent.arm_features.nonzero_rows)
    contexts, _, _ = recorded_rounds(COLUMN_SCALE)
    for x in contexts[:5]:
        assert (loaded.predict(x.numpy())[0] == agent.predict(x.numpy())[0]).all()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"scale_features": "yes"}, "scale_features must be True or False, got 'yes'"),
    ({"intercept": 1}, "intercept must be None"),
])
def test_bad_feature_options_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        UCBGLM(n_arms=K, dim=K * D_CONTEXT, seed=0, device="cpu", **kwargs)
