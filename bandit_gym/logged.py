"""Logged bandit data: record a policy on an env, save and load logs, replay them, evaluate off-policy.

A :class:`BanditLog` holds ``T`` rounds of ``R`` independent logs (the replicas of a batched env; a single
env is ``R = 1``): the arm features ``(T, R, K, d)``, the action played ``(T, R)``, its reward ``(T, R)`` and
its propensity ``(T, R)``, the probability the logging policy gave that action; and, where the env told
it (the synthetic and dataset envs do, in ``info``), every arm's expected reward ``(T, R, K)``, used only to
compute true values in tests and examples, never by an estimator.

Estimators of a target policy's value ``V(pi) = E_x sum_k pi(k | x) mu(x, k)`` (the mean reward per round),
per log, each with a normal confidence interval at ``level`` (default 95 %):

* IPS: ``mean_t w_t r_t`` with ``w_t = pi(a_t | x_t) / p_t``; unbiased (the propensities are exact).
* SNIPS: ``sum_t w_t r_t / sum_t w_t``; its interval by the delta method.
* DM (direct method): a ridge reward model ``q(x, k) = x_k . theta_hat`` fit to the log, ``mean_t sum_k pi q``;
  its standard error adds the contexts' spread and the model's (``g^T Cov(theta_hat) g``, homoscedastic
  noise). Biased where the reward is not linear in the arm's features.
* DR (doubly robust): ``mean_t [sum_k pi q + w_t (r_t - q(x_t, a_t))]``.

The target policy is given as its probabilities on the logged rounds, ``(T, R, K)``
(:func:`target_probabilities` asks any agent with ``action_probabilities``). The recorder and the estimators
know agents only through the verbs ``predict``, ``update`` and ``action_probabilities``: bandit_gym imports
no agent.

References:
    Horvitz and Thompson (1952); Swaminathan and Joachims (2015), "The self-normalized estimator for
    counterfactual learning"; Dudik, Langford and Li (2011), "Doubly robust policy evaluation and learning";
    Li, Chu, Langford and Wang (2011), "Unbiased offline evaluation of contextual-bandit-based news article
    recommendation algorithms" (the replay env).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import zipfile
from pathlib import Path
from statistics import NormalDist
from typing import Any

import gymnasium as gym
import numpy as np

from bandit_gym.atomic import atomic_write
from bandit_gym.validation import check_float, short_repr

FIELDS = ("features", "actions", "rewards", "propensities", "expected_rewards")


@dataclasses.dataclass
class BanditLog:
    """``T`` rounds of ``R`` logs (module docstring); ``expected_rewards`` may be None."""

    features: np.ndarray  # (T, R, K, d) float32
    actions: np.ndarray  # (T, R) int64
    rewards: np.ndarray  # (T, R) float64
    propensities: np.ndarray  # (T, R) float64, in (0, 1]
    expected_rewards: np.ndarray | None = None  # (T, R, K) float32

    def __post_init__(self) -> None:
        """Refuse, naming the field and its first bad index: a shape that does not fit, no rounds, a dtype that
        is not numbers (booleans included), values that are not finite, actions outside ``[0, K)`` and
        propensities outside ``(0, 1]``."""
        _check_dtype("features", self.features, "fiu")
        if self.features.ndim != 4 or 0 in self.features.shape:
            raise ValueError(f"features must have shape (T, R, K, d) with at least one round, replica, arm and "
                             f"feature, got {self.features.shape}")
        T, R, K, _ = self.features.shape
        for name, shape, kinds in (("actions", (T, R), "iu"), ("rewards", (T, R), "fiu"),
                                   ("propensities", (T, R), "f"), ("expected_rewards", (T, R, K), "fiu")):
            value = getattr(self, name)
            if value is None and name == "expected_rewards":
                continue
            _check_dtype(name, value, kinds)
            if value.shape != shape:
                raise ValueError(f"{name} must have shape {shape} ({'T, R, K' if len(shape) == 3 else 'T, R'}), "
                                 f"got {value.shape}")
        for name in ("features", "rewards", "expected_rewards"):
            if getattr(self, name) is not None:
                _check_where(name, getattr(self, name), ~np.isfinite(getattr(self, name)), "must be finite")
        _check_where("actions", self.actions, (self.actions < 0) | (self.actions >= K), f"must be arm indices in "
                     f"[0, {K})")
        _check_where("propensities", self.propensities, ~((self.propensities > 0) & (self.propensities <= 1)),
                     "must lie in (0, 1] (a logged action had probability > 0)")

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(T, R, K, d)``."""
        return self.features.shape

    def save(self, path: str | os.PathLike) -> None:
        """Write the log to ``path`` (``.npz``) atomically: a complete file or none."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: getattr(self, name) for name in FIELDS if getattr(self, name) is not None}
        with atomic_write(path) as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> BanditLog:
        """Read a log written by :meth:`save`. A file that is not one (truncated, damaged, without a log's
        arrays, or holding a log that :class:`BanditLog` refuses) raises a ``ValueError`` that names it."""
        try:
            data = np.load(Path(path), allow_pickle=False)
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ValueError(f"{path} is not a bandit log: it holds one array, not an .npz archive of {FIELDS}")
            with data:
                missing = [name for name in FIELDS[:4] if name not in data.files]
                if missing:
                    raise ValueError(f"{path} is not a bandit log: it lacks {missing} (has {sorted(data.files)})")
                arrays = {name: data[name] for name in FIELDS if name in data.files}
        except (zipfile.BadZipFile, EOFError, ValueError) as exc:
            if str(exc).startswith(f"{path} is not a bandit log"):
                raise
            raise ValueError(f"{path} cannot be read as a bandit log, it is truncated or damaged "
                             f"({type(exc).__name__}: {exc}); record and save it again") from exc
        try:
            return cls(**arrays)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc


def _check_dtype(name: str, value: Any, kinds: str) -> None:
    """``value`` is a numpy array of one of the dtype ``kinds`` (``"f"`` float, ``"i"``/``"u"`` integer)."""
    words = {"f": "float", "i": "integer", "u": "unsigned integer"}
    if not isinstance(value, np.ndarray) or value.dtype.kind not in kinds:
        got = (f"dtype {value.dtype}" if isinstance(value, np.ndarray)
               else f"{short_repr(value)} of type {type(value).__name__}")
        raise ValueError(f"{name} must be a numpy array of {' or '.join(words[k] for k in kinds)} numbers, got {got}")


def _check_where(name: str, values: np.ndarray, bad: np.ndarray, rule: str) -> None:
    """Raise naming ``name``'s first index where ``bad`` holds, its value and ``rule``."""
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} {rule}; {name}[{', '.join(map(str, index))}] is {values[index].item()!r} "
                         f"({int(bad.sum())} such value(s))")


def record(agent: Any, env: gym.Env | gym.vector.VectorEnv, rounds: int, *, seed: int | None = None,
           learn: bool = True, n_samples: int = 1000) -> BanditLog:
    """Play ``agent`` on ``env`` for ``rounds`` rounds and log every round.

    Each round: ``agent.action_probabilities(obs, n_samples)`` (before acting, so the propensity is the
    rule's at that round), ``agent.predict(obs)``, the step, and with ``learn`` ``agent.update(obs, action,
    reward)``. ``rounds`` must fit in one episode (at most the env's horizon).
    """
    vector = isinstance(env, gym.vector.VectorEnv)
    horizon = getattr(env.unwrapped if not vector else env, "horizon", None)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1 or (horizon and rounds > horizon):
        raise ValueError(f"rounds must be an integer in [1, {horizon}] (one episode), got {rounds!r}")
    obs, info = env.reset(seed=seed)
    rows: dict[str, list] = {name: [] for name in FIELDS}
    for t in range(rounds):
        features = np.asarray(obs, dtype=np.float32).reshape((-1, *np.shape(obs)[-2:]))  # (R, K, d)
        probabilities, _ = agent.action_probabilities(obs, n_samples=n_samples)
        action, _ = agent.predict(obs)
        actions = np.asarray(action, dtype=np.int64).reshape(-1)  # (R,)
        next_obs, reward, _, _, next_info = env.step(action if vector else int(actions[0]))
        rewards = np.asarray(reward, dtype=np.float64).reshape(-1)
        if learn:
            agent.update(obs, action, reward)
        rows["features"].append(features)
        rows["actions"].append(actions)
        rows["rewards"].append(rewards)
        propensities = np.asarray(probabilities, np.float64).reshape(len(actions), -1)[np.arange(len(actions)), actions]
        if not (propensities > 0).all():
            raise ValueError(f"round {t}: action_probabilities gave the arm played probability 0 (a Monte Carlo "
                             f"estimate from n_samples={n_samples} draws misses rare arms): raise n_samples, or log "
                             "with an agent whose probabilities are exact (epsilon-greedy, uniform)")
        rows["propensities"].append(propensities)
        if "expected_rewards" in info:
            rows["expected_rewards"].append(np.asarray(info["expected_rewards"], np.float32).reshape(len(actions), -1))
        obs, info = next_obs, next_info
    stacked = {name: np.stack(values) for name, values in rows.items() if values}
    return BanditLog(**stacked)


def target_probabilities(agent: Any, log: BanditLog, n_samples: int = 1000) -> np.ndarray:
    """``pi(k | x_t)`` of a (fixed) agent on every logged round, ``(T, R, K)``: its ``action_probabilities``
    per round, the agent built for the log's ``R`` replicas (or ``R = 1``)."""
    return np.stack([np.asarray(agent.action_probabilities(log.features[t] if log.shape[1] > 1 else
                                                           log.features[t, 0], n_samples=n_samples)[0],
                                np.float64).reshape(log.shape[1], -1) for t in range(log.shape[0])])


@dataclasses.dataclass
class Estimate:
    """A value per log ``(R,)``, its standard error and the interval ``[low, high]`` at ``level``."""

    value: np.ndarray
    standard_error: np.ndarray
    level: float

    @property
    def half_width(self) -> np.ndarray:
        return NormalDist().inv_cdf(0.5 + self.level / 2) * self.standard_error

    @property
    def low(self) -> np.ndarray:
        return self.value - self.half_width

    @property
    def high(self) -> np.ndarray:
        return self.value + self.half_width

    def covers(self, truth: float | np.ndarray) -> np.ndarray:
        """Whether each log's interval holds ``truth``, ``(R,)`` bool."""
        return (self.low <= truth) & (truth <= self.high)


#: How far a round's target probabilities may sum from 1, per arm (float32 rounding of ``K`` terms is 6e-8 each).
_SUM_TOLERANCE = 1e-6


def _check(log: BanditLog, target: np.ndarray, level: float) -> None:
    """``target`` holds ``pi(. | x_t)`` of every logged round: shape ``(T, R, K)``, float, each round's row of
    probabilities ``>= 0`` and summing to 1 (within ``1e-6 K``); ``level`` is in ``(0, 1)``."""
    T, R, K, _ = log.shape
    if np.shape(target) != (T, R, K):
        raise ValueError(f"target must hold pi(k | x) of every logged round, shape {(T, R, K)}, got {np.shape(target)}")
    _check_dtype("target", target, "f")
    _check_where("target", target, np.isnan(target) | (target < 0), "must hold probabilities >= 0")
    sums = target.sum(axis=2)  # (T, R)
    _check_where("target.sum(axis=2)", sums, ~(np.abs(sums - 1) <= _SUM_TOLERANCE * K),
                 "must be 1 (each logged round's probabilities over the arms sum to 1)")
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")


def _mean_and_error(terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over rounds ``(T, R) -> (R,)`` and its standard error."""
    return terms.mean(axis=0), terms.std(axis=0, ddof=1) / np.sqrt(len(terms))


def _weights(log: BanditLog, target: np.ndarray) -> np.ndarray:
    """``w_t = pi(a_t | x_t) / p_t``, ``(T, R)``."""
    return np.take_along_axis(target, log.actions[..., None], axis=2)[..., 0] / log.propensities


def ips(log: BanditLog, target: np.ndarray, level: float = 0.95) -> Estimate:
    """Inverse propensity scoring: ``mean_t w_t r_t``."""
    _check(log, target, level)
    return Estimate(*_mean_and_error(_weights(log, target) * log.rewards), level)


def snips(log: BanditLog, target: np.ndarray, level: float = 0.95) -> Estimate:
    """Self-normalised IPS: ``sum w r / sum w``; standard error by the delta method."""
    _check(log, target, level)
    w = _weights(log, target)  # (T, R)
    value = (w * log.rewards).sum(axis=0) / w.sum(axis=0)
    influence = w * (log.rewards - value) / w.mean(axis=0)  # (T, R)
    return Estimate(value, influence.std(axis=0, ddof=1) / np.sqrt(len(w)), level)


def reward_model(log: BanditLog, lambda_reg: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Ridge fit of ``r ~ x_a . theta`` per log: ``theta_hat`` ``(R, d)`` and its covariance ``(R, d, d)``
    (``sigma^2 V^-1 X^T X V^-1``, ``sigma^2`` the residuals' mean square)."""
    check_float("lambda_reg", lambda_reg, minimum=0.0)
    x = np.take_along_axis(log.features, log.actions[..., None, None], axis=2)[:, :, 0].astype(np.float64)  # (T, R, d)
    gram = np.einsum("trd,tre->rde", x, x)  # (R, d, d)
    V = gram + lambda_reg * np.eye(x.shape[2])
    theta = np.linalg.solve(V, np.einsum("trd,tr->rd", x, log.rewards)[..., None])[..., 0]  # (R, d)
    residual = log.rewards - np.einsum("trd,rd->tr", x, theta)
    sigma2 = (residual**2).sum(axis=0) / max(len(x) - x.shape[2], 1)  # (R,)
    inverse = np.linalg.inv(V)
    return theta, sigma2[:, None, None] * inverse @ gram @ inverse


def direct_method(log: BanditLog, target: np.ndarray, level: float = 0.95, lambda_reg: float = 1.0) -> Estimate:
    """The value of ``target`` under a ridge reward model fit to the log."""
    _check(log, target, level)
    theta, covariance = reward_model(log, lambda_reg)
    q = np.einsum("trkd,rd->trk", log.features.astype(np.float64), theta)  # (T, R, K)
    terms = (target * q).sum(axis=2)  # (T, R)
    value, context_error = _mean_and_error(terms)
    g = np.einsum("trk,trkd->rd", target, log.features.astype(np.float64)) / len(terms)  # d value / d theta (R, d)
    model_variance = np.einsum("rd,rde,re->r", g, covariance, g)
    return Estimate(value, np.sqrt(context_error**2 + model_variance), level)


def doubly_robust(log: BanditLog, target: np.ndarray, level: float = 0.95, lambda_reg: float = 1.0) -> Estimate:
    """``mean_t [sum_k pi q + w_t (r_t - q(x_t, a_t))]`` with the ridge reward model of :func:`direct_method`."""
    _check(log, target, level)
    theta, _ = reward_model(log, lambda_reg)
    q = np.einsum("trkd,rd->trk", log.features.astype(np.float64), theta)  # (T, R, K)
    chosen = np.take_along_axis(q, log.actions[..., None], axis=2)[..., 0]  # (T, R)
    terms = (target * q).sum(axis=2) + _weights(log, target) * (log.rewards - chosen)
    return Estimate(*_mean_and_error(terms), level)


ESTIMATORS = {"IPS": ips, "SNIPS": snips, "DM": direct_method, "DR": doubly_robust}


class LoggedBanditEnv(gym.Env):
    """Replays one log (replica ``replica`` of a :class:`BanditLog`) as a bandit env.

    Round ``t`` shows the logged arms; ``step(a)`` pays the logged reward when ``a`` is the logged action,
    and 0.0 otherwise, with ``info["matched"]`` saying which, ``info["logged_action"]`` and
    ``info["propensity"]``. Li et al.'s replay method evaluates a policy on the matched rounds only (unbiased
    when the log was played uniformly at random): :func:`replay_value`.
    """

    metadata = {"render_modes": []}

    def __init__(self, log: BanditLog, replica: int = 0) -> None:
        T, R, K, d = log.shape
        if isinstance(replica, bool) or not isinstance(replica, int) or not 0 <= replica < R:
            raise ValueError(f"replica must be an integer in [0, {R}), got {replica!r}")
        self.log, self.replica, self.horizon = log, replica, T
        low, high = float(log.features.min()), float(log.features.max())
        self.observation_space = gym.spaces.Box(low, high, shape=(K, d), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(K)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        return self.log.features[0, self.replica].copy(), {}

    def step(self, action: Any):
        if self._t >= self.horizon:
            raise RuntimeError(f"the log has {self.horizon} rounds; call reset()")
        t, r = self._t, self.replica
        logged = int(self.log.actions[t, r])
        matched = int(action) == logged
        self._t += 1
        info = {"matched": matched, "logged_action": logged, "propensity": float(self.log.propensities[t, r])}
        obs = self.log.features[min(self._t, self.horizon - 1), r].copy()
        return obs, float(self.log.rewards[t, r]) if matched else 0.0, False, self._t >= self.horizon, info


def replay_value(agent: Any, log: BanditLog, replica: int = 0, learn: bool = True) -> tuple[float, int]:
    """Li et al.'s replay: the agent's mean reward on the rounds where it chose the logged action, and how
    many there were; with ``learn`` it learns from those rounds only."""
    env = LoggedBanditEnv(log, replica)
    obs, _ = env.reset()
    total, matched = 0.0, 0
    for _ in range(env.horizon):
        action, _ = agent.predict(obs)
        next_obs, reward, _, _, info = env.step(int(np.asarray(action).reshape(-1)[0]))
        if info["matched"]:
            total, matched = total + reward, matched + 1
            if learn:
                agent.update(obs, action, reward)
        obs = next_obs
    return (total / matched if matched else float("nan")), matched
