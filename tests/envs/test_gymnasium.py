"""Gymnasium behaviour users rely on, for every registered id (``bandit_gym.ENV_IDS``).

Dataset ids run on the shared real-data cache when it is there (see ``conftest.py``) and are skipped
otherwise; checks that need no data (keywords, specs) run for them regardless.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from bandit_ids import SYNTHETIC_IDS
from gymnasium.utils.env_checker import check_env

import bandit_gym

ALL_IDS = list(bandit_gym.ENV_IDS)


def play(env: gym.Env, steps: int) -> list:
    out = []
    for t in range(steps):
        obs, reward, terminated, truncated, info = env.step(t % env.action_space.n)
        out += [obs, reward, terminated, truncated, info["regret"], info["expected_rewards"], info["optimal_action"]]
    return out


def rollout(env: gym.Env, seed: int, steps: int) -> list:
    obs, info = env.reset(seed=seed)
    return [obs, info["expected_rewards"], info["optimal_action"], *play(env, steps)]


def assert_equal_rollouts(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_env_passes_check_env(make_env, env_id):
    env = make_env(env_id, render_mode="ansi")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # passes with no warning, rendering included
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_seeded_rollout_is_deterministic(make_env, env_id):
    assert_equal_rollouts(rollout(make_env(env_id), seed=7, steps=30), rollout(make_env(env_id), seed=7, steps=30))


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_env_pickled_mid_episode_continues_the_same(make_env, env_id):
    env = make_env(env_id)
    env.reset(seed=5)
    for t in range(11):  # mid-chunk for the synthetic envs (8-round chunks at most)
        env.step(t % env.action_space.n)
    clone = pickle.loads(pickle.dumps(env))
    assert_equal_rollouts(play(env, 20), play(clone, 20))


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_render_ansi_shows_round_expected_rewards_and_last_choice(make_env, env_id):
    env = make_env(env_id, render_mode="ansi")
    assert env.render_mode == "ansi"
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(1)
    text = env.render()
    assert "round 1/" in text and "last choice: 1" in text
    assert " ".join(f"{v:.3f}" for v in info["expected_rewards"]) in text
    quiet = make_env(env_id, render_mode=None)
    quiet.reset(seed=0)
    assert quiet.render() is None


@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")  # Gymnasium's own warning, then ours
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_unsupported_render_mode_is_refused_naming_the_modes(env_id):
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['ansi'\], got 'rgb_array'"):
        gym.make(env_id, render_mode="rgb_array")


@pytest.mark.parametrize("vector", [False, True], ids=["single", "vector"])
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_unknown_keyword_names_the_env_id_the_keyword_and_the_accepted_ones(env_id, vector):
    with pytest.raises(TypeError) as excinfo:
        if vector:
            gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", n_arm=10)
        else:
            gym.make(env_id, n_arm=10)
    message = str(excinfo.value)
    assert env_id in message and "'n_arm'" in message and "accepted keywords: " in message
    assert "horizon" in message  # every env accepts it
    if env_id in SYNTHETIC_IDS and "n_arms" in gym.spec(env_id).kwargs:
        assert "did you mean 'n_arms'?" in message


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_seeds_follow_gymnasium_rules(make_env, env_id):
    env = make_env(env_id)
    big, _ = env.reset(seed=2**64)  # any non-negative integer, however large
    again, _ = make_env(env_id).reset(seed=2**64)
    zero, _ = env.reset(seed=0)
    np.testing.assert_array_equal(big, again)
    assert not np.array_equal(big, zero)  # 2**64 is not folded onto 0
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match=f"seed must be a non-negative integer, got {bad!r}"):
            env.reset(seed=bad)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_spec_declares_the_horizon_as_max_episode_steps(make_env, env_id):
    assert gym.spec(env_id).max_episode_steps is None  # no registered TimeLimit to cut a larger horizon
    env = make_env(env_id, small=False)
    assert not isinstance(env, gym.wrappers.TimeLimit)
    assert env.spec.max_episode_steps == env.unwrapped.horizon
    vector = make_env(env_id, num_envs=2, small=False)
    assert vector.spec.max_episode_steps == vector.unwrapped.horizon == env.unwrapped.horizon
    # Wrappers that need the episode length accept the env.
    wrapped = gym.wrappers.TimeAwareObservation(make_env(env_id))
    obs, _ = wrapped.reset(seed=0)
    assert wrapped.observation_space.contains(obs)


def _rounds_until_truncated(env, limit: int) -> int:
    env.reset(seed=0)
    for t in range(1, limit + 1):
        truncated = env.step(np.zeros(env.num_envs, np.int64) if hasattr(env, "num_envs") else 0)[3]
        if np.all(truncated):
            return t
    return limit + 1


@pytest.mark.parametrize("how", ["make", "sync", "vector_entry_point"])
def test_a_horizon_above_the_registered_default_governs(how):
    # The registered default is 10,000 rounds; Gymnasium's TimeLimit used to cut a larger horizon there.
    horizon, small = 10_003, {"n_arms": 2, "dim": 1}
    if how == "make":
        env = gym.make("LinearBandit-v0", horizon=horizon, **small)
    else:
        env = gym.make_vec("LinearBandit-v0", num_envs=1, vectorization_mode=how, horizon=horizon, **small)
    assert env.spec.max_episode_steps == (None if how == "sync" else horizon)  # SyncVectorEnv's own spec
    assert _rounds_until_truncated(env, horizon) == horizon
    # Asking for a TimeLimit still gets one, and the spec says so.
    short = gym.make("LinearBandit-v0", horizon=horizon, max_episode_steps=7, **small)
    assert short.spec.max_episode_steps == 7 and _rounds_until_truncated(short, 10) == 7


def test_huge_env_is_refused_up_front_with_a_memory_estimate():
    with pytest.raises(MemoryError, match=r"1000000 arms x dim 10000 needs about [\d,.]+ GiB of memory; this machine"):
        gym.make("LinearBandit-v0", n_arms=10**6, dim=10**4)


def test_options_in_single_env_reset_are_refused_clearly():
    env = gym.make("LinearBandit-v0")
    env.reset(seed=0, options={})  # empty options are no options
    with pytest.raises(ValueError, match=r"options are not supported .* got \{'difficulty': 2\}"):
        env.reset(seed=0, options={"difficulty": 2})


@pytest.mark.parametrize("kernels", ["1", "0"], ids=["kernels-on", "kernels-off"])
def test_async_vector_env_after_the_parent_used_torch_threads_works_or_says_what_to_do(make_env, data_cache, kernels):
    # Forked workers hang in a multi-threaded torch op if the parent had started torch's OpenMP
    # threads. The parent here starts them (a large exp), steps an env, then forks workers with
    # Gymnasium's default start method. Every env must work: in such a child reset and step run on one
    # torch thread whatever threads are chosen (bandit_gym/threads.py; tests/integration/test_vector_api.py).
    # A subprocess with a timeout turns a hang into a failure.
    runnable = []
    for env_id in ALL_IDS:
        try:
            make_env(env_id)
            runnable.append(env_id)
        except pytest.skip.Exception:
            continue
    code = textwrap.dedent(f"""
        import gymnasium as gym, numpy as np, torch, bandit_gym
        from bandit_ids import data_kwargs                        # each id's data keywords, as in conftest.py
        torch.randn(2**20).exp()                                  # torch's intra-op threads now exist
        for env_id in {runnable!r}:
            kwargs = data_kwargs(env_id, {str(data_cache) if data_cache else None!r})
            gym.make(env_id, **kwargs).reset(seed=0)
            venv = gym.make_vec(env_id, num_envs=2, vectorization_mode="async", **kwargs)
            try:
                venv.reset(seed=0)
                for _ in range(10):
                    venv.step(np.array([0, 1]))
                print(env_id, "ok")
            except RuntimeError as exc:
                print(env_id, "spawn" if "'spawn'" in str(exc) else repr(exc))
            venv.close()
    """)
    helpers = str(Path(__file__).resolve().parents[1] / "integration")  # bandit_ids.py
    environment = {**os.environ, "BANDIT_GYM_KERNELS": kernels,
                   "PYTHONPATH": os.pathsep.join(filter(None, [helpers, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environment)
    assert out.returncode == 0, out.stderr
    expected = [f"{env_id} ok" for env_id in runnable]
    assert out.stdout.splitlines() == expected


def test_a_forked_worker_of_a_threaded_parent_runs_one_thread_whatever_is_chosen():
    # BANDIT_GYM_THREADS=torch keeps torch's own threads (2 or more) in the parent; in a child forked after
    # the parent started them a multi-threaded torch op would hang, so there the policy runs one thread. With
    # kernels off, LinearBandit-v0 at 2 replicas draws its arms with torch's sin and cos on 4,000 elements, which
    # torch splits across its threads. A subprocess with a timeout turns a hang into a failure.
    code = textwrap.dedent("""
        import gymnasium as gym, numpy as np, torch, bandit_gym
        from bandit_gym import threads
        torch.set_num_threads(2)
        torch.randn(2**20).exp()                                  # torch's intra-op threads now exist
        venv = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="async",
                            vector_kwargs={"context": "fork"})
        venv.reset(seed=0)
        for _ in range(20):
            venv.step(np.array([0, 1]))
        venv.close()
        with threads.policy():
            print("parent", torch.get_num_threads())
    """)
    environment = {**os.environ, "BANDIT_GYM_KERNELS": "0", "BANDIT_GYM_THREADS": "torch"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["parent 2"]  # the parent keeps torch's threads: "torch" chosen
