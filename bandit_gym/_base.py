"""Shared machinery of every bandit env: one batched simulator, two Gymnasium faces.

A :class:`BanditSimulator` holds ``R`` independent replicas of one contextual
bandit as tensors. One round, in the order it runs (see ``docs/envs.md``):

1. :meth:`BanditSimulator._show_arms`: the arms of round ``t`` (``_contexts``), their
   expected rewards (``_mean_rewards``), the best value, the first optimal arm and what a step scores
   (``scored``: the expected rewards themselves, but for the Showdown's envs, :mod:`bandit_gym.showdown`);
2. :meth:`BanditSimulator.step`: the chosen arms' scored values, their regret
   ``best - chosen`` and random rewards (``_sample_rewards``); then ``t + 1`` and step 1.

:meth:`BanditSimulator.next_rounds` draws rounds ``t .. t + n - 1`` at once, as a :class:`RoundChunk` holding the
reward every arm would pay (``_arm_rewards``): the numbers of ``n`` steps, whatever arms are played, because
contexts and reward noise never depend on the actions. Both faces offer it as ``next_rounds(n)``;
:func:`chunked_rounds` says whether a (wrapped) env's rounds can be drawn so (``docs/envs.md``, "Rounds in chunks").

The single env (:class:`BanditEnv`, ``R = 1``, numpy) and the native batched env
(:class:`BanditVectorEnv`, any ``R``) drive the same simulator class, so
a problem's math is written once.

Seeding: every random number is a function of a replica's key (:mod:`bandit_gym.rng`).
``reset(seed=s)`` uses the key of ``s``; an unseeded ``reset`` moves to the next
episode's key (the first one draws a seed from ``self.np_random``).
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from abc import ABC, abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from bandit_gym import _kernels, rng
from bandit_gym.threads import policy
from bandit_gym.validation import check_choice, check_int, check_keywords, check_render_mode, resolve_device, short_repr


@dataclasses.dataclass(frozen=True)
class RoundChunk:
    """Rounds ``first_round .. first_round + n - 1`` of ``R`` replicas, drawn in one call (``env.next_rounds(n)``).

    Every tensor is on the env's device, round first: ``contexts[i]`` is round ``first_round + i``'s observation
    and ``rewards[i, r, a]`` is, bit for bit, what ``step`` pays replica ``r`` for arm ``a`` in that round (one
    noise draw per round and replica, shared by its arms). A single env's chunk has ``R = 1``.

    Attributes:
        first_round: The env's round ``t`` (from 0 at reset) of ``contexts[0]``.
        contexts: Arm features ``(n, R, K, d)`` float32.
        expected: Expected reward of every arm ``(n, R, K)`` float32.
        best: The value regret is scored against ``(n, R)`` float32: the best expected reward (the Showdown's
            envs: their own, :mod:`bandit_gym.showdown`).
        optimal_action: The first arm with the best expected reward ``(n, R)`` int64.
        scored: What ``step`` scores each arm by ``(n, R, K)`` float32: regret is ``best - scored[arm]``. The
            expected rewards (the same memory) but for the Showdown's envs, where it is the round's reward row.
        rewards: The reward every arm pays ``(n, R, K)`` float32.
        next_contexts: The arms of round ``first_round + n`` ``(R, K, d)``: the observation after the chunk.
    """

    first_round: int
    contexts: torch.Tensor
    expected: torch.Tensor
    best: torch.Tensor
    optimal_action: torch.Tensor
    scored: torch.Tensor
    rewards: torch.Tensor
    next_contexts: torch.Tensor

    def __len__(self) -> int:
        return len(self.contexts)

    def rewards_of(self, actions: torch.Tensor, round: int | None = None) -> torch.Tensor:
        """What the arms ``actions`` pay: ``(n, R) -> (n, R)``, or of chunk round ``round`` only ``(R,) -> (R,)``."""
        rewards = self.rewards if round is None else self.rewards[round]
        return rewards.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def regret_of(self, actions: torch.Tensor, round: int | None = None) -> torch.Tensor:
        """``best - scored[actions]`` as ``step``'s ``info["regret"]`` computes it (float32): ``(n, R) -> (n, R)``,
        or of chunk round ``round`` only ``(R,) -> (R,)``."""
        scored, best = (self.scored, self.best) if round is None else (self.scored[round], self.best[round])
        return best - scored.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


class BanditSimulator(ABC):
    """``R`` replicas of a contextual bandit, advanced in lockstep with tensor operations.

    Rounds are computed a chunk of ``chunk_rounds`` rounds at a time (one generator call and a
    few tensor operations per chunk instead of per round; the numbers never depend on the
    chunk size, which may depend on ``R``). Subclasses draw what stays fixed for an episode in
    :meth:`_new_episode` and define
    :meth:`_contexts`, :meth:`_mean_rewards` and :meth:`_sample_rewards`; those that define :meth:`_arm_rewards`
    too can draw rounds in chunks (:meth:`next_rounds`). A step scores the chosen arm by ``scored`` (regret
    ``best - scored[arm]``, rewards drawn given ``scored[arm]``): the expected rewards themselves, the same
    tensor, unless :meth:`_draw_chunk` says otherwise (the Showdown's envs). A pickled simulator
    holds its configuration, keys and round; the attributes named in :attr:`derived` are
    recomputed from them when it is loaded.
    """

    n_arms: int
    dim: int
    horizon: int
    chunk_rounds: int = 1
    #: Whether :meth:`_sample_rewards` also takes and returns numpy arrays (then a single env's round on CPU runs
    #: no torch operation with the kernels on: :func:`bandit_gym._kernels.numpy_step`).
    numpy_rewards: bool = False
    #: Bounds of every feature, for the observation space.
    feature_low: float = -np.inf
    feature_high: float = np.inf
    #: Attributes computed from the keys and the round, left out of pickles.
    derived: tuple[str, ...] = ("contexts", "expected", "best", "optimal_action", "scored", "_rounds",
                                  "_chunk_index", "_arrays", "_chunk")

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu") -> None:
        self.num_replicas = check_int("num_envs", num_replicas)
        self.device = torch.device(device)
        self.keys: torch.Tensor | None = None  # (R,) int64, set by reset
        self.t = 0
        self.__dict__.update(dict.fromkeys(self.derived))  # contexts (R, K, d), expected, scored (R, K), best (R,)
        self._chunk_index = -1

    @abstractmethod
    def _new_episode(self) -> None:
        """Draw what stays fixed for the episode (theta*, a fixed arm set, a row order) from ``self.keys``."""

    @abstractmethod
    def _contexts(self, chunk: int) -> torch.Tensor:
        """Arm features of rounds ``chunk B .. chunk B + B - 1`` (``B = chunk_rounds``), ``(R, B, K, d)`` float32,
        in memory of their own (the observations handed out are views of it)."""

    @abstractmethod
    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        """Expected reward of every arm, ``(R, B, K, d) -> (R, B, K)`` float32."""

    @abstractmethod
    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        """Random rewards of round ``t``'s chosen arms given their scored values (``scored``: the expected rewards
        but for the Showdown's envs), ``(R,) -> (R,)``."""

    def _arm_rewards(self, expected: torch.Tensor, t: int) -> torch.Tensor:
        """The reward every arm pays in rounds ``t .. t + n - 1``, given their scored values (``scored``: the
        expected rewards but for the Showdown's envs) ``(R, n, K) -> (R, n, K)``: bit for bit what
        :meth:`_sample_rewards` gives the arm played. A simulator without it (this one raises) plays round by
        round; :func:`chunked_rounds` checks for it."""
        raise NotImplementedError(f"{type(self).__name__} draws its rewards one round at a time (no _arm_rewards)")

    def reset(self, keys: torch.Tensor) -> None:
        """Start an episode for each replica key ``(R,)``."""
        self.keys = keys.to(self.device)
        self.t = 0
        self._new_episode()
        self._chunk_index = -1
        self._show_arms()

    def _draw_chunk(self, chunk: int) -> tuple[torch.Tensor, ...]:
        """Chunk ``chunk``'s arms ``(R, B, K, d)``, expected rewards ``(R, B, K)``, best values and first optimal
        arms ``(R, B)``, and what a step scores ``(R, B, K)``: here the expected rewards, the same tensor."""
        contexts = self._contexts(chunk)  # (R, B, K, d)
        expected = self._mean_rewards(contexts)  # (R, B, K)
        return contexts, expected, *best_arms(expected), expected

    def _show_arms(self, drawn: tuple[torch.Tensor, ...] | None = None) -> None:
        """Round ``t``'s arms ``(R, K, d)``, expected rewards ``(R, K)``, best value and first optimal arm ``(R,)``
        and scored values ``(R, K)``; ``drawn``: round ``t``'s chunk where the caller has drawn it already."""
        index, row = divmod(self.t, self.chunk_rounds)
        if index != self._chunk_index:
            self._chunk = self._draw_chunk(index) if drawn is None else drawn
            rounds = zip(*(x.unbind(1) for x in _distinct(self._chunk)), strict=True)
            # (contexts, expected, best, optimal, scored) per round; scored is expected's view where the chunk's is
            self._rounds = [r if len(r) == 5 else (*r, r[1]) for r in rounds]
            self._chunk_index = index
        self.contexts, self.expected, self.best, self.optimal_action, self.scored = self._rounds[row]

    def next_rounds(self, n: int) -> RoundChunk:
        """Rounds ``t .. t + n - 1`` at once (the caller checks ``n``), then ``t + n``: the numbers of ``n`` steps.

        The chunks of ``chunk_rounds`` rounds holding those rounds and round ``t + n`` (the observation after) are
        drawn in order, each once, the chunk in hand reused; the last one stays in hand for the rounds that follow.
        The returned chunk's tensors are its own memory (writing into them changes nothing the simulator does).
        """
        t, B = self.t, self.chunk_rounds
        first, last = t // B, (t + n) // B
        chunks = [self._chunk if i == self._chunk_index else self._draw_chunk(i) for i in range(first, last + 1)]
        parts = [_distinct(drawn) for drawn in chunks]
        joined = parts[0] if len(parts) == 1 else [torch.cat(x, dim=1) for x in zip(*parts, strict=True)]
        rows = slice(t - first * B, t - first * B + n)  # rounds t .. t + n - 1 of the joined chunks
        drawn = [x[:, rows] for x in joined]  # (R, n, ...) contexts, expected, best, optimal (, scored)
        after = joined[0][:, t + n - first * B]  # (R, K, d) round t + n's arms
        if len(chunks) == 1:  # views of the chunk in hand: copies, so that the returned chunk is the caller's
            drawn, after = [x.clone() for x in drawn], after.clone()
        contexts, expected, best, optimal, *scored = drawn
        scored = scored[0] if scored else expected  # (R, n, K)
        rewards = self._arm_rewards(scored, t)  # (R, n, K)
        self.t = t + n
        self._show_arms(chunks[-1])
        fields = (contexts, expected, best, optimal, scored, rewards)
        return RoundChunk(t, *(x.transpose(0, 1) for x in fields), after)

    def _round_arrays(self) -> tuple:
        """Round ``t`` as numpy arrays (CPU only), views of its tensors: arms ``(R, K, d)``, expected rewards
        ``(R, K)``, best value and first optimal arm ``(R,)``, scored values ``(R, K)``."""
        if _kernels.enabled() and self.device.type == "cpu":
            return _kernels.round_arrays(self)  # the same arrays, views of the chunk kept with it
        return tuple(x.numpy() for x in (self.contexts, self.expected, self.best, self.optimal_action, self.scored))

    def step(self, actions: torch.Tensor | int) -> tuple[torch.Tensor, torch.Tensor]:
        """Play ``actions`` ``(R,)`` int64 (or one arm index for every replica, an int) in round ``t``;
        return ``(rewards, regret)``, ``(R,)`` each: tensors, or numpy arrays for an int on CPU with the kernels on
        where the simulator's ``_sample_rewards`` takes numpy (:attr:`numpy_rewards`; the same float32 numbers)."""
        if _kernels.enabled() and isinstance(actions, int) and self.numpy_rewards and self.device.type == "cpu":
            return _kernels.numpy_step(self, actions)  # the same numbers, no torch call (the single env's round)
        if isinstance(actions, int):
            chosen = self.scored.select(1, actions)  # (R,) a view: no index tensor to build
        else:
            chosen = self.scored.gather(1, actions.view(-1, 1)).view(-1)  # (R,)
        regret = self.best - chosen  # (R,) exactly 0 for an optimal arm
        rewards = self._sample_rewards(chosen, self.t)  # (R,)
        self.t += 1
        self._show_arms()  # round `horizon` is observed too (the final observation), never played
        return rewards, regret

    @property
    def truncated(self) -> bool:
        return self.t >= self.horizon

    def spec_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keywords an env's ``spec`` records, given those it was made with (here: the same)."""
        return kwargs

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self.derived}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.update(dict.fromkeys(self.derived))
        self._chunk_index = -1
        if self.keys is not None:  # a loaded pickle: recompute the episode's draws and round t
            with policy():  # torch's threads, as in reset and step (bandit_gym/threads.py)
                t = self.t
                self.reset(self.keys)
                self.t = t
                self._show_arms()


def _distinct(drawn: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """A chunk's tensors (:meth:`BanditSimulator._draw_chunk`) without ``scored`` where it is ``expected`` itself:
    each tensor is sliced and copied once."""
    return drawn[:4] if drawn[4] is drawn[1] else drawn


def best_arms(expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The best expected reward and the first arm that has it: ``(R, B, K) -> (R, B), (R, B)`` int64."""
    if _kernels.enabled() and expected.device.type == "cpu" and expected.dtype == torch.float32:
        return _kernels.best_arms(expected)  # the same, compiled
    return expected.amax(dim=2), expected.argmax(dim=2)  # argmax: the first maximiser


def _check_chunk(sim: BanditSimulator, n: Any, end: int) -> int:
    """``n`` as the rounds ``next_rounds`` may draw: an integer in ``[1, end - t]`` (``end``: the episode's rounds)."""
    if sim.keys is None:
        raise RuntimeError("call reset() before next_rounds()")
    left = end - sim.t
    if left <= 0:
        raise RuntimeError(f"the episode ended after its {end} rounds; call reset()")
    n = check_int("n", n)
    if n > left:
        raise ValueError(f"n must be at most the {left} rounds left in the episode (round {sim.t} of {end}), got {n}")
    return n


#: The wrappers :func:`chunked_rounds` looks through: those ``gym.make`` adds, which change nothing a round shows or
#: pays. Any other wrapper (``TimeLimit``, ``TransformReward``, the feedback wrappers, ``Drift``, your own) may, so
#: its rounds are played with its ``step``.
TRANSPARENT_WRAPPERS: tuple[type, ...] = (OrderEnforcing, PassiveEnvChecker)


def chunked_rounds(env: Any) -> Any:
    """``next_rounds`` of the bandit env inside ``env``, or None where its rounds must be played with ``step``.

    None unless ``env`` is a :class:`BanditEnv` or :class:`BanditVectorEnv` whose ``step`` is theirs, wrapped at
    most in :data:`TRANSPARENT_WRAPPERS` (exactly those classes: a subclass may change what it passes on), and its
    simulator draws every arm's rewards (``_arm_rewards``). The agents' round loop asks once per loop.
    """
    while type(env) in TRANSPARENT_WRAPPERS:
        env = env.env
    face = next((c for c in (BanditEnv, BanditVectorEnv) if isinstance(env, c)), None)
    if face is None or type(env).step is not face.step:
        return None
    if type(env.sim)._arm_rewards is BanditSimulator._arm_rewards:
        return None
    return env.next_rounds


def render_text(sim: BanditSimulator, replica: int, last_action: int | None) -> str:
    """One replica's round as text: the round, its arms' expected rewards and the last choice."""
    means = " ".join(f"{v:.3f}" for v in sim.expected[replica].tolist())
    last = "none yet" if last_action is None else str(last_action)
    return (f"round {sim.t}/{sim.horizon}  last choice: {last}  optimal arm: {int(sim.optimal_action[replica])}\n"
            f"expected rewards: {means}\n")


def _spec_with_horizon(spec: EnvSpec | None, episode_steps: int, sim: BanditSimulator) -> EnvSpec | None:
    """``spec`` as ``gym.make`` / ``gym.make_vec`` set it, with ``max_episode_steps`` the rounds an episode
    really has and the keywords the simulator records (:meth:`BanditSimulator.spec_kwargs`).

    The keywords keep a ``max_episode_steps`` only where it ends episodes before the horizon: ``gym.make_vec(spec)``
    passes the spec's ``max_episode_steps`` as a keyword, and the env it makes then records the same spec.
    """
    if spec is None:
        return None
    kwargs = sim.spec_kwargs(dict(spec.kwargs))
    if episode_steps == sim.horizon:
        kwargs.pop("max_episode_steps", None)
    return dataclasses.replace(spec, max_episode_steps=episode_steps, kwargs=kwargs)


def _action_error(action: Any, n_arms: int, why: str) -> ValueError:
    return ValueError(f"action must be an integer arm index in [0, {n_arms}) (Discrete({n_arms})); "
                      f"got {action!r} of type {type(action).__name__}: {why}")


def _numeric_array(actions: Any, num_envs: int) -> np.ndarray:
    """``actions`` as a numpy array of numbers (or a 0-d array, refused by the caller); text, objects and
    ragged nesting are refused, naming what came."""
    try:
        array = np.asarray(actions)
    except ValueError:  # ragged nesting
        array = None
    if array is None or (array.ndim > 0 and array.dtype.kind not in "biufc"):
        raise ValueError(f"actions must be an array-like of {num_envs} integer arm indices (one per replica), got "
                         f"{short_repr(actions)} of type {type(actions).__name__}"
                         + ("" if array is None else f" (dtype {array.dtype})"))
    return array


class BanditEnv(gym.Env):
    """A single contextual bandit: the ``R = 1`` face of a :class:`BanditSimulator`.

    Observations are numpy ``(n_arms, dim)`` float32; ``info`` carries
    ``expected_rewards`` and ``optimal_action`` of the observation it comes with,
    and, from ``step``, the ``regret`` of the round just played. ``render_mode="ansi"``
    makes :meth:`render` return the round as text.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    simulator_class: type[BanditSimulator]
    _spec: EnvSpec | None = None

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        check_keywords(type(self), self.simulator_class, kwargs, ("render_mode",))
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.sim = self.simulator_class(num_replicas=1, device="cpu", **kwargs)
        self.n_arms, self.dim, self.horizon = self.sim.n_arms, self.sim.dim, self.sim.horizon
        self.observation_space = gym.spaces.Box(
            self.sim.feature_low, self.sim.feature_high, shape=(self.n_arms, self.dim), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.n_arms)
        self._last_action: int | None = None

    @property
    def spec(self) -> EnvSpec | None:
        """How ``gym.make`` made this env; its ``max_episode_steps`` is the env's ``horizon``.

        The registry declares no ``max_episode_steps``, so ``gym.make`` adds no ``TimeLimit`` that a larger
        ``horizon`` would run into: the env truncates itself at its horizon, and its spec says so (what
        ``TimeAwareObservation`` reads). ``gym.make(id, max_episode_steps=n)`` still adds a ``TimeLimit``,
        whose spec then says ``n``.
        """
        return self._spec

    @spec.setter
    def spec(self, spec: EnvSpec | None) -> None:
        self._spec = _spec_with_horizon(spec, self.horizon, self.sim)

    @policy()  # torch's threads: bandit_gym/threads.py
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            rng.check_seed(seed)
        if options:
            raise ValueError(f"options are not supported by {type(self).__name__}.reset, got {options!r}")
        super().reset(seed=seed)
        if seed is not None:
            key = rng.seed_to_key(seed)
        elif self.sim.keys is None:
            key = rng.seed_to_key(int(self.np_random.integers(0, 2**63)))
        else:
            key = rng.next_episode_key(self.sim.keys)
        self.sim.reset(key)
        self._last_action = None
        return self._observation()

    @policy()
    def step(self, action: Any):
        if self.sim.keys is None:
            raise RuntimeError("call reset() before step()")
        if self.sim.truncated:
            raise RuntimeError(f"the episode ended at its horizon ({self.horizon} rounds); call reset()")
        self._last_action = self._check_action(action)
        rewards, regret = self.sim.step(self._last_action)  # (1,) each
        obs, info = self._observation()
        info["regret"] = regret.item()
        return obs, rewards.item(), False, self.sim.truncated, info

    @policy()
    def next_rounds(self, n: int) -> RoundChunk:
        """The next ``n`` rounds in one call, ``R = 1`` (torch on CPU): what ``n`` steps show and pay, bit for bit,
        whatever arms are played (``docs/envs.md``, "Rounds in chunks").

        The env's round moves ``n`` forward as ``n`` steps would: its observation is then round ``t + n``'s, and
        after the horizon's last round it needs a ``reset``. The env does not see the arms played, so
        :meth:`render` shows no last choice.

        Raises:
            RuntimeError: before ``reset``, or when the episode has ended.
            ValueError: ``n`` is not an integer from 1 to the rounds left before the horizon.
        """
        n = _check_chunk(self.sim, n, self.horizon)
        self._last_action = None
        return self.sim.next_rounds(n)

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.sim.keys is None:
            return None
        return render_text(self.sim, 0, self._last_action)

    def _check_action(self, action: Any) -> int:
        if type(action) is int and 0 <= action < self.n_arms:  # the common case, checked at once
            return action
        if isinstance(action, (np.ndarray, torch.Tensor)):
            if action.ndim != 0:
                raise _action_error(action, self.n_arms, f"expected a scalar, got shape {tuple(action.shape)}")
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, numbers.Integral):
            raise _action_error(action, self.n_arms, "not an integer")
        if not 0 <= action < self.n_arms:
            raise _action_error(action, self.n_arms, "out of range")
        return int(action)

    def _observation(self) -> tuple[np.ndarray, dict[str, Any]]:
        """Round ``t``'s arms ``(K, d)`` (a view of the simulator's chunk) and its info."""
        contexts, expected, _, optimal, _ = self.sim._round_arrays()
        return contexts[0], {"expected_rewards": expected[0].copy(),  # (K,) the caller's copy
                             "optimal_action": int(optimal[0])}


class BanditVectorEnv(VectorEnv):
    """``num_envs`` independent replicas of a bandit, simulated as one batch.

    Replica ``i`` of ``reset(seed=s)`` is the single env reset with ``seed=s + i``. Arrays are
    numpy on CPU and torch tensors on CUDA by default (``array_type="numpy"`` or ``"torch"`` to
    choose); ``info`` has :class:`~gymnasium.vector.SyncVectorEnv`'s layout (``_key`` masks,
    ``regret`` float64). All replicas truncate together after ``min(horizon, max_episode_steps)``
    rounds and the next ``step`` resets them (``AutoresetMode.NEXT_STEP``).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1, "autoreset_mode": AutoresetMode.NEXT_STEP}
    simulator_class: type[BanditSimulator]
    _spec: EnvSpec | None = None

    def __init__(self, num_envs: int = 1, device: str | torch.device = "cpu", array_type: str | None = None,
                 render_mode: str | None = None, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        own = ("num_envs", "device", "array_type", "render_mode", "max_episode_steps")
        check_keywords(type(self), self.simulator_class, kwargs, own)
        self.device = resolve_device(device)
        default = "numpy" if self.device.type == "cpu" else "torch"
        self.array_type = check_choice("array_type", default if array_type is None else array_type, ("numpy", "torch"))
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.sim = self.simulator_class(num_replicas=num_envs, device=self.device, **kwargs)
        self.num_envs = self.sim.num_replicas
        self.n_arms, self.dim, self.horizon = self.sim.n_arms, self.sim.dim, self.sim.horizon
        limit = self.horizon if max_episode_steps is None else check_int("max_episode_steps", max_episode_steps)
        self.episode_steps = min(self.horizon, limit)
        if self.episode_steps < self.horizon:  # what TimeLimit does to a single env, said out loud
            warnings.warn(f"episodes end after max_episode_steps={limit} rounds, before horizon={self.horizon}; "
                          f"pass max_episode_steps={self.horizon} to play the whole horizon", stacklevel=2)
        self.single_observation_space = gym.spaces.Box(
            self.sim.feature_low, self.sim.feature_high, shape=(self.n_arms, self.dim), dtype=np.float32)
        self.single_action_space = gym.spaces.Discrete(self.n_arms)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._needs_reset = False
        self._last_actions: torch.Tensor | None = None

    @property
    def spec(self) -> EnvSpec | None:
        """How ``gym.make_vec`` made this env; its ``max_episode_steps`` is ``min(horizon, max_episode_steps)``."""
        return self._spec

    @spec.setter
    def spec(self, spec: EnvSpec | None) -> None:
        self._spec = _spec_with_horizon(spec, self.episode_steps, self.sim)

    @policy()
    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        if options:
            mask = options.get("reset_mask") if set(options) == {"reset_mask"} else None
            if mask is None or not bool(np.all(np.asarray(mask))):
                raise ValueError(f"options: only reset_mask with every replica True is supported (the replicas "
                                 f"share one round counter; reset them all); got {options!r}")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} ints, got {len(seed)} seeds")
            seeds = [rng.check_seed(s) for s in seed]
        elif seed is not None:
            seeds = [rng.check_seed(seed) + i for i in range(self.num_envs)]
        super().reset(seed=seeds[0] if seed is not None else None)  # self.np_random: seeds an unseeded first reset
        if seed is not None:
            keys = rng.seed_to_key(seeds)
        elif self.sim.keys is None:
            first = int(self.np_random.integers(0, 2**62))
            keys = rng.seed_to_key(torch.arange(self.num_envs) + first)
        else:
            keys = rng.next_episode_key(self.sim.keys)
        self.sim.reset(keys)
        self._needs_reset, self._last_actions = False, None
        return self._out(self.sim.contexts), self._info()

    @policy()
    def step(self, actions: Any):
        if self.sim.keys is None:
            raise RuntimeError("call reset() before step()")
        if self._needs_reset:  # NEXT_STEP autoreset: this step only resets
            obs, info = self.reset()
            return obs, self._filled(0.0), self._filled(False), self._filled(False), info
        self._last_actions = self._check_actions(actions)
        rewards, regret = self.sim.step(self._last_actions)
        self._needs_reset = self.sim.t >= self.episode_steps
        info = self._info(regret=regret.double())  # float64, as SyncVectorEnv gives it
        return (self._out(self.sim.contexts), self._out(rewards.double()), self._filled(False),
                self._filled(self._needs_reset), info)

    @policy()
    def next_rounds(self, n: int) -> RoundChunk:
        """The next ``n`` rounds of every replica in one call, tensors on the env's device (whatever its
        ``array_type``): what ``n`` steps show and pay, bit for bit, whatever arms are played (``docs/envs.md``,
        "Rounds in chunks").

        The env's round moves ``n`` forward as ``n`` steps would; after the episode's last round
        (``min(horizon, max_episode_steps)``) it needs a ``reset`` (``next_rounds`` does not autoreset). The env
        does not see the arms played, so :meth:`render` shows no last choice.

        Raises:
            RuntimeError: before ``reset``, or when the episode has ended.
            ValueError: ``n`` is not an integer from 1 to the rounds left in the episode.
        """
        n = _check_chunk(self.sim, n, self.episode_steps)
        chunk = self.sim.next_rounds(n)
        self._needs_reset, self._last_actions = self.sim.t >= self.episode_steps, None
        return chunk

    def __getstate__(self) -> dict[str, Any]:
        # The batched spaces' bounds are num_envs copies of the single spaces': rebuilt, not pickled.
        return {k: v for k, v in self.__dict__.items() if k not in ("observation_space", "action_space")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def render(self) -> tuple[str, ...] | None:
        if self.render_mode != "ansi" or self.sim.keys is None:
            return None
        last = self._last_actions
        return tuple(render_text(self.sim, i, None if last is None else int(last[i])) for i in range(self.num_envs))

    def _check_actions(self, actions: Any) -> torch.Tensor:
        if not isinstance(actions, torch.Tensor):
            actions = _numeric_array(actions, self.num_envs)
        if actions.ndim == 0:
            raise TypeError(f"actions must be an array-like of {self.num_envs} arm indices (one per replica), "
                            f"got the scalar {actions.item()!r}")
        if isinstance(actions, np.ndarray):
            actions = torch.as_tensor(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {tuple(actions.shape)}")
        if actions.dtype == torch.bool or actions.is_floating_point() or actions.is_complex():
            raise ValueError(f"actions must have an integer dtype, got {actions.dtype}")
        actions = actions.to(device=self.device, dtype=torch.int64)
        lowest, highest = torch.aminmax(actions)
        if lowest.item() < 0 or highest.item() >= self.n_arms:
            invalid = (actions < 0) | (actions >= self.n_arms)  # (R,)
            bad = int(invalid.int().argmax())
            raise ValueError(f"actions must be arm indices in [0, {self.n_arms}); "
                             f"replica {bad} got {int(actions[bad])}")
        return actions

    def _out(self, x: torch.Tensor, copy: bool = False) -> np.ndarray | torch.Tensor:
        """``x`` as the array type handed out; ``copy``: memory of the caller's own."""
        if self.array_type == "torch":
            return x.clone() if copy else x
        return x.cpu().numpy().copy() if copy and x.device.type == "cpu" else x.cpu().numpy()

    def _filled(self, value: bool | float) -> np.ndarray | torch.Tensor:
        """``(R,)`` of the array type handed out, every entry ``value`` (bool, or a float as float64)."""
        if self.array_type == "numpy":
            return np.full(self.num_envs, value, dtype=np.float64 if isinstance(value, float) else bool)
        dtype = torch.float64 if isinstance(value, float) else torch.bool
        return torch.full((self.num_envs,), value, dtype=dtype, device=self.device)

    def _info(self, **extra: torch.Tensor) -> dict[str, Any]:
        """SyncVectorEnv's layout: each value ``(R, ...)`` beside a ``_key`` mask saying every replica has it."""
        values = {"expected_rewards": self.sim.expected, "optimal_action": self.sim.optimal_action, **extra}
        info = {}
        for key, value in values.items():
            info[key] = self._out(value, copy=True)
            info[f"_{key}"] = self._filled(True)
        return info
