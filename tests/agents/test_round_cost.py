"""What a round of ``learn`` costs the agent, counted: torch calls and host reads per round (issue 39, item 2).

The count is of what is the agent's own in a round: ``_as_contexts``, ``_select``, ``_as_rewards`` and
``_observe``, and ``learn``'s per-round bookkeeping (history, logger, callbacks). The round loop's own glue in
:mod:`agents.loop.rounds` (the env's step or its chunk of rounds, and handing the actions to it) is left out: it is the
env's cost, the same for every agent.

**A torch call** is one call that :class:`torch.overrides.TorchFunctionMode` sees: a ``torch.*`` function or a
``Tensor`` method or operator (``Tensor.item``, ``Tensor.__mul__``, ``Tensor.__getitem__`` ...), each at Python
level, whatever torch does inside it. Not counted: reads of a tensor's attributes (``.shape``, ``.dtype``,
``.device``, ``.is_cpu``: getset descriptors, no dispatch). A compiled kernel (:mod:`agents._kernels`, the random
streams' kernels) counts as one call, whatever it does inside (it replaces one torch function; its ``.numpy()``
hands CPU memory to numba without a copy). **A host read** is a call that brings a tensor's values to the host or
into Python: ``.item()``, ``.cpu()``, ``.numpy()``, ``.tolist()``, and the implicit ``bool()``, ``int()``,
``float()`` of a tensor (on a GPU each waits for the device).

Counts are deterministic (not timings): the steady state of a round is ``(count(2k rounds) - count(k rounds)) / k``
after a warm-up, on ``LinearBandit-v0`` with 4 arms and 3 features, at ``R = 1`` and ``R = 10``.
"""

from __future__ import annotations

import collections
import functools
import inspect

import gymnasium as gym
import pytest
import torch
from torch.overrides import TorchFunctionMode

import agents
import bandit_gym  # noqa: F401  (registers the envs)
from agents import _kernels
from agents.base import BanditAgent
from agents.loop import rounds
from bandit_gym import rng

HOST_READS = {"item", "cpu", "numpy", "tolist", "__bool__", "__int__", "__float__", "__index__"}
#: The compiled kernels: the public functions of agents/_kernels.py and of the random streams' kernel module
#: (bandit_gym.rng's ``kernels``), but their switches ``enabled*``.
KERNELS = tuple((module, name) for module in (_kernels, rng.kernels) for name, value in vars(module).items()
                if inspect.isfunction(value) and value.__module__ == module.__name__
                and not name.startswith(("_", "enabled")))
AGENT_METHODS = ("_as_contexts", "_select", "_as_rewards", "_observe")
#: Agent -> (torch calls per round with the kernels on, with them off, host reads per round), at R = 1 and
#: R = 10: the counts now, rounded up, so that one more call or read fails (with the kernels off, every round of an
#: agent that calls ``_argmax`` draws its ties in plain torch: about 17 calls more than the kernels' tie shortcut;
#: FG-LMC-TS's feel-good gradient is autograd's, about 580 calls more than its closed form).
#: A kernel counts as one call, what it does inside included: ``_kernels.unique_argmax``, the tie shortcut, reads one
#: count into Python on the CPU (it is off on a GPU, so the kernels-off counts are those that bear on a GPU's syncs).
#: Issue 39's target for LinUCB, LinTS and linear LMC-TS, at most 20 calls and no read, is met with the kernels on
#: (``test_linear_agents_meet_the_round_target``): their rounds are the ridge kernels of :mod:`agents.linear`
#: (``ridge_update``, ``potter_update``, ``add_outer``, ``add_feature_sums``) and LMC-TS's check for NaN or Inf every
#: ``CHECK_ROUNDS`` rounds (:meth:`agents.base.BanditAgent._end_round`).
ROUND_COST = {
    "DiscountedLinUCB": (41, 76, 1),
    "EnsembleSampling": (39, 133, 2),
    "EpsGreedy": (21, 95, 0),
    "FGLMCTS": (3453, 4040, 2),
    "GLMTSL": (105, 193, 3),
    "HMCTS": (11735, 11824, 0),
    "LMCTS": (20, 1396, 0),
    "LinFullPost": (116, 193, 0),
    "LinTS": (18, 115, 0),
    "LinUCB": (11, 72, 0),
    "MALATS": (4929, 5018, 0),
    "NeuralEpsGreedy": (102, 609, 2),
    "NeuralLinUCB": (174, 660, 2),
    "NeuralLinear": (142, 219, 0),
    "NeuralTS": (118, 717, 2),
    "NeuralUCB": (115, 679, 2),
    "SGDTS": (56, 139, 3),
    "SlidingWindowLinUCB": (52, 87, 1),
    "UCBGLM": (93, 154, 2),
    "ULMCTS": (2260, 2328, 0),
    "UniformRandom": (7, 28, 0),
    "VITS": (3218, 3286, 0),
}
LEAN = ("LinUCB", "LinTS", "LMCTS")

class RoundCounter(TorchFunctionMode):
    """Counts torch calls and host reads by name while :attr:`depth` > 0 (inside the agent's own code)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()
        self.depth = 1  # learn's own code counts; the round loop's glue is turned off below

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.depth > 0 and getattr(func, "__name__", None) != "__get__":  # (attribute reads)
            self.calls[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))

    def counting(self, function, depth: int):
        """``function`` run with ``depth`` set (1: count, 0: not), put back afterwards."""

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            saved, self.depth = self.depth, depth
            try:
                return function(*args, **kwargs)
            finally:
                self.depth = saved

        return wrapped

    def kernel(self, function):
        """A kernel of :mod:`agents._kernels` as one call."""

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            if self.depth > 0:
                self.calls[f"kernel {function.__name__}"] += 1
            saved, self.depth = self.depth, 0
            try:
                return function(*args, **kwargs)
            finally:
                self.depth = saved

        return wrapped


def make_env(num_replicas: int):
    sizes = {"n_arms": 4, "dim": 3, "horizon": 10**6}
    if num_replicas == 1:
        return gym.make("LinearBandit-v0", **sizes)
    return gym.make_vec("LinearBandit-v0", num_envs=num_replicas, vectorization_mode="vector_entry_point", **sizes)


def learn_counts(monkeypatch, cls: type[BanditAgent], num_replicas: int, rounds_played: int) -> collections.Counter:
    """Calls by name in ``learn(rounds_played)`` after a 5-round warm-up, the agent's own code only."""
    env = make_env(num_replicas)
    agent = cls(env, seed=0, **({"horizon": 1000} if cls is agents.LinTS else {}))
    agent.learn(5)
    counter = RoundCounter()
    with monkeypatch.context() as patch:
        patch.setattr(rounds.Rounds, "__next__", counter.counting(rounds.Rounds.__next__, 0))
        for name in AGENT_METHODS:
            patch.setattr(agent, name, counter.counting(getattr(agent, name), 1))
        for module, name in KERNELS:
            patch.setattr(module, name, counter.kernel(getattr(module, name)))
        with counter:
            agent.learn(rounds_played)
    return counter.calls


def per_round(monkeypatch, cls: type[BanditAgent], num_replicas: int, k: int = 16) -> tuple[float, float]:
    """``(torch calls, host reads)`` per round of ``learn`` in the steady state."""
    short, long = (learn_counts(monkeypatch, cls, num_replicas, n) for n in (k, 2 * k))
    long.subtract(short)
    calls = sum(long.values()) / k
    reads = sum(n for name, n in long.items() if name in HOST_READS) / k
    return calls, reads


def every_agent() -> list[str]:
    return sorted(name for name in agents.__all__ if isinstance(getattr(agents, name), type)
                  and issubclass(getattr(agents, name), BanditAgent) and getattr(agents, name) is not BanditAgent)


def test_round_counter_counts_a_known_round(monkeypatch):
    """The counter itself: a fake round of exactly 3 torch calls and 1 host read counts 3 and 1 per round."""

    class ThreeCalls(agents.UniformRandom):
        def _select(self, contexts):
            return torch.zeros(self.num_replicas, dtype=torch.int64)  # 1 call

        def _observe(self, contexts, actions, rewards):
            float(rewards.sum())  # 2 calls, 1 of them a host read

        def _as_contexts(self, observation, check_finite=False):
            return observation

        def _as_rewards(self, reward):
            return torch.as_tensor(reward)  # not a Tensor method: torch.as_tensor is one call

    calls, reads = per_round(monkeypatch, ThreeCalls, 1)
    # learn's bookkeeping adds the history writes of reward and action (2 Tensor.__setitem__)
    assert (calls, reads) == (6.0, 1.0)


def test_every_agent_has_a_recorded_round_cost():
    assert sorted(ROUND_COST) == every_agent()


#: The chains of thousands of torch calls a round (a counted call costs microseconds): slow, not default.
CHAINS = {name for name, (on_calls, _, _) in ROUND_COST.items() if on_calls > 1000}


@pytest.mark.parametrize("num_replicas", [1, 10])
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in CHAINS else name
                                  for name in sorted(ROUND_COST)])
def test_round_cost_of_every_agent_within_its_recorded_bound(monkeypatch, kernels, name, num_replicas):
    on_calls, off_calls, most_reads = ROUND_COST[name]
    calls, reads = per_round(monkeypatch, getattr(agents, name), num_replicas)
    bound = on_calls if kernels == "kernels-on" else off_calls
    assert calls <= bound, f"{name} makes {calls} torch calls per round, recorded {bound}"
    assert reads <= most_reads, f"{name} reads {reads} values to the host per round, recorded {most_reads}"


@pytest.mark.parametrize("num_replicas", [1, 10])
@pytest.mark.parametrize("name", LEAN)
def test_linear_agents_meet_the_round_target(monkeypatch, kernels, name, num_replicas):
    """Issue 39, item 2: at most 20 torch calls and no host read a round, the kernels' round (the torch definitions
    alone make 70 to 1,400 calls: ``ROUND_COST``)."""
    if kernels == "kernels-off":
        pytest.skip("the target is the kernels' round; the torch definitions' counts are bounded by ROUND_COST")
    calls, reads = per_round(monkeypatch, getattr(agents, name), num_replicas)
    assert calls <= 20, f"{name} makes {calls} torch calls a round at R = {num_replicas}"
    assert reads == 0, f"{name} reads {reads} values to the host a round at R = {num_replicas}"


def poisoned(cls: type[BanditAgent]) -> tuple[BanditAgent, gym.Env]:
    """A ridge agent after 9 rounds whose moment vector has a NaN: every later ridge estimate is NaN."""
    env = make_env(1)
    agent = cls(env, seed=0, **({"horizon": 1000} if cls is agents.LinTS else {}))
    agent.learn(9)
    agent.moment[0, 0] = float("nan")
    return agent, env


@pytest.mark.parametrize("name", ["LinUCB", "LinTS"])
def test_ridge_agents_find_a_divergence_within_check_rounds(name):
    """The ridge agents check for NaN or Inf every CHECK_ROUNDS rounds of a loop, not each round."""
    from agents.base import CHECK_ROUNDS

    agent, _ = poisoned(getattr(agents, name))
    with pytest.raises(agents.DivergenceError, match=rf"^{name}: the ridge estimate theta_hat became NaN or Inf by "
                                                     rf"round {CHECK_ROUNDS}; "):
        agent.learn(1000)
    assert agent.t == CHECK_ROUNDS  # the check of round CHECK_ROUNDS raised, before its t += 1


@pytest.mark.parametrize("name", ["LinUCB", "LinTS"])
def test_ridge_agents_check_at_the_end_of_learn_and_of_a_rounds_loop(name):
    agent, env = poisoned(getattr(agents, name))
    with pytest.raises(agents.DivergenceError, match=r"became NaN or Inf by round 29; "):
        agent.learn(20)  # rounds 10 to 29
    agent, env = poisoned(getattr(agents, name))
    with pytest.raises(agents.DivergenceError, match=r"became NaN or Inf by round 29; "):
        for _ in agent.rounds(env, 20):  # the experiment runner's loop
            pass


def test_lmcts_finds_a_divergence_within_check_rounds():
    """LMC-TS reads nothing back a round: a NaN in its sample is found at the next check, round CHECK_ROUNDS of
    the loop (the NaN stays in every later chain's sample), and names the round and the step size."""
    from agents.base import CHECK_ROUNDS

    env = make_env(1)
    agent = agents.LMCTS(env, seed=0)
    agent.learn(9)
    agent.theta[0, 0] = float("nan")
    with pytest.raises(agents.DivergenceError, match=rf"^LMCTS: the parameters sampled by round {CHECK_ROUNDS + 1} "
                                                     r"became NaN or Inf with step size eta_t = "):
        agent.learn(1000)
    assert agent.t == CHECK_ROUNDS  # the check of round CHECK_ROUNDS raised, before its t += 1
