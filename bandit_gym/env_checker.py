"""``check_bandit_env``: what every bandit env of this package promises, checked on any env.

Run it in your own pytest when you write a new bandit env::

    def test_my_env_is_a_bandit_env():
        check_bandit_env(gym.make("MyBandit-v0"))

It checks the contract that agents, wrappers and the experiment layer rely on and
raises :class:`BanditEnvCheckError` (an ``AssertionError``) naming the first
broken promise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from bandit_gym.validation import check_float, check_int

__all__ = ["BanditEnvCheckError", "check_bandit_env"]


class BanditEnvCheckError(AssertionError):
    """An env breaks the bandit-env contract; the message says which promise and how."""


def _array(x: Any) -> np.ndarray:
    """numpy or torch (any device) as numpy."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _require(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise BanditEnvCheckError(f"{name}: {message}")


def _check_spaces(env: gym.Env, name: str) -> tuple[int, int]:
    space = env.observation_space
    _require(isinstance(space, gym.spaces.Box) and len(space.shape) == 2, name,
             f"observation_space must be a Box of shape (n_arms, dim), one row of features per arm; got {space!r}")
    n_arms, dim = space.shape
    _require(isinstance(env.action_space, gym.spaces.Discrete) and int(env.action_space.n) == n_arms, name,
             f"action_space must be Discrete(n_arms) = Discrete({n_arms}) to match the observation's {n_arms} rows; "
             f"got {env.action_space!r}")
    return n_arms, dim


def _check_observation(obs: Any, env: gym.Env, name: str, where: str) -> np.ndarray:
    obs = _array(obs)
    space = env.observation_space
    _require(obs.shape == space.shape, name, f"{where}: observation has shape {obs.shape}, "
             f"observation_space has {space.shape} (n_arms, dim)")
    _require(obs.dtype == space.dtype, name,
             f"{where}: observation dtype {obs.dtype} != observation_space dtype {space.dtype}")
    _require(bool(np.all(np.isfinite(obs))), name, f"{where}: observation has non-finite values")
    _require(space.contains(obs), name, f"{where}: observation lies outside observation_space bounds")
    return obs


def _check_arm_info(info: dict[str, Any], n_arms: int, name: str, where: str) -> tuple[np.ndarray, int]:
    for key in ("expected_rewards", "optimal_action"):
        _require(key in info, name, f"{where}: info must carry {key!r} for the observation it comes with; "
                 f"got keys {sorted(info)}")
    expected = _array(info["expected_rewards"])
    _require(expected.shape == (n_arms,), name, f"{where}: info['expected_rewards'] must have shape ({n_arms},), "
             f"one value per arm (observation row); got {expected.shape}")
    _require(bool(np.all(np.isfinite(expected))), name, f"{where}: info['expected_rewards'] has non-finite values")
    optimal = _array(info["optimal_action"])
    _require(optimal.shape == () and np.issubdtype(optimal.dtype, np.integer), name,
             f"{where}: info['optimal_action'] must be one integer arm index, got {info['optimal_action']!r}")
    optimal = int(optimal)
    _require(0 <= optimal < n_arms and expected[optimal] == expected.max(), name,
             f"{where}: info['optimal_action'] = {optimal} is not an arm with the largest expected reward "
             f"(max {expected.max():.6g} at arm {int(expected.argmax())})")
    return expected, optimal


def _scoring_info(info: dict[str, Any], n_arms: int, name: str, where: str) -> dict[str, np.ndarray]:
    """The Showdown's scoring keys of ``info`` where it carries them: ``optimal_reward`` (one number) and
    ``reward_row`` ``(n_arms,)``, checked."""
    found = {}
    if "optimal_reward" in info:
        optimal = _array(info["optimal_reward"])
        _require(optimal.shape == () and optimal.dtype.kind in "iuf" and bool(np.isfinite(optimal)), name,
                 f"{where}: info['optimal_reward'] must be one finite number, got {info['optimal_reward']!r}")
        found["optimal_reward"] = optimal.astype(np.float64)
    if "reward_row" in info:
        row = _array(info["reward_row"])
        _require(row.shape == (n_arms,) and row.dtype.kind in "iuf" and bool(np.all(np.isfinite(row))), name,
                 f"{where}: info['reward_row'] must hold one finite reward per arm, shape ({n_arms},); got shape "
                 f"{row.shape}, dtype {row.dtype}")
        found["reward_row"] = row.copy()
    return found


def _check_regret(before: dict[str, np.ndarray], action: int, reward: float, regret: float, name: str, where: str,
                  rtol: float, atol: float) -> None:
    """Rule 2's regret (and a Showdown env's reward) of a step, from what the previous info showed."""
    if "reward_row" in before:
        paid = float(before["reward_row"][action])
        _require(np.isclose(reward, paid, rtol=rtol, atol=atol), name,
                 f"{where}: reward {reward:.6g} but the previous info's reward_row[action={action}] = {paid:.6g}")
    if "optimal_reward" in before:
        want = float(before["optimal_reward"]) - reward
        _require(np.isclose(regret, want, rtol=rtol, atol=atol), name,
                 f"{where}: info['regret'] = {regret:.6g} but the previous info's optimal_reward - reward = "
                 f"{want:.6g}")
        return
    expected = before["expected"]
    want = float(expected.max() - expected[action])
    _require(np.isclose(regret, want, rtol=rtol, atol=atol), name,
             f"{where}: info['regret'] = {regret:.6g} but the previous info's expected_rewards give "
             f"max - expected[action={action}] = {want:.6g}")


def _rollout(env: gym.Env, seed: int, actions: np.ndarray, name: str, n_arms: int,
             rtol: float, atol: float) -> list[dict[str, np.ndarray]]:
    """Reset with ``seed``, play ``actions``; check every round; return what each round showed."""
    obs, info = env.reset(seed=seed)
    where = f"reset(seed={seed})"
    rounds = [{"obs": _check_observation(obs, env, name, where).copy(),
               "expected": _check_arm_info(info, n_arms, name, where)[0].copy(),
               **_scoring_info(info, n_arms, name, where)}]
    for t, action in enumerate(actions):
        where = f"step {t} after reset(seed={seed})"
        obs, reward, terminated, truncated, info = env.step(int(action))
        _require(isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_)), name,
                 f"{where}: terminated and truncated must be bools, got {terminated!r}, {truncated!r}")
        _require(np.isfinite(float(reward)), name, f"{where}: reward {reward!r} is not a finite number")
        _require("regret" in info, name, f"{where}: info from step must carry 'regret' of the round just played; "
                 f"got keys {sorted(info)}")
        regret = float(_array(info["regret"]))
        _check_regret(rounds[-1], int(action), float(reward), regret, name, where, rtol, atol)
        obs = _check_observation(obs, env, name, where)
        expected, _ = _check_arm_info(info, n_arms, name, where)
        rounds.append({"obs": obs.copy(), "expected": expected.copy(), **_scoring_info(info, n_arms, name, where),
                       "reward": np.float64(reward), "regret": np.float64(regret)})
        if terminated or truncated:
            break
    return rounds


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray], rtol: float, atol: float) -> str | None:
    """The first quantity that differs between two rounds, or None."""
    for key in a:
        if key not in b or not np.allclose(a[key], b[key], rtol=rtol, atol=atol):
            return key
    return None


def _make_vector_env(env: gym.Env, vector_env: Any, num_envs: int) -> gym.vector.VectorEnv | None:
    if vector_env is None:
        spec = env.spec
        if spec is None or spec.vector_entry_point is None:
            return None
        return gym.make_vec(spec.id, num_envs=num_envs, vectorization_mode="vector_entry_point", **spec.kwargs)
    if isinstance(vector_env, gym.vector.VectorEnv):
        return vector_env
    if callable(vector_env):
        return vector_env(num_envs)
    raise ValueError(f"vector_env must be None, a gymnasium VectorEnv or a callable num_envs -> VectorEnv, "
                     f"got {type(vector_env).__name__}")


def _check_vector_env(env: gym.Env, venv: gym.vector.VectorEnv, singles: list[list[dict]], seed: int,
                      actions: np.ndarray, name: str, rtol: float, atol: float) -> None:
    """Replica ``r`` of ``venv`` reset with ``seed`` must equal the single env reset with ``seed + r``."""
    num_envs = venv.num_envs
    _require(venv.single_observation_space == env.observation_space and venv.single_action_space == env.action_space,
             name, f"vector env's single spaces ({venv.single_observation_space}, {venv.single_action_space}) "
             f"differ from the env's ({env.observation_space}, {env.action_space})")
    obs, info = venv.reset(seed=seed)
    shown = [_array(obs), _array(info["expected_rewards"])]
    n_rounds = min(len(s) for s in singles)
    for t in range(n_rounds):
        for r in range(num_envs):
            got = {"obs": shown[0][r], "expected": shown[1][r]}
            if t > 0:
                got.update(reward=shown[2][r], regret=shown[3][r])
            differs = _same({k: singles[r][t][k] for k in got}, got, rtol, atol)
            _require(differs is None, name,
                     f"vector env replica {r} (reset(seed={seed}) of {num_envs} replicas) differs from the single env "
                     f"reset with seed {seed} + {r} in {differs!r} after {t} steps with the same actions; "
                     f"replica r must reproduce the single env seeded seed + r (within rtol={rtol}, atol={atol})")
        if t + 1 < n_rounds:
            obs, reward, _, _, info = venv.step(np.asarray(actions[:, t], dtype=np.int64))
            shown = [_array(obs), _array(info["expected_rewards"]), _array(reward), _array(info["regret"])]


def check_bandit_env(
    env: gym.Env,
    *,
    vector_env: gym.vector.VectorEnv | Callable[[int], gym.vector.VectorEnv] | None = None,
    seed: int = 0,
    n_steps: int = 16,
    num_envs: int = 3,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> None:
    """Check that ``env`` keeps the bandit-env contract; raise :class:`BanditEnvCheckError` if not.

    Checked, in this order:

    1. ``observation_space`` is a ``Box`` of shape ``(n_arms, dim)`` (one row per arm) and
       ``action_space`` is ``Discrete(n_arms)``; observations match the space (shape, dtype,
       bounds, finite).
    2. ``info`` of ``reset`` and ``step`` carries ``expected_rewards`` ``(n_arms,)`` and
       ``optimal_action`` (an arm with the largest expected reward) for the observation it
       comes with; ``info`` of ``step`` carries ``regret`` = max of the previous
       ``expected_rewards`` minus that of the chosen arm. An env that scores regret otherwise
       says so in ``info`` (the Showdown's envs, :mod:`bandit_gym.showdown`): with
       ``optimal_reward`` (one number) ``regret`` is the previous ``optimal_reward`` minus the
       reward paid, and with ``reward_row`` ``(n_arms,)`` (what every arm pays in the round)
       the reward paid is the previous ``reward_row[action]``.
    3. Seeding is deterministic: two rollouts with the same seed and actions are identical;
       a different seed gives a different rollout.
    4. The native batched env (``vector_env``, or the spec's ``vector_entry_point``) reset with
       ``seed`` reproduces, replica ``r`` for replica ``r``, the single env reset with
       ``seed + r`` under the same actions (within ``rtol`` / ``atol``).

    The check resets and steps ``env`` (and a ``vector_env`` given as an instance); it closes
    a batched env that it made itself.

    Args:
        env: The env to check, as a user makes it (e.g. ``gym.make(id, **kwargs)``).
        vector_env: Its batched env, a callable ``num_envs -> VectorEnv`` that makes it, or None
            to make it from ``env.spec`` when the spec has a ``vector_entry_point`` (skipped otherwise).
        seed: The first seed used.
        n_steps: Rounds played per rollout (fewer if the episode ends first).
        num_envs: Replicas of the batched env compared with single envs.
        rtol: Relative tolerance for floats compared across single and batched runs and for regret.
        atol: Absolute tolerance for the same.
    """
    if not isinstance(env, gym.Env):
        raise TypeError(f"env must be a gymnasium.Env (one bandit, not a vector env), got {type(env).__name__}")
    seed, n_steps = check_int("seed", seed, minimum=0), check_int("n_steps", n_steps)
    num_envs = check_int("num_envs", num_envs, minimum=2)
    rtol, atol = check_float("rtol", rtol, minimum=0), check_float("atol", atol, minimum=0)
    name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
    n_arms, _ = _check_spaces(env, name)
    venv = _make_vector_env(env, vector_env, num_envs)
    try:
        replicas = venv.num_envs if venv is not None else 1
        actions = np.random.default_rng(seed).integers(0, n_arms, size=(replicas, n_steps))  # (replicas, rounds)

        first = _rollout(env, seed, actions[0], name, n_arms, rtol, atol)
        again = _rollout(env, seed, actions[0], name, n_arms, rtol, atol)
        for t, (a, b) in enumerate(zip(first, again, strict=False)):  # lengths checked below
            differs = _same(a, b, rtol=0.0, atol=0.0)
            _require(differs is None and len(first) == len(again), name,
                     f"seeding is not deterministic: two rollouts after reset(seed={seed}) with the same actions "
                     f"differ in {differs!r} at round {t}; draw every random number from the seed "
                     "(self.np_random or a seeded stream)")
        other = _rollout(env, seed + 1, actions[0], name, n_arms, rtol, atol)
        _require(any(_same(a, b, 0.0, 0.0) is not None for a, b in zip(first, other, strict=False)), name,
                 f"reset(seed={seed}) and reset(seed={seed + 1}) give the same rollout: the env ignores its seed")

        if venv is not None:
            singles = [_rollout(env, seed + r, actions[r], name, n_arms, rtol, atol) for r in range(replicas)]
            _check_vector_env(env, venv, singles, seed, actions, name, rtol, atol)
    finally:
        if venv is not None and not isinstance(vector_env, gym.vector.VectorEnv):
            venv.close()  # made here, closed here
