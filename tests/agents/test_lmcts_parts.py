"""LMC-TS's small parts: the defaults table's resolution, the two temperatures, the null preconditioner and
potential, and the seams a sampler uses instead of overriding LMC-TS's methods."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from agents import FGLMCTS, LMCTS
from agents.chains.preconditioner import DiagonalPreconditioner, NoPreconditioner
from agents.chains.temperature import AdaptiveTemperature, FixedTemperature, temperature_from
from agents.models.settings import with_defaults

MLP = {"model": "mlp", "model_kwargs": {"hidden": (8,)}}


def _play(agent: LMCTS, rounds: int, seed: int = 0) -> None:
    """``rounds`` rounds of random contexts and rewards, the agent's own arms."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(rounds):
        contexts = torch.randn(agent.num_replicas, agent.n_arms, agent.dim, generator=g)
        actions = agent.predict(contexts)[0]
        agent.update(contexts, actions, torch.randn(agent.num_replicas, generator=g))


def test_with_defaults_fills_only_unset_arguments():
    """None takes the table's value, except for batch_size and step_bound, whose None means none and whose "auto"
    takes the table's; a given value (a tensor too) is passed through as it is."""
    table = {"lambda_reg": 2.0, "batch_size": 32, "step_bound": 1.0}
    per_replica = torch.tensor([0.5, 1.5])
    assert with_defaults(table, lambda_reg=None, batch_size="auto", step_bound=None) == {
        "lambda_reg": 2.0, "batch_size": 32, "step_bound": None}
    given = with_defaults(table, lambda_reg=per_replica, batch_size=None, step_bound="auto")
    assert given["lambda_reg"] is per_replica and given["batch_size"] is None and given["step_bound"] == 1.0


def _bound_to(temperature, lambda_reg: torch.Tensor):
    """``temperature`` bound to a stand-in agent whose model scores ``x . theta``."""
    model = SimpleNamespace(lambda_reg=lambda_reg, scores=lambda theta, x: (x * theta[:, None, :]).sum(dim=2))
    agent = SimpleNamespace(model=model, lambda_reg=lambda_reg, num_replicas=lambda_reg.shape[0], device="cpu",
                            _hyperparameters={},
                            _hyperparameter=lambda name, value, **_: torch.as_tensor(value, dtype=torch.float32))
    temperature.bind(agent)
    return temperature, agent


def test_adaptive_temperature_follows_the_prequential_error_and_keeps_the_prior():
    """beta_t = (1 + sum s^2) / (2 (1 + sum s^2 e_s^2)), the error computed from the played sample where the agent
    passes no prediction; the model's ridge is lambda 0.5 / beta_t; a second temperature loaded from the first's
    state has the same beta_t and ridge."""
    lambda_reg = torch.tensor([1.0, 2.0])
    temperature, agent = _bound_to(temperature_from("auto"), lambda_reg)
    assert isinstance(temperature, AdaptiveTemperature) and agent._hyperparameters == {"inverse_temperature": "auto"}
    torch.testing.assert_close(temperature.value(), torch.full((2,), 0.5))
    theta, x = torch.tensor([[1.0, 0.0], [0.0, 2.0]]), torch.tensor([[1.0, 1.0], [1.0, 1.0]])  # f = 1 and 2
    temperature.observe(1, theta, x, torch.tensor([3.0, 2.0]), None)  # errors 2 and 0
    temperature.observe(2, theta, x, torch.tensor([0.0, 0.0]), torch.tensor([[1.0], [1.0]]))  # errors 1 and 1
    expected = torch.tensor([(1 + 1 + 4) / (2 * (1 + 4 + 4)), (1 + 1 + 4) / (2 * (1 + 0 + 4))])
    torch.testing.assert_close(temperature.value(), expected)
    torch.testing.assert_close(agent.model.lambda_reg, lambda_reg * 0.5 / expected)
    loaded, twin = _bound_to(AdaptiveTemperature(), lambda_reg)
    loaded.load_state_dict({"theta": theta, **temperature.state_dict()})
    assert torch.equal(loaded.value(), temperature.value())
    assert torch.equal(twin.model.lambda_reg, agent.model.lambda_reg)


def test_fixed_temperature_keeps_its_value_and_saves_nothing():
    temperature, agent = _bound_to(temperature_from([0.5, 32.0]), torch.ones(2))
    assert isinstance(temperature, FixedTemperature)
    temperature.observe(1, torch.zeros(2, 2), torch.ones(2, 2), torch.tensor([5.0, -5.0]), None)
    assert temperature.value().tolist() == [0.5, 32.0] and temperature.state_dict() == {}
    assert agent.model.lambda_reg.tolist() == [1.0, 1.0]


def test_diagonal_preconditioner_takes_the_first_batch_and_none_takes_no_batch():
    """The diagonal preconditioner's round: U_t on the first mini-batch, the others the chain's; without one every
    batch is the chain's and there is no curvature."""
    agent = LMCTS(n_arms=3, dim=4, num_replicas=2, seed=0, **MLP)
    _play(agent, 5)
    assert isinstance(agent.preconditioner, DiagonalPreconditioner) and agent.preconditioner.n_batches == 1
    batches = agent._minibatches(6, agent.model)  # (R, 1 + K, B)
    assert batches.shape[1] == agent.n_inner_steps + 1
    curvature, rest = agent.preconditioner.for_round(agent.model, batches)
    assert torch.equal(rest, batches[:, 1:])
    expected = agent.preconditioner.round_curvature(agent.model, agent.theta, batches[:, 0])
    assert torch.equal(curvature(agent.theta), expected)
    none = NoPreconditioner()
    assert none.n_batches == 0 and none.for_round(agent.model, batches) == (None, batches)
    assert none.record(agent.model, agent.theta, torch.ones(2, 4)) is None


@pytest.mark.parametrize(("cls", "kwargs", "present", "absent"), [
    (LMCTS, MLP, {"squared_error", "error_count", "preconditioner.curvature"}, ("features.", "contexts.")),
    (LMCTS, {}, {"features.top"}, ("squared_error", "error_count", "preconditioner.", "contexts.")),
    (FGLMCTS, {}, {"contexts.contexts", "features.top"}, ("squared_error", "preconditioner.")),
])
def test_lmcts_saved_state_holds_the_keys_of_its_parts_only(cls, kwargs, present, absent):
    """The saved keys: the noise estimate's under "auto", each part's under its prefix, nothing of an absent part
    (the null preconditioner, scaling and potential save nothing)."""
    agent = cls(n_arms=3, dim=4, num_replicas=2, seed=0, **kwargs)
    _play(agent, 3)
    keys = set(agent._state())
    assert present <= keys and "theta" in keys
    assert not [key for key in keys if key.startswith(absent)], keys


def test_fglmcts_overrides_no_method_of_lmcts():
    """FG-LMC-TS is LMC-TS with its potential passed in: it overrides none of LMC-TS's methods (the term is told
    each round through the potential's observe)."""
    overridden = {name for name, value in vars(FGLMCTS).items()
                  if callable(value) and name != "__init__" and hasattr(LMCTS, name)}
    assert not overridden, overridden
    agent = FGLMCTS(n_arms=3, dim=4, num_replicas=2, seed=0)
    _play(agent, 4)
    assert len(agent.potential.contexts) == 4  # one arm set per round
