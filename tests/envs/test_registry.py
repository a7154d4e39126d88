"""envs_registry.yaml: the single source of ids and its validation (the installed wheel: tests/test_packaging.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import bandit_gym
from bandit_gym.registration import RegistryError, load_registry, registry_path

REPO = Path(__file__).resolve().parents[2]


def test_package_reads_the_repository_root_registry():
    assert registry_path().resolve() == (REPO / "envs_registry.yaml").resolve()
    ids = list(yaml.safe_load((REPO / "envs_registry.yaml").read_text()))
    assert list(bandit_gym.ENV_IDS) == ids
    for env_id in ids:
        assert env_id in gym.registry


def test_registry_defaults_reach_the_env():
    entry = load_registry()["LinearBandit-v0"]
    env = gym.make("LinearBandit-v0")
    assert env.unwrapped.sim.noise_std == entry["kwargs"]["noise_std"]
    assert env.unwrapped.horizon == entry["kwargs"]["horizon"] == env.spec.max_episode_steps


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Foo-v0: [1, 2]\n", "entry 'Foo-v0': expected a mapping"),
        ("Foo-v0: {kwargs: {}}\n", "entry 'Foo-v0': 'entry_point' is required"),
        ("Foo-v0: {entry_point: 'no colon here'}\n", "entry 'Foo-v0': entry_point must look like"),
        ("Foo-v0: {entry_point: 'a.b:C', colour: red}\n", r"entry 'Foo-v0': unknown keys \['colour'\]"),
        ("Foo-v0: {entry_point: 'a.b:C', kwargs: [1]}\n", "entry 'Foo-v0': kwargs must be a mapping"),
        ("Foo-v0: {entry_point: 'a.b:C', max_episode_steps: 9}\n",
         "entry 'Foo-v0': max_episode_steps is not accepted: the env truncates itself at its horizon"),
        ("Foo: {entry_point: 'a.b:C'}\n", "entry 'Foo': the id must look like"),
        ("Foo-v0: {entry_point: 'a.b:C'\n", "cannot read the env registry"),
        ("", "expected a mapping of env ids"),
    ],
)
def test_malformed_registry_names_file_and_entry(tmp_path, text, match):
    path = tmp_path / "envs_registry.yaml"
    path.write_text(text)
    with pytest.raises(RegistryError, match=match) as excinfo:
        load_registry(path)
    assert str(path) in str(excinfo.value)


def _python_with_package_copy(tmp_path: Path, registry_text: str | None) -> subprocess.CompletedProcess:
    """Import a copy of bandit_gym whose registry file is replaced, in a fresh interpreter."""
    package = tmp_path / "bandit_gym"
    shutil.copytree(REPO / "bandit_gym", package, symlinks=False, ignore=shutil.ignore_patterns("__pycache__"))
    if registry_text is not None:
        (package / "envs_registry.yaml").write_text(registry_text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = "import bandit_gym; print(bandit_gym.__file__)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_malformed_entry_fails_at_import(tmp_path):
    ok = _python_with_package_copy(tmp_path / "good", None)
    assert ok.returncode == 0 and str(tmp_path / "good") in ok.stdout  # the copy, not the checkout, is imported
    bad = _python_with_package_copy(tmp_path / "bad", "LinearBandit-v0: {entry_point: 'nope'}\n")
    assert bad.returncode != 0
    assert "envs_registry.yaml: entry 'LinearBandit-v0': entry_point must look like" in bad.stderr



def _assert_recreates(envs) -> gym.vector.VectorEnv:
    """Gymnasium's ``test_make_vec_with_spec``: ``gym.make_vec(envs.spec)`` makes an equal env with an equal spec."""
    recreated = gym.make_vec(envs.spec)
    assert envs.spec == recreated.spec
    assert envs.num_envs == recreated.num_envs
    assert type(envs) is type(recreated)
    assert envs.observation_space == recreated.observation_space
    assert envs.single_observation_space == recreated.single_observation_space
    assert envs.action_space == recreated.action_space
    assert envs.single_action_space == recreated.single_action_space
    assert envs.render_mode == recreated.render_mode
    envs.close()
    recreated.close()
    return recreated


@pytest.mark.parametrize("env_id", bandit_gym.ENV_IDS)
def test_make_vec_of_a_made_spec_recreates_the_spec(make_env, env_id):
    envs = make_env(env_id, num_envs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "episodes end before horizon": the horizon governs
        recreated = _assert_recreates(envs)
    assert recreated.spec.max_episode_steps == recreated.episode_steps == recreated.horizon


@pytest.mark.parametrize("how", ["sync", "render", "cut", "longer"])
def test_make_vec_of_a_made_spec_recreates_it_with_gymnasium_options(how):
    small = {"n_arms": 3, "dim": 2, "horizon": 12}
    if how == "sync":
        envs = gym.make_vec("LinearBandit-v0", num_envs=3, vectorization_mode="sync", **small)
    elif how == "render":
        envs = gym.make_vec("LinearBandit-v0", vectorization_mode="vector_entry_point", render_mode="ansi", **small)
    elif how == "longer":  # a max_episode_steps past the horizon cuts nothing: the spec says the horizon
        envs = gym.make_vec("LinearBandit-v0", vectorization_mode="vector_entry_point", max_episode_steps=50, **small)
        assert envs.spec.max_episode_steps == 12 and "max_episode_steps" not in envs.spec.kwargs
    else:  # a max_episode_steps before the horizon cuts episodes, and the recreated env's too
        with pytest.warns(UserWarning, match="max_episode_steps=5 rounds, before horizon=12"):
            envs = gym.make_vec("LinearBandit-v0", vectorization_mode="vector_entry_point", max_episode_steps=5,
                                **small)
        assert envs.spec.max_episode_steps == envs.spec.kwargs["max_episode_steps"] == 5
        with pytest.warns(UserWarning, match="max_episode_steps=5 rounds"):
            _assert_recreates(envs)
        return
    _assert_recreates(envs)


def test_make_vec_of_a_made_spec_keeps_a_horizon_above_the_registered_default():
    envs = gym.make_vec("LinearBandit-v0", vectorization_mode="vector_entry_point", n_arms=2, dim=1, horizon=10_003)
    recreated = gym.make_vec(envs.spec)
    assert recreated.unwrapped.episode_steps == recreated.unwrapped.horizon == 10_003
