"""The base of every agent: R independent replicas as one batch, Stable-Baselines3 verbs.

An agent holds the state of ``R`` independent runs as tensors with a leading replica axis
(contexts ``(R, K, d)``, scores ``(R, K)``, actions ``(R,)``). A subclass implements two methods,
and one round of :meth:`BanditAgent.rounds` (the one round loop, which ``learn`` and the experiment
runner iterate) is exactly::

    contexts = self._as_contexts(obs)                  # numpy or torch, (K, d) or (R, K, d)
    actions = self._select(contexts)                   # (R,): the arms to play
    obs, reward, ... = env.step(actions)
    self._observe(contexts, actions, rewards)          # learn from the round
    self.t += 1

Seeding: replica ``r`` of an agent made with ``seed=s`` draws the random numbers of a single
run with ``seed=s + r`` (counter-based streams of :mod:`bandit_gym.rng`: a draw of round ``t``
is a function of ``(seed, stream, t)``, so ``predict`` never changes the agent). ``seed`` may
also be a list of R seeds (see :mod:`agents.loop.grid`).

Hyperparameters: every numeric hyperparameter is a number or one value per replica
(:meth:`BanditAgent._hyperparameter`), reported by :meth:`hyperparameters` and saved.

Threads: ``learn``, ``predict`` and ``update`` run under :class:`bandit_gym.threads.policy` (one torch
intra-op thread unless ``threads=`` or ``BANDIT_GYM_THREADS`` says otherwise, or, in ``learn``, the round's work
:meth:`BanditAgent.round_work` reaches :data:`bandit_gym.threads.LARGE_WORK`; the user's setting is put back).
"""

from __future__ import annotations

import functools
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents import _kernels
from agents.loop import propensity
from agents.loop.callbacks import as_round_hooks, make_env
from agents.loop.rounds import Rounds
from agents.validation import check_bool, check_int, per_replica, replica_seeds
from bandit_gym import rng
from bandit_gym.atomic import atomic_write
from bandit_gym.rng import Stream
from bandit_gym.threads import policy
from bandit_gym.validation import check_memory, resolve_device, short_repr


def env_sizes(env: gym.Env | gym.vector.VectorEnv) -> tuple[int, int, int]:
    """``(num_replicas, n_arms, dim)`` of a single env or a vector env, from its spaces."""
    if not hasattr(env, "observation_space") or isinstance(env, type):
        raise TypeError(f"env must be a Gymnasium env or a vector env, got {type(env).__name__} {env!r}")
    if isinstance(env, gym.vector.VectorEnv):
        space, num = env.single_observation_space, env.num_envs
    else:
        space, num = env.observation_space, 1
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 2:
        raise ValueError(f"env must observe an arm-feature matrix Box(n_arms, dim), got observation space {space}")
    return num, space.shape[0], space.shape[1]


def env_horizon(env: gym.Env | gym.vector.VectorEnv | None) -> int | None:
    """The env's horizon ``T`` (rounds per episode), or None if it does not define one."""
    if env is None:
        return None
    horizon = getattr(env.unwrapped if isinstance(env, gym.Env) else env, "horizon", None)
    return None if horizon is None else int(horizon)


def random_argmax(values: torch.Tensor, tie_noise: torch.Tensor) -> torch.Tensor:
    """Index of the largest value per row, ties broken uniformly at random: ``(R, K), (R, K) -> (R,)``.

    ``tie_noise`` holds uniform draws; among a row's maximisers the one with the largest draw wins.
    (``amax``, not ``max(dim=...)``: on CPU the latter enters torch's thread pool even for 500 values,
    and waits milliseconds for a busy core; measured in ``docs/agents.md``.)
    """
    best = values.amax(dim=1, keepdim=True)  # (R, 1)
    return torch.where(values == best, tie_noise, -1.0).argmax(dim=1)


def chosen_rows(contexts: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Features of the played arms: ``(R, K, d), (R,) -> (R, d)``."""
    return contexts[_replica_index(actions.shape[0], actions.device), actions]


@functools.lru_cache(maxsize=16)
def _replica_index(num_replicas: int, device: torch.device) -> torch.Tensor:
    """``arange(R)`` on ``device``, made once per size (read only: indexing never writes to it)."""
    return torch.arange(num_replicas, device=device)


def _tensorboard_logger(folder: str | os.PathLike):
    """SB3's logger writing ``folder/progress.csv`` and TensorBoard files (``learn(tensorboard_log=)``)."""
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        raise ModuleNotFoundError(
            f"tensorboard_log={str(folder)!r} needs the package 'tensorboard', which is not installed; it comes with "
            'pip install "contextual-bandit-gym[tensorboard]" (for CSV alone: '
            'agent.set_logger(stable_baselines3.common.logger.'
            'configure(DIR, ["csv"])))', name="tensorboard")
    from stable_baselines3.common.logger import configure

    return configure(str(folder), ["csv", "tensorboard"])


#: Rounds between two checks for NaN or Inf of an agent that does not check each round (:meth:`BanditAgent.
#: _check_learned`): each check reads one value back from the device, so a round loop on a GPU need not wait.
CHECK_ROUNDS = 256


class DivergenceError(RuntimeError):
    """Parameters became NaN or Inf (e.g. a step size too large)."""


class BanditAgent(ABC):
    """Base class: ``learn``, ``predict``, ``update``, ``save``/``load`` over R replicas, and ``rounds``, the round
    loop that ``learn`` and the experiment runner iterate (one :class:`agents.loop.rounds.Round` record per round).

    Args:
        env: A bandit env (``R = 1``) or a vector env (``R = num_envs``): the native batched
            env, or Gymnasium's ``SyncVectorEnv``; sizes come from its spaces. Or a registered env
            id, as Stable-Baselines3 accepts: ``gym.make(id)``, or the native batched env of
            ``num_replicas`` replicas when ``num_replicas`` is given. May be None if ``n_arms``,
            ``dim`` (and ``num_replicas``) are given. :meth:`learn` plays it unless given another.
        seed: Seed of replica 0 (replica ``r`` uses ``seed + r``), or one seed per replica.
            None draws one at random.
        device: ``"cpu"`` (the default, as for the envs and the command line), ``"cuda"``, ``"cuda:N"``
            or ``"auto"`` (CUDA when available). The default is the CPU everywhere: a round of a few
            replicas is faster there, and the same seed gives the same numbers whether or not the machine
            has a GPU (docs/agents.md, "Devices").
        n_arms: Number of arms ``K``, when no env is given.
        dim: Feature dimension ``d``, when no env is given.
        num_replicas: Number of replicas ``R``, when no env is given (default 1).
    """

    def __init__(self, env: gym.Env | gym.vector.VectorEnv | None = None, *, seed: int | list[int] | None = None,
                 device: str | torch.device = "cpu", n_arms: int | None = None, dim: int | None = None,
                 num_replicas: int | None = None) -> None:
        if isinstance(env, str):
            env = make_env(env, num_replicas)
        elif env is not None and not hasattr(env, "observation_space"):
            raise TypeError(f"env must be a Gymnasium env, a vector env, a registered env id or None, "
                            f"got {type(env).__name__} {env!r}")
        self.env = env
        if env is not None:
            self.num_replicas, self.n_arms, self.dim = env_sizes(env)
        elif n_arms is None or dim is None:
            raise ValueError("give an env, or n_arms and dim (and num_replicas)")
        else:
            self.num_replicas = check_int("num_replicas", 1 if num_replicas is None else num_replicas)
            self.n_arms, self.dim = check_int("n_arms", n_arms), check_int("dim", dim)
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        self.seeds = replica_seeds(seed, self.num_replicas)
        self.seed = seed if isinstance(seed, int) else list(self.seeds)
        self.device = resolve_device(device)
        self.keys = rng.seed_to_key(self.seeds).to(self.device)  # (R,) one random stream per replica
        self.t = 1  # the round about to be played (1-based, as in the papers)
        self.history: dict[str, np.ndarray] = {}
        self._hyperparameters: dict[str, Any] = {}
        self._learn_calls = 0

    # -- what an algorithm implements ------------------------------------------
    @abstractmethod
    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        """Arms to play in round ``self.t``: ``(R, K, d) -> (R,)`` int64. Must not change state."""

    @abstractmethod
    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        """Learn from round ``self.t``: ``(R, K, d), (R,), (R,)``. ``self.t`` is advanced afterwards."""

    @abstractmethod
    def _state(self) -> dict[str, torch.Tensor]:
        """The tensors that make up the learned state (written by ``save``)."""

    @abstractmethod
    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`_state` (tensors already on ``self.device``)."""

    # -- hyperparameters --------------------------------------------------------
    def _hyperparameter(self, name: str, value: Any, *, integer: bool = False, minimum: float | None = None,
                        strict: bool = False) -> torch.Tensor:
        """Validate and record a numeric hyperparameter; its value per replica, ``(R,)`` on the device.

        ``value`` is a number or one number per replica (sequence, numpy array or tensor).
        """
        given, values = per_replica(name, value, self.num_replicas, integer=integer, minimum=minimum, strict=strict)
        self._hyperparameters[name] = given
        return torch.tensor(values, dtype=torch.int64 if integer else torch.float32, device=self.device)

    def hyperparameters(self) -> dict[str, Any]:
        """Constructor keywords that rebuild this agent: a number, or a list with one value per replica."""
        return dict(self._hyperparameters)

    # -- public verbs ---------------------------------------------------------
    @policy()
    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """Choose arms (Stable-Baselines3 signature); returns ``(actions, None)``.

        ``observation`` is ``(K, d)`` (then ``R`` must be 1; the action is a 0-d array) or
        ``(R, K, d)``, numpy or torch. The answer is numpy for numpy input, torch otherwise.
        ``deterministic`` is accepted for compatibility; Thompson-style agents still sample.
        """
        contexts = self._as_contexts(observation, check_finite=True)
        actions = self._select(contexts)  # (R,)
        if np.ndim(observation) == 2:
            actions = actions[0]
        return (actions if isinstance(observation, torch.Tensor) else actions.cpu().numpy()), None

    @policy()
    def action_probabilities(self, observation, n_samples: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """The probability this round's rule gives each arm, and its standard error: ``(K,)`` or ``(R, K)`` each.

        Exact (error 0) where the rule gives it in closed form (epsilon-greedy, UCB rules, uniform); a Monte
        Carlo frequency over ``n_samples`` fresh draws of the round's randomness otherwise, with standard error
        ``sqrt(p (1 - p) / n_samples)`` (:mod:`agents.loop.propensity`). Changes nothing in the agent. A logged
        action's propensity is its entry.
        """
        contexts = self._as_contexts(observation, check_finite=True)
        probabilities, errors = (x.cpu().numpy() for x in propensity.action_probabilities(self, contexts, n_samples))
        return (probabilities[0], errors[0]) if np.ndim(observation) == 2 else (probabilities, errors)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor | None:
        """This round's probabilities ``(R, K)`` float64 in closed form, or None (the default): then
        :meth:`action_probabilities` estimates them by Monte Carlo. A rule with a closed form answers it here
        (a subclass that changes ``_select`` changes this too)."""
        return None

    @policy()
    def update(self, observation, action, reward) -> None:
        """One online step: learn from playing ``action`` on ``observation`` and getting ``reward``.

        ``reward`` is this round's reward, a number or one per replica. Under delayed or batched feedback
        (:mod:`bandit_gym.feedback`) a step's reward is NaN until it is revealed, and ``update`` refuses it:
        learn from ``info`` with :meth:`agents.loop.feedback.PendingRounds.update` instead (``docs/envs.md``,
        "Feedback settings").
        """
        contexts = self._as_contexts(observation, check_finite=True)
        actions = self._as_actions(action)
        rewards = self._as_rewards(reward)
        if bool(torch.isnan(rewards).any()):
            raise ValueError(f"reward must be a finite number, got {short_repr(rewards.tolist())}: a feedback "
                             "wrapper (bandit_gym.feedback) returns NaN for a round whose reward has not arrived; "
                             "learn from info['revealed_rounds'] with "
                             "agents.loop.feedback.PendingRounds().update(agent, obs, action, info) "
                             "(docs/envs.md, 'Feedback settings')")
        if not bool(torch.isfinite(rewards).all()):
            raise ValueError(f"reward must be finite, got {short_repr(rewards.tolist())}")
        self._observe(contexts, actions, rewards)
        self._check_learned(self.t)
        self.t += 1

    def learn(self, env: gym.Env | gym.vector.VectorEnv | int | None = None, total_timesteps: int | None = None,
              callback: Callable[[BanditAgent, int], bool | None] | Any | None = None,
              progress_bar: bool = False, threads: int | str | None = None,
              tensorboard_log: str | os.PathLike | None = None) -> BanditAgent:
        """Play ``total_timesteps`` rounds (default: the env's horizon) and learn from each.

        ``env`` defaults to the env given at construction (:meth:`get_env`); as in
        Stable-Baselines3, ``agent.learn(10_000)`` reads an integer as ``total_timesteps``.
        The first ``learn`` resets the env with the agent's seeds; later calls continue with
        unseeded resets. ``history["regret"]``, ``["reward"]`` and ``["action"]`` hold one row
        per round, shape ``(T,)`` for a single env and ``(T, R)`` for a vector env.

        Under delayed or batched feedback (:mod:`bandit_gym.feedback`: ``info`` has ``revealed_rounds``) the agent
        keeps each round's arm features and learns from a round when its reward arrives (:mod:`agents.loop.feedback`);
        ``history["reward"]`` then holds what each step paid (the sum of the rewards revealed in it).

        ``callback`` runs after every round and can stop the run: a callable ``callback(agent, round)``
        returning False, or a Stable-Baselines3 callback (``BaseCallback``, ``CallbackList`` or a list
        of them) whose ``on_step()`` returns False; ``callback.model`` is this agent.

        ``threads``: torch's intra-op threads while playing (the callback included), a positive integer or
        ``"torch"`` (torch's own setting); default ``$BANDIT_GYM_THREADS``, else by the round's work
        (:meth:`round_work`): 1, or torch's own setting for a large round (:mod:`bandit_gym.threads`).
        Your ``torch.get_num_threads()`` is the same afterwards.

        ``tensorboard_log``: a folder; from now on every round goes to Stable-Baselines3's logger there, as
        ``progress.csv`` and TensorBoard event files (needs the package ``tensorboard``). For CSV alone, or
        any other SB3 output, give your own logger to :meth:`set_logger` instead. What is logged: see
        :meth:`set_logger`.
        """
        check_bool("progress_bar", progress_bar)
        if tensorboard_log is not None:
            self.set_logger(_tensorboard_logger(tensorboard_log))
        if isinstance(env, int) and not isinstance(env, bool):
            env, total_timesteps = None, env if total_timesteps is None else total_timesteps
        env = self.env if env is None else env
        if env is None:
            raise ValueError("learn needs an env: give one here or when making the agent")
        loop = self.rounds(env, total_timesteps)
        total, vector = loop.total, isinstance(env, gym.vector.VectorEnv)
        with policy(threads, work=self.round_work()):
            cumulative = 0.0  # the logged cumulative regret, mean over the replicas
            if progress_bar:
                from tqdm.auto import tqdm

                loop = tqdm(loop, total=total, desc=type(self).__name__, unit="round")
            on_step, on_end = as_round_hooks(self, callback, locals())
            logs = {name: _RoundLog(total, self.num_replicas, dtype) for name, dtype in
                    (("regret", np.float64), ("reward", np.float32), ("action", np.int64))}
            regret_log, reward_log, action_log = logs["regret"], logs["reward"], logs["action"]
            for played_round in loop:
                played, info, rewards = played_round.round, played_round.info, played_round.rewards
                regret_log.add(info["regret"])
                reward_log.add(rewards)
                action_log.add(played_round.actions)
                if self._logging:
                    cumulative = self._log_round(info["regret"], rewards, cumulative)
                stop = callback is not None and on_step(
                    played, {**locals(), **vars(played_round), "obs": played_round.observation}) is False
                if self._logging:
                    self.logger.dump(step=self.num_timesteps)  # one row per round, with what callbacks recorded
                if stop:
                    break
            on_end()
        self._check_learned(self.t - 1)
        self.history = {name: log.rows() if vector else log.rows()[:, 0] for name, log in logs.items()}
        return self

    def round_work(self) -> int:
        """Floats of arithmetic in one round, ``R p (p + K)`` (``p`` the model's features per arm): the size of a
        round's products (scores of ``K`` arms against ``p x p`` statistics) that :mod:`bandit_gym.threads` chooses
        the threads of ``learn`` by."""
        p = getattr(self, "model_dim", self.dim)
        return self.num_replicas * p * (p + self.n_arms)

    def rounds(self, env: gym.Env | gym.vector.VectorEnv | None = None, total: int | None = None, *,
               observation: Any = None, checked: bool = False, timed: bool = False,
               threads: int | str | None = None) -> Rounds:
        """The round loop of :meth:`learn`, one :class:`agents.loop.rounds.Round` per round played (public API).

        ``learn`` and the experiment runner both iterate it and add their own bookkeeping; iterate it yourself
        to watch or time rounds without a callback::

            for r in agent.rounds(env, 1000, timed=True):
                regret += r.info["regret"]; select_s += r.select_s

        ``env`` and ``total`` as in :meth:`learn` (defaults: the agent's env and its horizon). The env is reset
        with the agent's seeds on the agent's first loop and unseeded afterwards, and again after an episode
        ends; ``observation``: do not reset, continue from this observation of ``env`` (a resumed run). Each
        round chooses arms with ``_select`` and learns with ``_observe``, or with ``checked=True`` with
        :meth:`predict` and :meth:`update` (which check their input): the same numbers. Under delayed or
        batched feedback the agent learns from each round when its reward arrives (see :meth:`learn`).
        ``timed``: on CUDA, wait for the device after choosing and after learning, so that each round's
        ``select_s`` and ``update_s`` are the device's work. Each step runs under ``threads``
        (:mod:`bandit_gym.threads`; default the enclosing choice). Breaking out of the loop leaves the agent
        between two rounds; :attr:`agents.loop.rounds.Rounds.updating` says whether an exception left it mid-update.
        """
        env = self.env if env is None else env
        if env is None:
            raise ValueError("rounds needs an env: give one here or when making the agent")
        if env_sizes(env) != (self.num_replicas, self.n_arms, self.dim):
            raise ValueError(f"env has (num_envs, n_arms, dim) = {env_sizes(env)}, the agent was built for "
                             f"{(self.num_replicas, self.n_arms, self.dim)}")
        if total is None:
            total = env_horizon(env)
            if total is None:
                raise ValueError(f"{type(env).__name__} has no horizon: give total_timesteps (an integer >= 1)")
        return Rounds(self, env, check_int("total_timesteps", total), observation, checked=checked, timed=timed,
                      threads=threads)

    # -- persistence ----------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write hyperparameters (per-replica values included) and state to ``path`` atomically."""
        path = Path(path)
        payload = {"class": type(self).__name__, "hyperparameters": saved_hyperparameters(self.hyperparameters()),
                   "sizes": {"n_arms": self.n_arms, "dim": self.dim, "num_replicas": self.num_replicas},
                   "seed": self.seed, "t": self.t,
                   "state": {name: value.detach().cpu() for name, value in self._state().items()}}
        with atomic_write(path) as f:
            torch.save(payload, f)

    @classmethod
    def load(cls, path: str | os.PathLike, env: gym.Env | gym.vector.VectorEnv | None = None,
             device: str | torch.device = "cpu", custom_objects: dict[str, Any] | None = None, *,
             model: Any = None) -> BanditAgent:
        """Rebuild an agent saved with :meth:`save`; ``env`` (optional) becomes its :meth:`get_env`.

        ``custom_objects`` (as in Stable-Baselines3) replaces saved hyperparameters by name. An agent whose
        reward model is your own ``nn.Module`` needs it again, ``load(path, model=MyNet(...))`` (the file
        holds its parameters, not its code); the saved parameters are loaded into the R copies.
        """
        payload = _read_saved(path)
        if payload["class"] != cls.__name__:
            raise ValueError(f"{path} holds a {payload['class']} agent, not a {cls.__name__}")
        hyperparameters = {**payload["hyperparameters"], **(custom_objects or {})}
        if model is not None:
            hyperparameters["model"] = model
        saved_module = _saved_module_name(hyperparameters.get("model"))
        if saved_module is not None:
            raise ValueError(f"{path} holds a {cls.__name__} whose reward model is your own nn.Module "
                             f"({saved_module}), which a file cannot rebuild: pass one, {cls.__name__}.load(path, "
                             f"model={saved_module.rsplit('.', 1)[-1]}(...)) or custom_objects={{'model': ...}}; "
                             "its saved parameters are then loaded into it")
        _check_saved_sizes(path, payload["sizes"])
        agent = cls(None, seed=payload["seed"], device=device, **payload["sizes"], **hyperparameters)
        saved_theta, theta = payload["state"].get("theta"), getattr(agent, "theta", None)
        if saved_theta is not None and theta is not None and saved_theta.shape != theta.shape:
            raise ValueError(f"model={hyperparameters.get('model')!r} has {theta.shape[-1]} parameters per replica, "
                             f"the agent in {path} had {saved_theta.shape[-1]}: pass the network it was saved with")
        t = payload["t"]
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise ValueError(f"{path}: the saved round count 't' must be an integer >= 1, got {t!r}")
        _check_saved_state(path, payload["state"], agent._state())
        agent.t = t
        agent._load_state({name: value.to(agent.device) for name, value in payload["state"].items()})
        if env is not None:
            agent.set_env(env)
        return agent

    def get_env(self) -> gym.Env | gym.vector.VectorEnv | None:
        """The env :meth:`learn` plays by default (given at construction, by :meth:`set_env` or ``load``)."""
        return self.env

    def set_env(self, env: gym.Env | gym.vector.VectorEnv) -> None:
        """Play ``env`` from now on; its sizes must be the agent's."""
        if env_sizes(env) != (self.num_replicas, self.n_arms, self.dim):
            raise ValueError(f"env has (num_envs, n_arms, dim) = {env_sizes(env)}, the agent was built for "
                             f"{(self.num_replicas, self.n_arms, self.dim)}")
        self.env = env

    @property
    def num_timesteps(self) -> int:
        """Env steps taken so far over all replicas (Stable-Baselines3's count, read by its callbacks)."""
        return (self.t - 1) * self.num_replicas

    #: The agent's own quantities that :meth:`learn` logs each round when a logger is set, where the agent has
    #: them: a per-replica tensor (``acceptance_rate`` of the Metropolis samplers) or a method of the round
    #: (``exploration_rate(t)`` of the epsilon-greedy agents). Logged as ``agent/<name>``, mean over the replicas.
    logged_quantities: tuple[str, ...] = ("exploration_rate", "acceptance_rate")

    @property
    def logger(self):
        """The Stable-Baselines3 logger: the one given to :meth:`set_logger` (or made by ``learn(tensorboard_log=)``),
        else one that writes nothing (for SB3 callbacks that log)."""
        if getattr(self, "_logger", None) is None:
            from stable_baselines3.common.logger import Logger

            self._logger = Logger(folder=None, output_formats=[])
        return self._logger

    @property
    def _logging(self) -> bool:
        return getattr(self, "_logger_set", False)

    def set_logger(self, logger) -> None:
        """Log every round of :meth:`learn` to a Stable-Baselines3 logger, e.g.
        ``stable_baselines3.common.logger.configure(DIR, ["csv"])`` (CSV in ``DIR/progress.csv``); None: stop.

        Each round writes one row at step :attr:`num_timesteps`, each value the mean over the replicas:
        ``rollout/regret`` (the round's regret, ``history["regret"]``), ``rollout/cumulative_regret`` (its sum
        so far in this ``learn``), ``rollout/reward``, ``time/rounds`` (the agent's round, 1-based), and the
        agent's own quantities of :attr:`logged_quantities` as ``agent/<name>``; SB3 callbacks may record more.
        """
        self._logger = logger
        self._logger_set = logger is not None

    def _log_round(self, regret, rewards: torch.Tensor, cumulative: float) -> float:
        """Record the round just played (``self.t`` is already the next one); the new cumulative regret."""
        regret = float(np.mean(regret.cpu().numpy() if isinstance(regret, torch.Tensor) else np.asarray(regret)))
        cumulative += regret
        logger = self.logger
        logger.record("rollout/regret", regret)
        logger.record("rollout/cumulative_regret", cumulative)
        logger.record("rollout/reward", float(rewards.double().mean()))
        logger.record("time/rounds", self.t - 1)
        for name in self.logged_quantities:
            value = getattr(self, name, None)
            if callable(value):
                value = value(self.t - 1)
            if value is not None:
                logger.record(f"agent/{name}", float(torch.as_tensor(value, dtype=torch.float64).mean()))
        return cumulative

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}" for k, v in self.hyperparameters().items())
        return (f"{type(self).__name__}(n_arms={self.n_arms}, dim={self.dim}, num_replicas={self.num_replicas}, "
                f"{values + ', ' if values else ''}seed={self.seed!r}, device='{self.device}', round={self.t})")

    # -- helpers for subclasses ------------------------------------------------
    def _as_contexts(self, observation, check_finite: bool = False) -> torch.Tensor:
        """An observation ``(K, d)`` or ``(R, K, d)``, numpy (shared, not copied) or torch, as float32 ``(R, K, d)``.

        ``check_finite``: refuse NaN and Inf (``predict`` and ``update``, where the user hands the observation in;
        ``learn`` reads it from the env, whose own checks it trusts, and does not pay for the check each round;
        on CPU numpy's ``isfinite`` checks a (10, 10, 20) batch in 2 us, torch's in 10 us).
        """
        if isinstance(observation, torch.Tensor):
            x = observation
        else:
            array = np.asarray(observation)
            if array.dtype.kind not in "biuf":
                raise ValueError(f"observation must be an array of numbers, ({self.n_arms}, {self.dim}) or "
                                 f"({self.num_replicas}, {self.n_arms}, {self.dim}), numpy or torch, got "
                                 f"{short_repr(observation)}")
            if array.ndim == 2:
                array = array[None]  # (1, K, d), a numpy view
            x = torch.from_numpy(array if array.flags.writeable else array.copy())
        if x.ndim == 2:
            x = x.unsqueeze(0)
        if x.shape != (self.num_replicas, self.n_arms, self.dim):
            raise ValueError(f"observation must have shape ({self.n_arms}, {self.dim}) or "
                             f"({self.num_replicas}, {self.n_arms}, {self.dim}), got {tuple(np.shape(observation))}")
        if x.dtype != torch.float32 or x.device != self.device:
            x = x.to(self.device, torch.float32)
        if check_finite and not bool(np.isfinite(x.detach().numpy()).all() if x.is_cpu else torch.isfinite(x).all()):
            bad = ~torch.isfinite(x.reshape(np.shape(observation)))  # where, in the shape the user gave
            count, first = int(bad.sum()), tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"observation must be finite (no NaN or Inf), got {count} NaN or Inf "
                             f"value{'s' if count > 1 else ''}, the first at index {first}")
        return x

    def _as_actions(self, action) -> torch.Tensor:
        """Arms played, given to :meth:`update` (an integer, numpy or torch), as ``(R,)`` int64 on the device,
        checked: integers in ``[0, n_arms)``, one per replica."""
        actions = action if isinstance(action, torch.Tensor) else np.asarray(action)
        if isinstance(actions, torch.Tensor):
            integral = not (actions.is_floating_point() or actions.is_complex() or actions.dtype == torch.bool)
        else:
            integral = actions.dtype.kind in "iu"
        if not integral:
            raise ValueError(f"action must be integers (arms in [0, {self.n_arms})), one per replica "
                             f"({self.num_replicas}), got {short_repr(action)}")
        actions = torch.as_tensor(actions).to(self.device, torch.int64).reshape(-1)  # (R,)
        if actions.shape != (self.num_replicas,):
            raise ValueError(f"action must hold one value per replica ({self.num_replicas}), got "
                             f"{len(actions)} values: {short_repr(actions.tolist())}")
        if bool(((actions < 0) | (actions >= self.n_arms)).any()):
            raise ValueError(f"action must be in [0, {self.n_arms}), got {short_repr(actions.tolist())}")
        return actions

    def _as_rewards(self, reward) -> torch.Tensor:
        """An env's reward(s) (a number, numpy or torch) as ``(R,)`` float32 on the device."""
        if not isinstance(reward, torch.Tensor):
            try:
                reward = torch.from_numpy(np.asarray(reward, dtype=np.float32).reshape(-1))  # a number: (1,)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"reward must be a number or one number per replica ({self.num_replicas}), got "
                                 f"{short_repr(reward)}") from exc
        if math.prod(reward.shape) != self.num_replicas:
            raise ValueError(f"reward must hold one value per replica ({self.num_replicas}), got "
                             f"{math.prod(reward.shape)} values of shape {tuple(reward.shape)}")
        if reward.dtype != torch.float32 or reward.device != self.device:
            reward = reward.to(self.device, torch.float32)
        return reward if reward.shape == (self.num_replicas,) else reward.reshape(self.num_replicas)

    def _draws(self, kind: str, stream: Stream, shape: tuple[int, ...], t: int | None = None) -> torch.Tensor:
        """Round ``t``'s (default: this round's) ``"uniform"`` or ``"normal"`` draws of a stream, ``(R, *shape)``:
        ``bandit_gym.rng.uniform`` / ``approx_normal`` with the round as the counter."""
        t = self.t if t is None else t
        if kind == "uniform":
            return rng.uniform(self.keys, stream, t, shape)
        return rng.approx_normal(self.keys, stream, t, shape)

    def _argmax(self, values: torch.Tensor) -> torch.Tensor:
        """Greedy arm per replica, ties broken at random with this round's draws: ``(R, K) -> (R,)``
        (:func:`random_argmax`)."""
        if _kernels.enabled(values) and (only := _kernels.unique_argmax(values)) is not None:
            return only
        return random_argmax(values, self._draws("uniform", Stream.TIES, (self.n_arms,)))

    def _end_round(self) -> None:
        """``t += 1`` after a round of a loop (``learn``, :meth:`rounds`, delayed feedback's rounds), with
        :meth:`_check_learned` every :data:`CHECK_ROUNDS` rounds, before the count moves on."""
        if self.t % CHECK_ROUNDS == 0:
            self._check_learned(self.t)
        self.t += 1

    def _check_learned(self, last_round: int) -> None:  # noqa: B027  (a hook: most agents check in _observe)
        """Raise :class:`DivergenceError` if the learned state has a NaN or Inf after round ``last_round``.

        For an agent that does not check each round in ``_observe`` (a check reads a value back from the device):
        ``update`` calls it after its round, the loops (``learn``, :meth:`rounds`) every :data:`CHECK_ROUNDS` rounds
        (:meth:`_end_round`) and after their last. The default checks nothing.
        """

    def _check_finite(self, tensor: torch.Tensor, what: str, step_size: Any = None,
                      by_round: int | None = None) -> None:
        """Raise :class:`DivergenceError` naming the round (and the step size) if ``tensor`` has a NaN or Inf:
        "in round ``self.t``", or "by round ``by_round``" for a check made once for several rounds.

        (A float32 tensor's float64 sum is NaN or Inf exactly when an entry is: float32 values cannot overflow
        it. One reduction, a third of the time of ``isfinite(tensor).all()`` at bandit sizes.)
        """
        if tensor.dtype == torch.float32:
            finite = math.isfinite(tensor.sum(dtype=torch.float64).item())
        else:
            finite = bool(torch.isfinite(tensor).all())
        if not finite:
            hint = f" with step size {step_size}" if step_size is not None else ""
            when = f"in round {self.t}" if by_round is None else f"by round {by_round}"
            raise DivergenceError(f"{type(self).__name__}: {what} became NaN or Inf {when}{hint}; "
                                  "try a smaller step size")


_MODULE_MARK = "nn.Module"  # save writes your own network as {"nn.Module": "package.module.ClassName"}


def saved_hyperparameters(hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """The hyperparameters as :meth:`BanditAgent.save` writes them (plain values that ``torch.load`` with
    ``weights_only=True`` reads): an :class:`agents.models.mlp.MLP` as ``model="mlp"`` and its keywords, your own
    ``nn.Module`` as its class name (``load`` asks for the module again)."""
    from agents.models.mlp import MLP  # the neural models import this module

    saved, model = dict(hyperparameters), hyperparameters.get("model")
    if isinstance(model, MLP):
        saved["model"], saved["model_kwargs"] = "mlp", model.kwargs()
    elif isinstance(model, torch.nn.Module):
        saved["model"] = {_MODULE_MARK: f"{type(model).__module__}.{type(model).__qualname__}"}
    return saved


def _saved_module_name(model: Any) -> str | None:
    """The class name ``save`` wrote for your own ``nn.Module``, or None if ``model`` is something else."""
    return model[_MODULE_MARK] if isinstance(model, dict) and _MODULE_MARK in model else None


#: What :meth:`BanditAgent.save` writes: a dict with these keys.
_FILE_KEYS = ("class", "hyperparameters", "sizes", "seed", "t", "state")
_SIZE_KEYS = ("n_arms", "dim", "num_replicas")


def _read_saved(path: str | os.PathLike) -> dict[str, Any]:
    """The payload of a file written by :meth:`BanditAgent.save`; a ``ValueError`` naming ``path`` for a file that is
    empty, cut short, not written by ``torch.save`` or lacking one of its keys (an ``OSError`` as ``open`` raises
    it for a path that cannot be read)."""
    try:
        payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    except OSError:
        raise
    except Exception as exc:  # torch.load's errors for bad bytes: EOFError (empty), UnpicklingError, RuntimeError
        cause = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else "the file ends early"
        raise ValueError(f"{path} is not an agent file written by save: torch.load cannot read it "
                         f"({type(exc).__name__}: {cause})") from exc
    if not isinstance(payload, dict):
        raise ValueError(f"{path} is not an agent file written by save: it holds a {type(payload).__name__}, "
                         f"not a dict with the keys {', '.join(_FILE_KEYS)}")
    missing = [key for key in _FILE_KEYS if key not in payload]
    if missing:
        raise ValueError(f"{path} is not a complete agent file: it lacks the key {missing[0]!r} (save writes "
                         f"{', '.join(_FILE_KEYS)}; a damaged or foreign file)")
    sizes, state = payload["sizes"], payload["state"]
    if not isinstance(sizes, dict) or sorted(sizes) != sorted(_SIZE_KEYS):
        raise ValueError(f"{path}: the saved 'sizes' must be a dict with the keys {', '.join(_SIZE_KEYS)}, "
                         f"got {short_repr(sizes)}")
    if not isinstance(state, dict):
        raise ValueError(f"{path}: the saved 'state' must be a dict of tensors, got {type(state).__name__}")
    return payload


def _check_saved_sizes(path: Any, sizes: dict[str, Any]) -> None:
    """Refuse, before an agent is built from them, saved sizes that are not integers >= 1 or whose agent would not
    fit in memory: the linear and Langevin agents keep ``(R, d, d)`` float32 statistics, so a damaged ``dim`` of
    ``10**9`` would otherwise have the agent allocate until the system ends the process."""
    for name in _SIZE_KEYS:
        check_int(f"{path}: the saved size {name!r}", sizes[name])
    replicas, dim = sizes["num_replicas"], sizes["dim"]
    check_memory(4.0 * replicas * dim * dim, f"{path}: an agent of the saved sizes (n_arms={sizes['n_arms']}, "
                                            f"dim={dim}, num_replicas={replicas}; a damaged file?)")


def _check_saved_state(path: Any, saved: dict[str, Any], fresh: dict[str, torch.Tensor]) -> None:
    """Refuse a saved state whose tensors are not the ones a fresh agent of the same sizes holds: the same
    names, dtypes and shapes, where a length 0 in the fresh agent (the rows of a :class:`agents.History`)
    is any length ``n``, the same for every such tensor; and floating-point values that are NaN or Inf."""
    missing, unknown = sorted(fresh.keys() - saved.keys()), sorted(saved.keys() - fresh.keys())
    if missing:
        raise ValueError(f"{path}: the file lacks the state tensor {missing[0]!r} (a damaged or foreign file)")
    if unknown:
        raise ValueError(f"{path}: the file has an unknown state tensor {unknown[0]!r}, expected only {sorted(fresh)}")
    rows = None  # the history length, from the first history tensor
    for name, expected in fresh.items():
        value = saved[name]
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{path}: state {name!r} must be a tensor, got {type(value).__name__}")
        if value.dtype != expected.dtype:
            raise ValueError(f"{path}: state tensor {name!r} has dtype {value.dtype}, expected {expected.dtype}")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            count = int((~torch.isfinite(value)).sum())
            raise ValueError(f"{path}: state tensor {name!r} has {count} NaN or Inf value{'s' if count > 1 else ''} "
                             "(a damaged file, or an agent saved after its parameters diverged)")
        ok = value.ndim == expected.ndim and all(e in (v, 0) for v, e in zip(value.shape, expected.shape, strict=True))
        if ok and 0 in expected.shape:
            lengths = {v for v, e in zip(value.shape, expected.shape, strict=True) if e == 0}
            rows = next(iter(lengths)) if rows is None and len(lengths) == 1 else rows
            ok = lengths == {rows}
        if not ok:
            shape = ", ".join(str(e) if e else ("n" if rows is None else str(rows)) for e in expected.shape)
            raise ValueError(f"{path}: state tensor {name!r} has shape {tuple(value.shape)}, expected "
                             f"({shape}{',' if expected.ndim == 1 else ''}) (a damaged file, or one saved with "
                             "other sizes)")


class _RoundLog:
    """One value per replica per round of a run of at most ``rounds``, as a ``(rounds played, R)`` numpy array.

    Values go into chunks of ``CHUNK_ROWS`` rows as they come: a torch tensor on the value's device for a tensor
    (one copy into it, no wait for the device and no read into Python), a numpy array for a number or numpy
    values; no ``rounds`` rows are allocated up front (``learn(10**12)`` stopped by a callback allocates what it
    played). :meth:`rows` moves the chunks to the host once, at the end.
    """

    CHUNK_ROWS = 4096

    def __init__(self, rounds: int, width: int, dtype: type) -> None:
        self._rounds, self._width, self._dtype = rounds, width, dtype
        self._chunks: list[np.ndarray | torch.Tensor] = []
        self._count = 0  # rows in all chunks
        self._in_last = 0  # rows in the last chunk
        self._last_size = 0  # rows the last chunk holds

    def add(self, value) -> None:
        if self._in_last == self._last_size:
            size = self._last_size = max(1, min(self.CHUNK_ROWS, self._rounds - self._count))
            if isinstance(value, torch.Tensor):
                dtype = torch.from_numpy(np.empty(0, self._dtype)).dtype
                self._chunks.append(torch.empty(size, self._width, dtype=dtype, device=value.device))
            else:
                self._chunks.append(np.empty((size, self._width), self._dtype))
            self._in_last = 0
        self._chunks[-1][self._in_last] = value
        self._in_last += 1
        self._count += 1

    def rows(self) -> np.ndarray:
        if not self._chunks:
            return np.empty((0, self._width), self._dtype)
        chunks = [c.cpu().numpy() if isinstance(c, torch.Tensor) else c for c in self._chunks]
        if len(chunks) == 1 and self._in_last == self._last_size:
            return chunks[0]
        return np.concatenate([*chunks[:-1], chunks[-1][: self._in_last]])
