"""What each speed device earns: the device against the torch definition it replaces, in one process, interleaved.

Each row times one device of the library (``benchmarks/code_size.py`` lists them all) on a setting it serves, two
ways in the same run, alternating (with, without, with, without, ...): ``with``, the library as it runs; ``without``,
the same calls with that device replaced by its torch definition and every other device left as it is (the
switch ``BANDIT_GYM_KERNELS=0`` around a call of the function that decides, or, for a device the switch does not
reach or that is read when an env is built, the definition's lines put in its place for that object only).
``gain`` is ``without / with``, each the best of ``--repeats`` timings of at least ``--seconds``; a device must earn
1.5x on a setting it serves. ``bit for bit``: whether the two ways give the same numbers (else they agree to float32
rounding, tested in ``tests/envs/test_kernels.py``, ``tests/agents/test_kernels.py``,
``tests/agents/test_mlp_backward_kernel.py``). Every timing runs under the library's threading policy
(``bandit_gym.threads.policy``), as the envs' and agents' own calls do.

The header names the CPU model, its cores and the load average at the start; each row the load average after
it (the machine may be shared: the ratios, taken a few milliseconds apart, are what to read). The table goes to
``--out`` (default ``benchmarks/results/speed_devices.md``) and its JSON record beside it (``speed_devices.json``,
``benchmarks/_report.py``'s ``Record``), both rewritten after each row.

    python benchmarks/speed_devices.py [--seconds 0.3] [--repeats 5] [--only NAME ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import _kernels, linear
from agents.base import _replica_index, _RoundLog, chosen_rows, random_argmax
from agents.chains.langevin import langevin_steps
from agents.linear import LinUCB
from agents.lmcts import LMCTS
from agents.models.mlp import MLPModel
from agents.models.reward import LinearModel, add_observation, linear_scores
from bandit_gym import _base, rng, synthetic
from bandit_gym.rng import Stream
from bandit_gym.threads import GROUP_WORK, policy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import GrowingTable, Record, cpu_model, kernels  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "speed_devices.md"


@dataclasses.dataclass
class Case:
    """One row: ``make()`` builds ``((context, call) with the device, (context, call) without it)``."""

    name: str
    device: str
    definition: str
    timed: str
    bitwise: bool
    make: Callable[[], tuple[tuple[Callable, Callable], tuple[Callable, Callable]]]


def switch(call: Callable) -> tuple[tuple[Callable, Callable], tuple[Callable, Callable]]:
    """``call`` with the kernels on, and the same ``call`` with them off."""
    return (lambda: kernels(True), call), (lambda: kernels(False), call)


def best_per_call(context: Callable, call: Callable, seconds: float) -> float:
    """Mean seconds per call of ``call`` over at least ``seconds`` (and 3 calls), inside ``context()``."""
    with context(), policy():
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds or calls < 3:
            call()
            calls += 1
    return elapsed / calls


def compare(case: Case, seconds: float, repeats: int) -> tuple[float, float]:
    """Best seconds per call with the device and without, timed alternately."""
    sides = case.make()
    for context, call in sides:  # warm up: compiled kernels, caches, the first chunks
        best_per_call(context, call, seconds / 10)
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for i, (context, call) in enumerate(sides):
            best[i] = min(best[i], best_per_call(context, call, seconds))
    return best[0], best[1]


# -- the settings ------------------------------------------------------------------------------------------------
def keys(replicas: int) -> torch.Tensor:
    return rng.seed_to_key(list(range(replicas)))


def single_env_steps(env: gym.Env, steps: int = 100) -> Callable[[], None]:
    """``steps`` steps of a single env (``gym.make``'s, random Python-int actions, reset at the horizon)."""
    env.reset(seed=0)
    actions = iter(np.random.default_rng(0).integers(0, env.action_space.n, size=10**7).tolist())

    def run() -> None:
        for _ in range(steps):
            _, _, _, truncated, _ = env.step(next(actions))
            if truncated:
                env.reset()

    return run


def env_built(on: bool, env_id: str = "LinearBandit-v0", **kwargs) -> gym.Env:
    with kernels(on):
        return gym.make(env_id, **kwargs)


def counters_per_call() -> tuple:
    several = env_built(True)
    saved = synthetic._counters_per_call
    synthetic._counters_per_call = lambda features: 1  # the definition, for the env built now
    try:
        one = env_built(True)
    finally:
        synthetic._counters_per_call = saved
    return (lambda: kernels(True), single_env_steps(several)), (lambda: kernels(True), single_env_steps(one))


def numpy_round(env_id: str) -> Callable:
    def make() -> tuple:
        fast, plain = env_built(True, env_id), env_built(True, env_id)
        sim = plain.unwrapped.sim
        sim.numpy_rewards = False  # step's torch lines
        sim._round_arrays = types.MethodType(  # _round_arrays' torch lines
            lambda s: tuple(x.numpy() for x in (s.contexts, s.expected, s.best, s.optimal_action, s.scored)), sim)
        return (lambda: kernels(True), single_env_steps(fast)), (lambda: kernels(True), single_env_steps(plain))
    return make


def whole_switch_single(env_id: str) -> Callable:
    def make() -> tuple:
        return ((lambda: kernels(True), single_env_steps(env_built(True, env_id))),
                (lambda: kernels(False), single_env_steps(env_built(False, env_id))))
    return make


def whole_switch_vector(replicas: int) -> tuple:
    envs = []
    for on in (True, False):
        with kernels(on):
            env = gym.make_vec("LinearBandit-v0", num_envs=replicas, vectorization_mode="vector_entry_point")
        env.reset(seed=0)
        envs.append(env)
    actions = np.zeros(replicas, dtype=np.int64)

    def steps(env) -> Callable[[], None]:
        return lambda: [env.step(actions) for _ in range(10)]

    return (lambda: kernels(True), steps(envs[0])), (lambda: kernels(False), steps(envs[1]))


def scores_of(replicas: int, chunk_rounds: int) -> Callable[[], None]:
    sim = env_built(True).unwrapped.sim
    sim.theta = rng.unit_normal(keys(replicas), Stream.INSTANCE, 0, (20,))
    contexts = rng.unit_normal(keys(replicas), Stream.CONTEXT, 0, (chunk_rounds, 50, 20))  # (R, B, K, d)
    return lambda: sim._scores(contexts)


def chunk_rounds(on: bool) -> tuple[Callable, Callable]:
    """256 rounds of a single env's reward draws (``rng.ChunkDraws``, 256 a chunk), the kernels on or off."""
    draws, key = rng.ChunkDraws("normal", Stream.REWARD, (), chunk_rounds=256, scale=0.7), KEYS[1]
    return lambda: kernels(on), lambda: [draws(key, t) for t in range(256)]


def linear_model(replicas: int, dim: int = 20, rounds: int = 50) -> LinearModel:
    model = LinearModel(replicas, dim, torch.ones(replicas), torch.device("cpu"))
    for t in range(rounds):
        model.add(rng.normal(keys(replicas), Stream.CONTEXT, t, (dim,)) / dim**0.5, torch.ones(replicas))
    return model


def langevin(replicas: int, steps: int = 100) -> tuple:
    model, eta, beta = linear_model(replicas), torch.full((replicas,), 1e-3), torch.full((replicas,), 100.0)
    theta, noise = torch.zeros(replicas, 20), rng.normal(keys(replicas), Stream.SAMPLE, 0, (steps, 20))  # (R, K, d)
    gram, moment = model.gram, model.moment
    return ((lambda: kernels(True), lambda: _kernels.linear_langevin(gram, moment, theta, eta, beta, noise)),
            (lambda: kernels(False), lambda: langevin_steps(model, theta, eta, beta, noise)))


def mlp(method: str, replicas: int = 2, rows: int = 300) -> Callable[[], None]:
    model = MLPModel(replicas, 20, torch.full((replicas,), 0.3), torch.device("cpu"), keys=keys(replicas))
    for t in range(rows):
        model.add(rng.unit_normal(keys(replicas), Stream.CONTEXT, t, (20,)), torch.ones(replicas))
    theta, contexts = model.initial_params(), rng.unit_normal(keys(replicas), Stream.CONTEXT, 0, (50, 20))
    weights = torch.ones(replicas, model.n_params)
    calls = {"gradient": lambda: model.gradient(theta), "arm_gradients": lambda: model.arm_gradients(theta, contexts),
             "gradient_squares": lambda: model.gradient_squares(theta),
             "gradient_norms": lambda: model.gradient_norms(theta, contexts, weights)}
    return calls[method]


def argmax_shortcut(replicas: int) -> tuple:
    env = gym.make_vec("LinearBandit-v0", num_envs=replicas, vectorization_mode="vector_entry_point")
    agent = LinUCB(env, seed=0)
    values = rng.normal(keys(replicas), Stream.CONTEXT, 0, (50,))  # (R, K): no ties
    definition = lambda: random_argmax(values, agent._draws("uniform", Stream.TIES, (agent.n_arms,)))  # noqa: E731
    return (contextlib.nullcontext, lambda: agent._argmax(values)), (contextlib.nullcontext, definition)


def replica_index(replicas: int) -> tuple:
    contexts, actions = torch.zeros(replicas, 50, 20), torch.zeros(replicas, dtype=torch.int64)
    _replica_index(replicas, actions.device)
    return ((contextlib.nullcontext, lambda: chosen_rows(contexts, actions)),
            (contextlib.nullcontext, lambda: contexts[torch.arange(replicas), actions]))


def uniforms(replicas: int, shape: tuple[int, ...]) -> tuple:
    """rng.uniform's floats in one loop, against the definition's conversion of the words (the words compiled on
    both sides: this times the loop of the conversion alone)."""
    keys, offset = rng.seed_to_key(list(range(replicas))), rng._offset(Stream.EXPLORE, 3)

    def definition():
        return rng.uniform_of_words(rng.kernels.random_words(keys, offset, math.prod(shape)), shape)  # compiled words

    return (contextlib.nullcontext, lambda: rng.kernels.uniform(keys, offset, shape)), (contextlib.nullcontext,
                                                                                         definition)


def round_log(replicas: int, rounds: int = 1000) -> tuple:
    """learn's three logs over ``rounds`` rounds (regret a number at R = 1, reward and action tensors): kept in
    chunks on the values' device, against numpy rows written each round (a read to the host a round)."""
    regret = 0.5 if replicas == 1 else np.full(replicas, 0.5)
    reward, action = torch.rand(replicas), torch.zeros(replicas, dtype=torch.int64)
    dtypes = (np.float64, np.float32, np.int64)

    def chunked():
        logs = [_RoundLog(rounds, replicas, dtype) for dtype in dtypes]
        for _ in range(rounds):
            for log, value in zip(logs, (regret, reward, action), strict=True):
                log.add(value)
        return [log.rows() for log in logs]

    def numpy_rows():
        logs = [np.empty((rounds, replicas), dtype) for dtype in dtypes]
        for t in range(rounds):
            logs[0][t], logs[1][t], logs[2][t] = regret, reward.numpy(), action.numpy()
        return logs

    return (contextlib.nullcontext, chunked), (contextlib.nullcontext, numpy_rows)


def replica_groups(call: Callable[[], object]) -> tuple:
    """``call`` with the replica groups on every thread (``policy(work=GROUP_WORK)``, as ``learn`` runs a round of
    that work), and on one (``policy(1)``): the same numbers."""
    return (lambda: policy(work=GROUP_WORK), call), (lambda: policy(1), call)


def arm_draws(replicas: int) -> Callable[[], object]:
    """The batched LinearBandit-v0's arm features of 10 rounds (K = 50, d = 20), as its chunks draw them."""
    keys_ = keys(replicas)
    return lambda: synthetic._unit_normal_counters(keys_, Stream.CONTEXT, 0, (10, 50, 20))


def grouped_learn(agent: type, replicas: int, rounds: int) -> Callable[[], object]:
    """``rounds`` rounds of ``agent`` on the batched LinearBandit-v0 (a fresh agent and env each call)."""
    def run() -> None:
        env = gym.make_vec("LinearBandit-v0", num_envs=replicas, vectorization_mode="vector_entry_point")
        agent(env, seed=0).learn(rounds, threads=None)
    return run


def chunks(replicas: int) -> tuple:
    from chunks import timed_learn  # benchmarks/chunks.py: LinUCB's learn, stepped or in chunks
    return ((contextlib.nullcontext, lambda: timed_learn(replicas, False, 200)),
            (contextlib.nullcontext, lambda: timed_learn(replicas, True, 200)))


def feel_good(env_id: str, replicas: int = 10, rounds: int = 200, batch_size: int = 32) -> tuple:
    """FG-LMC-TS's feel-good gradient after ``rounds`` rounds of ``env_id`` (K = 50, d = 20), on a mini-batch of
    ``batch_size`` rounds: the closed form (with each distinct arm set scored once) against autograd of the term
    (every round's set scored)."""
    from agents import FGLMCTS

    env = gym.make_vec(env_id, num_envs=replicas, vectorization_mode="vector_entry_point")
    agent = FGLMCTS(env, seed=0)
    agent.learn(rounds)
    term, theta = agent.potential, agent.theta.clone()
    batch = torch.randint(0, rounds, (replicas, batch_size), generator=torch.Generator().manual_seed(0))
    return switch(lambda: term.feel_good_gradient(theta, batch))


def linear_rows(replicas: int) -> tuple:
    contexts = rng.unit_normal(keys(replicas), Stream.CONTEXT, 0, (50, 20))  # (R, K, d)
    theta = rng.normal(keys(replicas), Stream.SAMPLE, 0, (20,))
    gram, moment = torch.eye(20).expand(replicas, 20, 20).clone(), torch.zeros(replicas, 20)
    return contexts, theta, gram, moment


def ridge_calls(replicas: int) -> dict[str, Callable[[], object]]:
    """The ridge agents' round functions of :mod:`agents.linear` on LinUCB's and LinTS's sizes (K = 50, d = 20)."""
    contexts, _, eye, moment = linear_rows(replicas)
    x, rewards = contexts[:, 0].contiguous(), torch.ones(replicas)
    sums, counts, gram = torch.ones(replicas, 20), torch.zeros(replicas, 20), eye.double()
    nu = torch.ones(replicas)
    return {"ridge_update": lambda: linear.ridge_update(eye, moment, x, rewards),
            "potter_update": lambda: linear.potter_update(eye, moment, x, rewards),
            "add_outer": lambda: linear.add_outer(gram, x),
            "add_feature_sums": lambda: linear.add_feature_sums(sums, counts, contexts),
            "ucb_scores": lambda: linear.ucb_scores(contexts, moment, eye, nu)}


#: The ridge agents' round functions and what each does.
RIDGE = {"ridge_update": "Sherman-Morrison, b + r x and V^-1 b (LinUCB)",
         "potter_update": "Potter's update, b + r x and S S^T b (LinTS)",
         "add_outer": "V + x x^T in float64 (the ridge agents)",
         "add_feature_sums": "the features' sums of squares and nonzero counts (K = 50 rows)",
         "ucb_scores": "LinUCB's scores x . theta_hat + nu sqrt(x^T V^-1 x) (K = 50 rows)"}
RIDGE_CASES = [Case(name if R == 1 else f"{name}-{R}", f"agents/_kernels.py:{name}", f"agents.linear.{name}",
                    f"{what}, R = {R}", False, lambda name=name, R=R: switch(ridge_calls(R)[name]))
               for name, what in RIDGE.items() for R in (1, 10, 100)]

#: The inputs of the per-call rows, made once (by replicas).
KEYS = {replicas: keys(replicas) for replicas in (1, 10, 100)}
EXPECTED = {replicas: rng.uniform(keys(replicas), Stream.CONTEXT, 0, (B, 50)) for replicas, B in ((1, 16), (100, 2),
                                                                                                 (1000, 2))}
ROWS = {replicas: linear_rows(replicas) for replicas in (10, 160)}

CASES = [
    Case("random_words", "bandit_gym/_rng_kernels.py:random_words", "bandit_gym.rng.random_words",
         "the words of a single env's 256 reward draws (R = 1, 128 words)", True,
         lambda k=KEYS[1]: switch(lambda: rng.random_words(k, Stream.REWARD, 3, 128))),
    Case("random_words-ties", "bandit_gym/_rng_kernels.py:random_words", "bandit_gym.rng.random_words",
         "the words of the tie draws, R = 100, K = 50", True,
         lambda k=KEYS[100]: switch(lambda: rng.random_words(k, Stream.TIES, 3, 50))),
    Case("random_words-minibatch", "bandit_gym/_rng_kernels.py:random_words", "bandit_gym.rng.random_words",
         "the words of a round's mini-batch indices, R = 10, 100 steps x 64 rows", True,
         lambda k=KEYS[10]: switch(lambda: rng.random_words(k, Stream.MINIBATCH, 3, 6400))),
    Case("uniform", "bandit_gym/_rng_kernels.py:uniform", "bandit_gym.rng.uniform (after the compiled words)",
         "a round's coin or random arm, R = 1", True, lambda: uniforms(1, ())),
    Case("uniform-minibatch", "bandit_gym/_rng_kernels.py:uniform", "bandit_gym.rng.uniform (after the compiled words)",
         "a round's mini-batch rows, R = 10, 10 steps x 32 rows", True, lambda: uniforms(10, (10, 32))),
    Case("approx_normal", "bandit_gym/_rng_kernels.py:normal", "bandit_gym.rng.normal (approx_normal)",
         "LMC-TS's Langevin noise, R = 10, (100 steps, d = 20)", False,
         lambda k=KEYS[10]: switch(lambda: rng.approx_normal(k, Stream.SAMPLE, 3, (100, 20)))),
    Case("chunk_draws", "bandit_gym/_rng_kernels.py:chunk_draws", "bandit_gym.rng.ChunkDraws.__call__",
         "256 rounds of a single env's reward draws (chunk 256)", True,
         lambda: (chunk_rounds(True), chunk_rounds(False))),
    Case("unit_normal-single", "bandit_gym/_kernels.py:unit_normal", "synthetic._unit_normal_counters",
         "a single env's arm chunk: 8 counters of (2, 50, 20)", False,
         lambda k=KEYS[1]: switch(lambda: synthetic._unit_normal_counters(k, Stream.CONTEXT, 0, (2, 50, 20), 8))),
    Case("unit_normal-batched", "bandit_gym/_kernels.py:unit_normal", "synthetic._unit_normal_counters",
         "R = 100: one counter of (2, 50, 20)", False,
         lambda k=KEYS[100]: switch(lambda: synthetic._unit_normal_counters(k, Stream.CONTEXT, 0, (2, 50, 20)))),
    Case("linear_scores-single", "bandit_gym/_kernels.py:linear_scores", "SyntheticBanditSimulator._scores",
         "x . theta* of a single env's chunk (1, 16, 50, 20)", False, lambda: switch(scores_of(1, 16))),
    Case("linear_scores-batched", "bandit_gym/_kernels.py:linear_scores", "SyntheticBanditSimulator._scores",
         "x . theta* of R = 100, (100, 2, 50, 20)", False, lambda: switch(scores_of(100, 2))),
    Case("best_arms-single", "bandit_gym/_kernels.py:best_arms", "bandit_gym._base.best_arms",
         "a single env's chunk (1, 16, 50)", True, lambda x=EXPECTED[1]: switch(lambda: _base.best_arms(x))),
    Case("best_arms-batched", "bandit_gym/_kernels.py:best_arms", "bandit_gym._base.best_arms",
         "R = 100, (100, 2, 50)", True, lambda x=EXPECTED[100]: switch(lambda: _base.best_arms(x))),
    Case("best_arms-1000", "bandit_gym/_kernels.py:best_arms", "bandit_gym._base.best_arms",
         "R = 1,000, (1000, 2, 50)", True, lambda x=EXPECTED[1000]: switch(lambda: _base.best_arms(x))),
    Case("draws_per_call", "bandit_gym/_kernels.py:draws_per_call", "synthetic._counters_per_call (1)",
         "100 steps of a single LinearBandit-v0 (gym.make)", True, counters_per_call),
    Case("numpy_step", "bandit_gym/_kernels.py:numpy_step, round_arrays, chunk_draws_numpy",
         "BanditSimulator.step, _round_arrays", "100 steps of a single LinearBandit-v0", True,
         numpy_round("LinearBandit-v0")),
    Case("numpy_step-fixed", "bandit_gym/_kernels.py:numpy_step, round_arrays, chunk_draws_numpy",
         "BanditSimulator.step, _round_arrays", "100 steps of a single LinearBanditFixed-v0", True,
         numpy_round("LinearBanditFixed-v0")),
    Case("numpy_step-logistic", "bandit_gym/_kernels.py:numpy_step, round_arrays, chunk_draws_numpy",
         "BanditSimulator.step, _round_arrays", "100 steps of a single LogisticBandit-v0", True,
         numpy_round("LogisticBandit-v0")),
    Case("switch-single", "every env device (BANDIT_GYM_KERNELS)", "the torch definitions",
         "100 steps of a single LinearBandit-v0", False, whole_switch_single("LinearBandit-v0")),
    Case("switch-vector", "every env device (BANDIT_GYM_KERNELS)", "the torch definitions",
         "10 steps of the batched LinearBandit-v0, R = 100", False, lambda: whole_switch_vector(100)),
    Case("linear_langevin", "agents/_kernels.py:linear_langevin", "agents.chains.langevin.langevin_steps (LinearModel)",
         "R = 10, 100 steps, d = 20 (LMC-TS's linear chain)", False, lambda: langevin(10)),
    Case("agents-linear_scores", "agents/_kernels.py:linear_scores", "agents.models.reward.linear_scores",
         "R = 10, (10, 50, 20)", False,
         lambda c=ROWS[10]: switch(lambda: linear_scores(c[0], c[1]))),
    Case("agents-linear_scores-160", "agents/_kernels.py:linear_scores", "agents.models.reward.linear_scores",
         "R = 160, (160, 50, 20)", False,
         lambda c=ROWS[160]: switch(lambda: linear_scores(c[0], c[1]))),
    Case("add_observation", "agents/_kernels.py:add_observation", "agents.models.reward.add_observation",
         "R = 10, d = 20", False,
         lambda c=ROWS[10]: switch(lambda: add_observation(c[2], c[3], c[0][:, 0], c[1][:, 0]))),
    Case("add_observation-160", "agents/_kernels.py:add_observation", "agents.models.reward.add_observation",
         "R = 160, d = 20", False,
         lambda c=ROWS[160]: switch(lambda: add_observation(c[2], c[3], c[0][:, 0], c[1][:, 0]))),
    *RIDGE_CASES,
    Case("mlp_gradient", "agents/_kernels.py:mlp_gradient (mlp_backward, ...)", "MLPModel.gradient (autograd)",
         "R = 2, 20-20-20 MLP, 300 rows", False, lambda: switch(mlp("gradient"))),
    Case("mlp_arm_gradients", "agents/_kernels.py:mlp_arm_gradients", "MLPModel.arm_gradients (vmap of grad)",
         "R = 2, 20-20-20 MLP, 50 arms", False, lambda: switch(mlp("arm_gradients"))),
    Case("mlp_gradient_squares", "agents/_kernels.py:mlp_gradient_squares", "MLPModel.gradient_squares (autograd)",
         "R = 2, 20-20-20 MLP, 300 rows", False, lambda: switch(mlp("gradient_squares"))),
    Case("mlp_gradient_norms", "agents/_kernels.py:mlp_gradient_norms", "MLPModel.gradient_norms (vmap of grad)",
         "R = 2, 20-20-20 MLP, 50 arms", False, lambda: switch(mlp("gradient_norms"))),
    Case("feel_good_gradient", "agents/models/feelgood.py:FeelGood.feel_good_gradient",
         "autograd of FeelGood.feel_good", "FG-LMC-TS, LinearBandit-v0, R = 10, 200 rounds, a batch of 32", False,
         lambda: feel_good("LinearBandit-v0")),
    Case("feel_good_gradient-fixed", "agents/models/feelgood.py:FeelGood.feel_good_gradient, _ArmSets",
         "autograd of FeelGood.feel_good", "FG-LMC-TS, LinearBanditFixed-v0 (one arm set), R = 10, "
         "200 rounds, a batch of 32", False, lambda: feel_good("LinearBanditFixed-v0")),
    Case("argmax-shortcut", "agents/_kernels.py:unique_argmax (BanditAgent._argmax)", "random_argmax with its draws",
         "R = 1, K = 50, no tie", True, lambda: argmax_shortcut(1)),
    Case("argmax-shortcut-100", "agents/_kernels.py:unique_argmax (BanditAgent._argmax)",
         "random_argmax with its draws", "R = 100, K = 50, no tie", True, lambda: argmax_shortcut(100)),
    Case("replica_index", "agents/base.py:_replica_index (lru_cache; not on the switch)", "torch.arange(R) a call",
         "chosen_rows, R = 10", True, lambda: replica_index(10)),
    Case("chunks", "bandit_gym/_base.py:next_rounds + agents/loop/rounds.py:ChunkSteps (not on the switch)",
         "env.step a round", "LinUCB learn, 200 rounds of a single LinearBandit-v0", True, lambda: chunks(1)),
    Case("chunks-10", "bandit_gym/_base.py:next_rounds + agents/loop/rounds.py:ChunkSteps (not on the switch)",
         "env.step a round", "LinUCB learn, 200 rounds of the batched LinearBandit-v0, R = 10", True,
         lambda: chunks(10)),
    Case("replica-groups-draws", "bandit_gym/threads.py:for_each (unit_normal's passes)", "one thread (threads=1)",
         "the batched LinearBandit-v0's arm features of 10 rounds, R = 100", True,
         lambda: replica_groups(arm_draws(100))),
    Case("replica-groups-draws-1000", "bandit_gym/threads.py:for_each (unit_normal's passes)",
         "one thread (threads=1)", "the batched LinearBandit-v0's arm features of 10 rounds, R = 1,000", True,
         lambda: replica_groups(arm_draws(1000))),
    Case("replica-groups-linucb-1000", "bandit_gym/threads.py:for_each, by_replicas (env draws, ridge kernels)",
         "one thread (threads=1)", "LinUCB learn, 20 rounds of the batched LinearBandit-v0, R = 1,000", True,
         lambda: replica_groups(grouped_learn(LinUCB, 1000, 20))),
    Case("replica-groups-lmcts-1000", "bandit_gym/threads.py:for_each, by_replicas (env draws, Langevin, normals)",
         "one thread (threads=1)", "LMC-TS learn, 10 rounds of the batched LinearBandit-v0, R = 1,000", True,
         lambda: replica_groups(grouped_learn(LMCTS, 1000, 10))),
    Case("round_log", "agents/base.py:_RoundLog (not on the switch)", "numpy rows written each round",
         "learn's three logs, 1,000 rounds, R = 1", True, lambda: round_log(1)),
    Case("round_log-10", "agents/base.py:_RoundLog (not on the switch)", "numpy rows written each round",
         "learn's three logs, 1,000 rounds, R = 10", True, lambda: round_log(10)),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="+", default=None, choices=[case.name for case in CASES], metavar="NAME")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cases = [case for case in CASES if args.only is None or case.name in args.only]
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    busy = (f" The machine is shared and busy (load average {load:.1f} on {cores} cores): read the ratios, not the "
            "times." if load > cores / 2 else "")
    header = [
        "# What each speed device earns (`python benchmarks/speed_devices.py`)",
        "",
        f"{cpu_model()}, {cores} CPUs, load average {load:.1f} at the start; torch "
        f"{torch.__version__}, the library's threading policy; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"Best of {args.repeats} timings of at least {args.seconds} s each, with and without the device "
        f"alternately; gain = without / with (a device must earn 1.5x on a setting it serves).{busy}",
        "",
        "| row | device | torch definition it replaces | timed | with (us) | without (us) | gain | bit for bit "
        "| load after |",
        "|---|---|---|---|---:|---:|---:|---|---:|",
    ]
    table = GrowingTable(header, args.out)
    record = Record(args.out.stem, {"seconds": args.seconds, "repeats": args.repeats, "only": args.only},
                    out_dir=args.out.parent)
    for case in cases:
        with_device, without = compare(case, args.seconds, args.repeats)
        record.row(row=case.name, device=case.device, definition=case.definition, timed=case.timed,
                   with_us=round(with_device * 1e6, 2), without_us=round(without * 1e6, 2),
                   gain=round(without / with_device, 3), bit_for_bit=case.bitwise)
        table.row(f"| {case.name} | `{case.device}` | `{case.definition}` | {case.timed} | {with_device * 1e6:,.1f} | "
                  f"{without * 1e6:,.1f} | {without / with_device:.2f}x | {'yes' if case.bitwise else 'no'} | "
                  f"{os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
