"""Feedback settings beyond the paper's protocol: delayed, batched and drifting, as Gymnasium wrappers.

Each wrapper takes a single bandit env or a native batched env (``gym.make_vec(...,
vectorization_mode="vector_entry_point")``) and returns a wrapper of the same kind.

Delayed and batched feedback (:class:`DelayedFeedback`, :class:`BatchedFeedback`): the reward of
round ``s`` (rounds counted from 0 at ``reset``) is revealed at the end of a later round ``due(s) >= s``.
``step``'s ``info`` then holds the rounds revealed by this step, oldest first::

    info["revealed_rounds"]    (n,) int64      (R, n) for a batched env, the same row for every replica
    info["revealed_rewards"]   (n,) float64    (R, n)
    info["revealed_actions"]   (n,) int64      (R, n)

On the last round of an episode everything still pending is revealed. ``step``'s reward is the round's
own reward only when the step reveals that round and no other (the plain env's protocol); otherwise it is
NaN (an :class:`UnrevealedReward`, a NaN array for a batched env): a reward that has not arrived, or rewards of other
rounds, cannot be mistaken for this round's (``agent.update(obs, action, reward)`` refuses a NaN and says to
read ``info``). With ``delay=0`` or ``batch_size=1`` each round reveals itself: the reward and every other
value are the wrapped env's, bit for bit. The revealed arrays are numpy, whatever array type the env hands
out. The agents' ``learn`` reads these keys: it keeps each round's arm features and learns from a round when
its reward arrives; a loop of your own does it with :meth:`agents.loop.feedback.PendingRounds.update`
(``docs/envs.md``, "Feedback settings"). A batched env's replicas share the feedback channel's
schedule (the delays), so one update per revealed round stays one batched operation.

Drift (:class:`Drift`): the world changes while the agent plays. The synthetic envs' ``theta*`` rotates
slowly (``kind="rotation"``) or is drawn anew every ``every`` rounds (``kind="abrupt"``); the other envs'
arms (a dataset env's classes, a Showdown env's arms) swap their rewards by a random permutation every
``every`` rounds. Rewards, ``regret`` and what ``info`` tells of the arms (``expected_rewards``,
``optimal_action``, a Showdown env's ``reward_row`` and ``optimal_reward``) are those of the world of the
round they describe.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv, VectorWrapper

from bandit_gym import rng
from bandit_gym.rng import Stream
from bandit_gym.synthetic import SyntheticBanditSimulator

REVEALED_KEYS = ("revealed_rounds", "revealed_rewards", "revealed_actions")


class UnrevealedReward(float):
    """The reward a single env's ``step`` returns for a round whose reward has not arrived: NaN as a number,
    so that no learner takes it for a reward (``agent.update`` refuses it, a sum of rewards is NaN), yet equal
    to another ``UnrevealedReward``, so that Gymnasium's ``check_env`` finds two runs of one seed alike (its
    passive checker still warns "The reward is a NaN value"). A batched env returns a NaN array instead."""

    def __new__(cls) -> UnrevealedReward:
        return super().__new__(cls, math.nan)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnrevealedReward)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, UnrevealedReward)

    __hash__ = float.__hash__

    def __reduce__(self) -> tuple[type, tuple]:
        return UnrevealedReward, ()


def _as_numpy(x: Any, dtype: type) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype).reshape(-1)


class _Schedule:
    """The feedback channel, written once for R replicas: the rounds played whose rewards are pending, and which of
    them a step reveals. A single env is the case R = 1 (:class:`_SingleFeedback` reads row 0)."""

    def _clear(self) -> None:
        self._pending: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # (round, due, rewards (R,), actions (R,))
        self._round = 0  # the round about to be played, from 0 at reset
        self._episode = getattr(self, "_episode", -1) + 1
        self._resets_next = False  # a batched env's next step is its autoreset (the episode ended)

    def _due(self, played: int) -> int:
        raise NotImplementedError

    def reset(self, *, seed: Any = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._clear()
        return obs, info

    def _settle(self, rewards: np.ndarray, actions: np.ndarray, ended: bool) -> tuple[np.ndarray, ...]:
        """Record round ``self._round``; return the revealed ``(rounds (n,), rewards (R, n), actions (R, n))``."""
        played = self._round
        self._pending.append((played, self._due(played), rewards, actions))
        self._round += 1
        now = [p for p in self._pending if ended or p[1] <= played]
        self._pending = [p for p in self._pending if not (ended or p[1] <= played)]
        R = len(rewards)
        if not now:
            return np.empty(0, np.int64), np.empty((R, 0)), np.empty((R, 0), np.int64)
        return (np.array([p[0] for p in now], np.int64), np.stack([p[2] for p in now], axis=1),
                np.stack([p[3] for p in now], axis=1))

    def _reveal(self, rewards: np.ndarray, actions: np.ndarray, ended: bool) -> tuple[dict[str, np.ndarray], bool]:
        """Play a round of rewards ``(R,)`` and actions ``(R,)``: the ``info`` keys of what it reveals, each
        ``(R, n)``, and whether it reveals exactly this round (then the step keeps the env's reward)."""
        played = self._round
        rounds, rewards, actions = self._settle(rewards, actions, ended)
        revealed = {"revealed_rounds": np.broadcast_to(rounds, (len(rewards), len(rounds))).copy(),
                    "revealed_rewards": rewards, "revealed_actions": actions}
        return revealed, len(rounds) == 1 and rounds[0] == played


class _DelaySchedule(_Schedule):
    """``due(s) = s + delay_s``: a fixed delay, or one drawn uniformly from ``[low, high]`` per round."""

    def _init_delay(self, delay: Any, delay_seed: int) -> None:
        if isinstance(delay, numbers.Integral) and not isinstance(delay, bool) and delay >= 0:
            self.delay, self._low, self._high = int(delay), int(delay), int(delay)
        elif (isinstance(delay, (tuple, list)) and len(delay) == 2
              and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in delay)
              and 0 <= delay[0] <= delay[1]):
            self.delay, self._low, self._high = (int(delay[0]), int(delay[1])), int(delay[0]), int(delay[1])
        else:
            raise ValueError(f"delay must be an integer >= 0 (rounds) or a pair [low, high] of integers with "
                             f"0 <= low <= high (a delay drawn uniformly per round), got {delay!r}")
        self.delay_seed = rng.check_seed(delay_seed, "delay_seed")
        self._delay_key = rng.seed_to_key(self.delay_seed)  # (1,)
        self._clear()

    def _due(self, played: int) -> int:
        if self._low == self._high:
            return played + self._low
        # One draw per (episode, round) of the channel's own stream: the same for every replica.
        u = float(rng.uniform(self._delay_key, Stream.FEEDBACK, (self._episode << 32) + played, ())[0])
        return played + self._low + int(u * (self._high - self._low + 1))


class _BatchSchedule(_Schedule):
    """``due(s)``: the last round of ``s``'s batch of ``batch_size`` rounds."""

    def _init_batch(self, batch_size: Any) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1 (rounds per batch), got {batch_size!r}")
        self.batch_size = int(batch_size)
        self._clear()

    def _due(self, played: int) -> int:
        return (played // self.batch_size + 1) * self.batch_size - 1


class _SingleFeedback(gym.Wrapper):
    """The single-env face of a schedule: one replica, its row of every revealed array."""

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        revealed, itself = self._reveal(np.array([reward], np.float64), _as_numpy(action, np.int64),
                                        bool(terminated or truncated))
        info = {**info, **{key: value[0] for key, value in revealed.items()}}  # (n,) each
        if not itself:  # a round revealing itself keeps the env's reward
            reward = UnrevealedReward()  # this round's reward has not arrived: it is in a later step's info
        return obs, reward, terminated, truncated, info


class _BanditVectorWrapper(VectorWrapper):
    """A vector wrapper that tells the bandit's ``horizon`` (what agents read to size a run)."""

    @property
    def horizon(self) -> int:
        return self.env.unwrapped.horizon


class _VectorFeedback(_BanditVectorWrapper):
    """The batched-env face of a schedule (``AutoresetMode.NEXT_STEP``: a step after the last round only resets)."""

    def step(self, actions: Any):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self._resets_next:  # this step was the autoreset
            self._clear()
            return obs, reward, terminated, truncated, info
        ended = bool(np.any(_as_numpy(terminated, bool)) or np.any(_as_numpy(truncated, bool)))
        revealed, itself = self._reveal(_as_numpy(reward, np.float64), _as_numpy(actions, np.int64), ended)
        self._resets_next = ended
        R = self.num_envs
        info = {**info, **revealed, **{f"_{key}": np.ones(R, dtype=bool) for key in REVEALED_KEYS}}
        if not itself:  # not yet arrived, as for the single env
            unrevealed = np.full(R, math.nan)  # (R,) float64
            on_device = isinstance(reward, torch.Tensor)
            reward = torch.as_tensor(unrevealed, device=reward.device) if on_device else unrevealed
        return obs, reward, terminated, truncated, info


def _dispatch(cls: type, vector_cls: type, env: Any, args: tuple, kwargs: dict):
    """``cls``'s instance for a single env; for a batched env, a whole ``vector_cls`` (which Python then leaves
    as it is: it is no ``cls``)."""
    if isinstance(env, VectorEnv):
        return vector_cls(env, *args, **kwargs)
    return object.__new__(cls)


class DelayedFeedbackVector(_DelaySchedule, _VectorFeedback):
    """:class:`DelayedFeedback` over a batched env (what ``DelayedFeedback(venv, ...)`` returns)."""

    def __init__(self, env: VectorEnv, delay: Any = 0, delay_seed: int = 0) -> None:
        _VectorFeedback.__init__(self, env)
        self._init_delay(delay, delay_seed)


class DelayedFeedback(_DelaySchedule, _SingleFeedback, gym.utils.RecordConstructorArgs):
    """Each round's reward arrives ``delay`` rounds later, through ``info`` (module docstring).

    Args:
        env: A single bandit env, or a native batched env (then a :class:`DelayedFeedbackVector` is returned).
        delay: Rounds until a round's reward is revealed: an integer ``>= 0`` (0: at once, the plain env), or
            ``[low, high]``: each round's delay drawn uniformly from ``low .. high`` (inclusive).
        delay_seed: Seed of the random delays (their own stream; the same for every replica and episode
            count, so a batched env's replica ``i`` sees the single env's delays).

    Examples:
        >>> import gymnasium as gym, bandit_gym
        >>> from bandit_gym.feedback import DelayedFeedback
        >>> env = DelayedFeedback(gym.make("LinearBandit-v0", horizon=5), delay=2)
        >>> obs, info = env.reset(seed=0)
        >>> [env.step(0)[4]["revealed_rounds"].tolist() for _ in range(5)]
        [[], [], [0], [1], [2, 3, 4]]
    """

    def __new__(cls, env: Any = None, *args: Any, **kwargs: Any):
        return _dispatch(cls, DelayedFeedbackVector, env, args, kwargs)

    def __init__(self, env: gym.Env, delay: Any = 0, delay_seed: int = 0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, delay=delay, delay_seed=delay_seed)  # env.spec can remake it
        _SingleFeedback.__init__(self, env)
        self._init_delay(delay, delay_seed)


class BatchedFeedbackVector(_BatchSchedule, _VectorFeedback):
    """:class:`BatchedFeedback` over a batched env (what ``BatchedFeedback(venv, ...)`` returns)."""

    def __init__(self, env: VectorEnv, batch_size: Any = 1) -> None:
        _VectorFeedback.__init__(self, env)
        self._init_batch(batch_size)


class BatchedFeedback(_BatchSchedule, _SingleFeedback, gym.utils.RecordConstructorArgs):
    """Rewards are revealed every ``batch_size`` rounds, those of the whole batch at once (batched bandits).

    Args:
        env: A single bandit env, or a native batched env (then a :class:`BatchedFeedbackVector` is returned).
        batch_size: Rounds per batch ``B >= 1``; rounds ``jB .. jB + B - 1`` are revealed at the end of round
            ``jB + B - 1`` (and what is pending at the episode's last round). 1 is the plain env.
    """

    def __new__(cls, env: Any = None, *args: Any, **kwargs: Any):
        return _dispatch(cls, BatchedFeedbackVector, env, args, kwargs)

    def __init__(self, env: gym.Env, batch_size: Any = 1) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, batch_size=batch_size)
        _SingleFeedback.__init__(self, env)
        self._init_batch(batch_size)


# -- drift --------------------------------------------------------------------------------------
class _World:
    """The drifting world of one simulator, written once for the single and batched faces: what its expected
    rewards are in round ``sim.t``."""

    def _init_world(self, kind: str, every: Any, rate: Any) -> None:
        self.sim = getattr(self.env.unwrapped, "sim", None)
        if self.sim is None:
            raise ValueError(f"env must be a bandit env of bandit_gym for Drift to wrap (a synthetic or dataset env, "
                             f"single or native batched: Drift changes the bandit's own world), got "
                             f"{type(self.env.unwrapped).__name__}")
        self.synthetic = isinstance(self.sim, SyntheticBanditSimulator)
        if kind not in ("abrupt", "rotation"):
            raise ValueError(f"kind must be 'abrupt' (a new world every `every` rounds) or 'rotation' "
                             f"(theta* turns by `rate` radians a round), got {kind!r}")
        if kind == "rotation" and not self.synthetic:
            raise ValueError(f"kind='rotation' needs a synthetic env (a theta* to turn); "
                             f"{type(self.sim).__name__} drifts with kind='abrupt' (its classes' rewards permuted)")
        if every is not None and (isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1):
            raise ValueError(f"every must be None (no change) or an integer >= 1 (rounds between changes), "
                             f"got {every!r}")
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not math.isfinite(rate):
            raise ValueError(f"rate must be a finite number (radians per round), got {rate!r}")
        self.kind, self.every, self.rate = kind, every, float(rate)
        self._theta0: torch.Tensor | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A loaded simulator recomputes its round in the original world (its pickle holds no caches): drift it again.
        self.__dict__.update(state)
        if self.sim.keys is not None:
            self._apply()

    def reset(self, *, seed: Any = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._refresh(obs, info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs, info = self._refresh(obs, info)
        return obs, reward, terminated, truncated, info

    def _refresh(self, obs: Any, info: dict) -> tuple[Any, dict]:
        """Set the round's world (:meth:`_apply`) and tell in ``info`` what the arms are worth in it (each face
        in its env's array type and layout)."""
        raise NotImplementedError

    def _drifts(self) -> bool:
        return (self.kind == "rotation" and self.rate != 0.0) or (self.kind == "abrupt" and self.every is not None)

    def segment(self, t: int | None = None) -> int:
        """Index of the world of round ``t`` (default: the round about to be played) under abrupt changes."""
        t = self.sim.t if t is None else t
        return 0 if self.every is None else t // self.every

    def _instance_keys(self) -> torch.Tensor:
        seed = getattr(self.sim, "instance_seed", None)
        return self.sim.keys if seed is None else rng.seed_to_key(seed).to(self.sim.device)

    def theta_at(self, t: int) -> torch.Tensor:
        """``theta*`` of round ``t`` (synthetic envs), ``(R or 1, d)``."""
        theta0 = self._theta0
        if self.kind == "rotation":
            direction = rng.unit_normal(self._instance_keys(), Stream.DRIFT, 0, (theta0.shape[1],))  # (R or 1, d)
            u = direction - (direction * theta0).sum(1, keepdim=True) * theta0  # orthogonal to theta0
            u = u / torch.linalg.vector_norm(u, dim=1, keepdim=True)
            angle = self.rate * t
            return (math.cos(angle) * theta0.double() + math.sin(angle) * u.double()).float()
        j = self.segment(t)
        return theta0 if j == 0 else rng.unit_normal(self._instance_keys(), Stream.DRIFT, j, (theta0.shape[1],))

    def permutation_at(self, t: int) -> torch.Tensor:
        """Arm ``perm[c]`` pays what class ``c`` paid (dataset envs), ``(R, K)``; the identity before the first
        change."""
        j = self.segment(t)
        R, K = self.sim.num_replicas, self.sim.n_arms
        if j == 0:
            return torch.arange(K, device=self.sim.device).expand(R, K)
        return rng.permutation(self.sim.keys, Stream.DRIFT, K, counter=j).to(self.sim.device)

    def _apply(self) -> None:
        """Set the simulator's round to the current world (after each reset and step, when the world drifted)."""
        sim = self.sim
        if self.synthetic and sim.t == 0:
            self._theta0 = sim.theta
        if not self._drifts() or (self.kind == "abrupt" and self.segment() == 0):
            return
        if self.synthetic:
            sim.theta = self.theta_at(sim.t)
            expected = sim._mean_rewards(sim.contexts[:, None].contiguous())[:, 0]  # (R, K)
            sim.expected, sim.scored, sim.best = expected, expected, expected.amax(dim=1)
        else:  # the arms' values move with them: the value regret is scored against (best) stays
            inverse = torch.argsort(self.permutation_at(sim.t), dim=1)  # (R, K)
            expected = sim.expected.gather(1, inverse)  # (R, K) arm k pays what class inverse[k] paid
            sim.scored = expected if sim.scored is sim.expected else sim.scored.gather(1, inverse)
            sim.expected = expected
        sim.optimal_action = sim.expected.argmax(dim=1)


class DriftVector(_World, _BanditVectorWrapper):
    """:class:`Drift` over a batched env (what ``Drift(venv, ...)`` returns)."""

    def __init__(self, env: VectorEnv, kind: str = "abrupt", every: int | None = None, rate: float = 0.0) -> None:
        VectorWrapper.__init__(self, env)
        self._init_world(kind, every, rate)

    def _refresh(self, obs: Any, info: dict) -> tuple[Any, dict]:
        self._apply()
        if self._drifts():  # what the env tells of the arms in the current world, in its array type and layout
            info = {**info, **self.env.unwrapped._info()}
        return obs, info


class Drift(_World, gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A non-stationary world: the rewards' parameters change while the agent plays (module docstring).

    Args:
        env: A synthetic or dataset bandit env, single or native batched (then a :class:`DriftVector` is
            returned). Other wrappers may sit outside it; it must wrap the bandit env itself.
        kind: ``"abrupt"``: every ``every`` rounds a new world: a new unit ``theta*`` (synthetic envs, drawn
            from the replica's key, or from ``instance_seed`` when the env fixes the instance), or a random
            permutation of which arm pays what (a dataset env's classes, a Showdown env's arms). ``"rotation"``
            (synthetic envs): ``theta*_t = cos(rate t) theta*_0 + sin(rate t) u``, ``u`` a random unit vector
            orthogonal to ``theta*_0``: a slow turn in one plane, ``rate`` radians per round.
        every: Rounds between abrupt changes; None (default): never.
        rate: Radians per round of the rotation; 0.0 (default): none.

    With no drift (``every=None``, ``rate=0``) it is the plain env, bit for bit.

    References:
        Russac, Vernade and Cappe (2019), "Weighted linear bandits for non-stationary environments"
        (their abrupt-change and slowly rotating settings).
    """

    def __new__(cls, env: Any = None, *args: Any, **kwargs: Any):
        return _dispatch(cls, DriftVector, env, args, kwargs)

    def __init__(self, env: gym.Env, kind: str = "abrupt", every: int | None = None, rate: float = 0.0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, kind=kind, every=every, rate=rate)
        gym.Wrapper.__init__(self, env)
        self._init_world(kind, every, rate)

    def _refresh(self, obs: Any, info: dict) -> tuple[Any, dict]:
        self._apply()
        if self._drifts():  # what the env tells of the arms in the current world
            info = {**info, **self.env.unwrapped._observation()[1]}
        return obs, info


# -- configs: wrappers by name ------------------------------------------------------------------
#: The feedback wrappers a config can name, e.g. ``wrappers: [{DelayedFeedback: {delay: 100}}]``.
WRAPPERS: dict[str, type] = {"DelayedFeedback": DelayedFeedback, "BatchedFeedback": BatchedFeedback, "Drift": Drift}
_SETTINGS = {"DelayedFeedback": ("delay", "delay_seed"), "BatchedFeedback": ("batch_size",),
             "Drift": ("kind", "every", "rate")}


def apply_wrappers(env: Any, specs: Any) -> Any:
    """Wrap ``env`` in the wrappers a config lists, innermost first: ``[{"Drift": {"every": 500}},
    {"DelayedFeedback": {"delay": 100}}]`` plays a drifting world with delayed rewards. ``Drift`` must come
    first (it wraps the bandit env itself). Each entry is checked by :func:`check_wrapper`; a bad one raises
    ``ValueError`` naming its place and what is accepted."""
    if specs is None:
        return env
    if not isinstance(specs, (list, tuple)):
        raise ValueError(f"wrappers must be a list of names or one-key mappings such as "
                         f"[{{DelayedFeedback: {{delay: 100}}}}], got {specs!r}")
    for i, spec in enumerate(specs):
        try:
            name, kwargs = check_wrapper(spec, i)
        except ValueError as exc:
            raise ValueError(f"wrappers[{i}]: {exc}") from None
        env = WRAPPERS[name](env, **kwargs)
    return env


def check_wrapper(spec: Any, index: int) -> tuple[str, dict[str, Any]]:
    """``(name, keywords)`` of entry ``index`` (0: the innermost) of a config's wrapper list: a name
    (``"Drift"``) or a one-key mapping ``{"DelayedFeedback": {"delay": 100}}`` (keywords None: none).

    The check of :func:`apply_wrappers` (and of ``bandit-gym run``'s configs); the wrapper's own
    constructor checks the keywords' values.

    Raises:
        ValueError: one line naming what is wrong with the entry (the caller names its place).
    """
    import difflib

    if isinstance(spec, str):
        spec = {spec: None}
    if not (isinstance(spec, dict) and len(spec) == 1):
        raise ValueError(f"a wrapper is a name or a one-key mapping {{name: {{keyword: value}}}}, got {spec!r}")
    (name, kwargs), = spec.items()
    if name not in WRAPPERS:
        close = difflib.get_close_matches(str(name), list(WRAPPERS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown wrapper {name!r}{hint} (accepted: {', '.join(WRAPPERS)})")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict) or set(kwargs) - set(_SETTINGS[name]):
        raise ValueError(f"{name} takes the keywords {', '.join(_SETTINGS[name])}, got {kwargs!r}")
    if name == "Drift" and index > 0:
        raise ValueError("Drift must be the first wrapper (it changes the bandit env itself)")
    return name, dict(kwargs)


def describe_wrappers(env: Any) -> list[dict[str, dict[str, Any]]]:
    """The feedback wrappers around ``env``, innermost first, in the form :func:`apply_wrappers` reads
    (what a results file records of the run)."""
    found = []
    while env is not None:
        for name, cls in WRAPPERS.items():
            vector_cls = {"DelayedFeedback": DelayedFeedbackVector, "BatchedFeedback": BatchedFeedbackVector,
                          "Drift": DriftVector}[name]
            if isinstance(env, (cls, vector_cls)):
                found.append({name: {key: getattr(env, key) for key in _SETTINGS[name]}})
        env = getattr(env, "env", None)
    return found[::-1]
