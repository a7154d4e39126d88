"""What every agent promises, tested on every agent class that ``agents`` exports (the catalog the command
line's ``bandit-gym agents`` lists, :func:`bandit_experiments.catalog.agent_classes`), so a new agent is tested
by being exported:

- a seeded ``learn`` repeats bit for bit (history and learned state), and another seed plays other arms;
- replica r of a batch seeded s is the single run seeded s + r: on recorded rounds fed through ``update`` (same
  learned state, same next arms) and on a live env (same arms, same regret);
- per-replica hyperparameters [a, b] are the two single runs with a and with b, and the two values make a
  difference;
- a saved agent (per-replica values included) loads with the same state and continues as the original;
- ``predict`` on a single env answers in the input's type (0-d numpy for numpy, torch for torch), the same answer
  when asked again, and changes nothing in the agent;
- on CUDA an agent follows its CPU run to float32 rounding.

Each case runs with the agent's defaults except where :data:`FAST` makes it cheaper at these sizes. A class that is
missing from :data:`PER_REPLICA` fails :func:`test_contract_covers_every_exported_agent`. :data:`VARIANTS` adds
the other reward models and mini-batch chains of the agents that have them.

Batched and single runs may differ in the last float bits (another summation order), so learned states are compared
with float32 tolerances (a few ulps, grown over the recorded rounds to < 1e-4), and arms on LinearBandit-v0's and
LogisticBandit-v0's continuous arm features, where no two arms come within rounding of a tie.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from replicas import feed, linear_rounds, logistic_rounds, make_vec

from agents import FGLMCTS, LMCTS, MALATS, VITS, EnsembleSampling
from bandit_experiments.catalog import agent_classes

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py: tiny products, no thread-pool waits

SIZES = {"n_arms": 6, "dim": 4, "horizon": 40}
ROUNDS = 20  # recorded rounds: past the GLM agents' first d = 4 random rounds, and several of their fits

_NEURAL = {"model_kwargs": {"hidden": (8, 8)}, "n_inner_steps": 3, "batch_size": 4}
#: Constructor keywords that make a case cheap at these sizes, only for the agents whose defaults are slow here.
FAST: dict[str, dict[str, Any]] = {
    "LMCTS": {"n_inner_steps": 10}, "FGLMCTS": {"n_inner_steps": 10}, "MALATS": {"n_inner_steps": 10},
    "HMCTS": {"n_inner_steps": 4, "n_leapfrog": 3}, "ULMCTS": {"n_inner_steps": 10}, "VITS": {"n_inner_steps": 10},
    "EnsembleSampling": {"n_members": 4},
    "NeuralUCB": _NEURAL, "NeuralTS": _NEURAL, "NeuralLinUCB": _NEURAL, "NeuralEpsGreedy": _NEURAL,
    "NeuralLinear": {"model_kwargs": {"hidden": (8,)}, "n_inner_steps": 3, "batch_size": 4, "train_every": 7},
}
#: The agents whose default reward model is logistic: they play LogisticBandit-v0, the others LinearBandit-v0.
LOGISTIC = {"UCBGLM", "GLMTSL", "SGDTS"}
#: Every agent: a numeric hyperparameter that changes what it learns from fixed rounds, and two values for it
#: (None: it has no hyperparameter).
PER_REPLICA: dict[str, tuple[str, list[float]] | None] = {
    "UniformRandom": None,
    "LinUCB": ("lambda_reg", [0.5, 2.0]), "LinTS": ("lambda_reg", [0.5, 2.0]), "EpsGreedy": ("lambda_reg", [0.5, 2.0]),
    "DiscountedLinUCB": ("discount", [0.8, 0.99]), "SlidingWindowLinUCB": ("lambda_reg", [0.5, 2.0]),
    "UCBGLM": ("lambda_reg", [0.5, 2.0]), "GLMTSL": ("lambda_reg", [0.5, 2.0]), "SGDTS": ("step_size", [1.0, 10.0]),
    "LMCTS": ("inverse_temperature", [3.0, 300.0]), "FGLMCTS": ("lambda_fg", [0.1, 2.0]),
    "MALATS": ("step_size", [0.1, 0.6]), "HMCTS": ("inverse_temperature", [3.0, 300.0]),
    "ULMCTS": ("friction", [0.3, 3.0]), "EnsembleSampling": ("inverse_temperature", [1.0, 100.0]),
    "VITS": ("inverse_temperature", [3.0, 300.0]),
    "NeuralUCB": ("lambda_reg", [0.1, 2.0]), "NeuralTS": ("lambda_reg", [0.1, 2.0]),
    "NeuralLinUCB": ("lambda_reg", [0.1, 2.0]), "NeuralEpsGreedy": ("lambda_reg", [0.1, 2.0]),
    "LinFullPost": ("lambda_reg", [0.25, 4.0]), "NeuralLinear": ("lambda_reg", [0.25, 4.0]),
}


@dataclass(frozen=True)
class Case:
    """One agent setting of the contract: its test id, class, keywords and env, and its per-replica values."""

    name: str
    cls: type
    kwargs: dict[str, Any] = field(default_factory=dict)
    env_id: str = "LinearBandit-v0"
    hyper: tuple[str, list[float]] | None = None


def _catalog_cases() -> list[Case]:
    return [Case(name, cls, FAST.get(name, {}), "LogisticBandit-v0" if name in LOGISTIC else "LinearBandit-v0",
                 PER_REPLICA.get(name)) for name, cls in agent_classes().items()]


#: The other reward models and chains of the agents that have them.
VARIANTS = [
    Case("LMCTS-glm", LMCTS, {"model": "glm", "n_inner_steps": 10}, "LogisticBandit-v0", ("step_size", [0.3, 0.9])),
    Case("LMCTS-sgld", LMCTS, {"model": "glm", "n_inner_steps": 10, "batch_size": 8}, "LogisticBandit-v0",
         ("lambda_reg", [0.5, 2.0])),
    Case("FGLMCTS-glm", FGLMCTS, {"model": "glm", "n_inner_steps": 5, "batch_size": 8}, "LogisticBandit-v0",
         ("step_size", [0.3, 0.9])),
    Case("MALATS-glm", MALATS, {"model": "glm", "n_inner_steps": 5}, "LogisticBandit-v0",
         ("inverse_temperature", [3.0, 100.0])),
    Case("EnsembleSampling-glm", EnsembleSampling, {"model": "glm", "n_members": 3, "n_inner_steps": 5},
         "LogisticBandit-v0", ("lambda_reg", [0.5, 3.0])),
    Case("VITS-glm", VITS, {"model": "glm", "n_inner_steps": 5, "batch_size": 8}, "LogisticBandit-v0",
         ("step_size", [0.3, 0.9])),
]
CASES = _catalog_cases() + VARIANTS
every_case = pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
with_values = pytest.mark.parametrize("case", [c for c in CASES if c.hyper], ids=[c.name for c in CASES if c.hyper])


def build(case: Case, num_replicas: int, seed, device: str = "cpu", **extra):
    """The case's agent on its env's sizes (the env gives the horizon LinTS needs); no round played."""
    return case.cls(make_vec(case.env_id, num_replicas, SIZES), seed=seed, device=device, **case.kwargs, **extra)


def recorded_rounds(case: Case, num_replicas: int, seed: int = 0):
    """Random arms, actions and rewards of the case's env family: ``(T, R, K, d), (T, R), (T, R)``."""
    K, d = SIZES["n_arms"], SIZES["dim"]
    if case.env_id == "LogisticBandit-v0":
        contexts, actions, _, rewards = logistic_rounds(ROUNDS, num_replicas, K, d, seed=seed)
    else:
        _, contexts, actions, _, rewards = linear_rounds(ROUNDS, num_replicas, K, d, seed=seed, noise=0.5)
    return contexts, actions, rewards


def parameters(agent) -> torch.Tensor:
    """Each replica's slice of the learned state, flattened ``(R, n)`` in float64: every tensor of ``_state`` whose
    leading axis holds the replicas (R of them, or R times the members of an ensemble, replica by replica).
    ``(R, 0)`` for an agent that learns nothing."""
    R = agent.num_replicas
    slices = [value.detach().reshape(R, -1).double() for value in agent._state().values()
              if value.ndim >= 1 and value.shape[0] % R == 0]
    return torch.cat(slices, dim=1) if slices else torch.zeros(R, 0, dtype=torch.float64)


def state(agent) -> dict[str, torch.Tensor]:
    """A copy of the agent's learned state (what ``save`` writes)."""
    return {name: value.clone() for name, value in agent._state().items()}


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name, value in a.items():
        assert torch.equal(value, b[name]), name


def fresh_contexts(num_replicas: int, n: int = 3) -> torch.Tensor:
    """``n`` rounds of arm features no recorded round had, the same for every replica: ``(n, R, K, d)``."""
    x = torch.randn(n, 1, SIZES["n_arms"], SIZES["dim"], generator=torch.Generator().manual_seed(99)) / 2
    return x.expand(-1, num_replicas, -1, -1)


def test_contract_covers_every_exported_agent():
    """A new agent class exported by ``agents`` is in the contract once it states its per-replica values."""
    exported = set(agent_classes())
    assert exported, "agents exports no agent class"
    assert exported - set(PER_REPLICA) == set(), "add these agents to PER_REPLICA in test_agent_contract.py"
    assert set(PER_REPLICA) - exported == set(), "PER_REPLICA names agents that agents no longer exports"
    assert set(FAST) | LOGISTIC <= exported


@every_case
def test_agent_seeded_learn_is_reproducible_and_seeds_differ(case):
    def run(seed):
        env = make_vec(case.env_id, 3, SIZES)
        return case.cls(env, seed=seed, device="cpu", **case.kwargs).learn(env, total_timesteps=20)

    a, b, c = run(0), run(0), run(1)
    for key in ("action", "regret", "reward"):
        np.testing.assert_array_equal(a.history[key], b.history[key])
    assert a.history["regret"].shape == (20, 3)
    assert_same_state(state(a), state(b))
    assert not np.array_equal(a.history["action"], c.history["action"])


@every_case
def test_agent_batched_replica_equals_single_run_on_recorded_rounds(case):
    """Same state (float32 sums in another order: < 1e-4 after 20 rounds) and the same next arms, for the last
    replica of three (replica 0 is the single run in the per-replica test)."""
    R, r = 3, 2
    contexts, actions, rewards = recorded_rounds(case, R)
    batched = build(case, R, seed=3)
    feed(batched, contexts, actions, rewards)
    single = build(case, 1, seed=3 + r)
    feed(single, contexts[:, r : r + 1], actions[:, r : r + 1], rewards[:, r : r + 1])
    torch.testing.assert_close(parameters(single)[0], parameters(batched)[r], rtol=1e-4, atol=1e-4)
    for x in fresh_contexts(R):
        assert int(single.predict(x[r : r + 1])[0][0]) == int(batched.predict(x)[0][r])


@every_case
def test_agent_batched_replica_plays_the_single_runs_arms(case):
    """Replica 2 of a live batch seeded 5 plays as the single env and agent seeded 7, round by round."""
    venv = make_vec(case.env_id, 3, SIZES)
    batched = case.cls(venv, seed=5, device="cpu", **case.kwargs).learn(venv, total_timesteps=20)
    env = gym.make(case.env_id, **SIZES)
    single = case.cls(env, seed=7, device="cpu", **case.kwargs).learn(env, total_timesteps=20)
    np.testing.assert_array_equal(single.history["action"], batched.history["action"][:, 2])
    np.testing.assert_allclose(single.history["regret"], batched.history["regret"][:, 2], rtol=1e-5, atol=1e-6)


@with_values
def test_agent_per_replica_hyperparameters_equal_single_runs(case):
    """Both replicas see the same rounds with the same seed, so only the value tells them apart."""
    key, values = case.hyper
    contexts, actions, rewards = (x[:, [0, 0]] for x in recorded_rounds(case, 1))  # (T, 2, ...)
    mixed = build(case, 2, seed=[7, 7], **{key: values})
    assert mixed.hyperparameters()[key] == values
    feed(mixed, contexts, actions, rewards)
    for r, value in enumerate(values):
        single = build(case, 1, seed=7, **{key: value})
        feed(single, contexts[:, :1], actions[:, :1], rewards[:, :1])
        torch.testing.assert_close(parameters(single)[0], parameters(mixed)[r], rtol=1e-4, atol=1e-4)
        for x in fresh_contexts(2):
            assert int(single.predict(x[:1])[0][0]) == int(mixed.predict(x)[0][r])
    assert not torch.allclose(parameters(mixed)[0], parameters(mixed)[1])  # the two values made a difference


@every_case
def test_agent_save_load_round_trip_continues_identically(case, tmp_path):
    contexts, actions, rewards = recorded_rounds(case, 2)
    agent = build(case, 2, seed=2, **({case.hyper[0]: case.hyper[1]} if case.hyper else {}))
    feed(agent, contexts[:12], actions[:12], rewards[:12])
    agent.save(tmp_path / "agent.pt")
    loaded = case.cls.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.t == agent.t and loaded.hyperparameters() == agent.hyperparameters()
    if case.hyper:
        assert loaded.hyperparameters()[case.hyper[0]] == case.hyper[1]
    assert_same_state(state(loaded), state(agent))
    for x, a, r in zip(contexts[12:], actions[12:], rewards[12:], strict=True):
        assert torch.equal(agent.predict(x)[0], loaded.predict(x)[0])
        agent.update(x, a, r)
        loaded.update(x, a, r)
    assert_same_state(state(loaded), state(agent))


@every_case
def test_agent_predict_on_a_single_env_answers_in_the_input_type_and_changes_nothing(case):
    env = gym.make(case.env_id, **SIZES)
    agent = case.cls(env, seed=4, device="cpu", **case.kwargs).learn(total_timesteps=10)
    assert agent.history["regret"].shape == (10,)
    before, t = state(agent), agent.t
    obs, _ = env.reset(seed=9)  # numpy (K, d)
    answers = [agent.predict(obs)[0] for _ in range(3)]
    assert isinstance(answers[0], np.ndarray) and answers[0].shape == () and 0 <= int(answers[0]) < SIZES["n_arms"]
    assert len(set(map(int, answers))) == 1
    action, _ = agent.predict(torch.from_numpy(obs))
    assert isinstance(action, torch.Tensor) and action.shape == () and int(action) == int(answers[0])
    assert_same_state(state(agent), before)
    assert agent.t == t


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@every_case
def test_agent_on_cuda_follows_the_cpu_run(case):
    """The same draws on both devices (counter-based, float64 Box-Muller rounded once): the parameters agree to
    float32 rounding of different kernels over the recorded rounds."""
    contexts, actions, rewards = recorded_rounds(case, 3)
    agents = [build(case, 3, seed=0, device=device) for device in ("cpu", "cuda")]
    for agent in agents:
        feed(agent, contexts.to(agent.device), actions.to(agent.device), rewards.to(agent.device))
    torch.testing.assert_close(parameters(agents[1]).cpu(), parameters(agents[0]), rtol=1e-3, atol=1e-3)
