"""Dataset env inputs: each mistake is one short line naming the argument, the value and what is accepted."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.datasets import DATASET_ENV_IDS, USER_DATA_ENV_IDS, load_openml
from bandit_gym.datasets import envs as dataset_envs
from bandit_gym.datasets.loaders import is_cached

X = np.random.default_rng(0).normal(size=(200, 3))  # printed whole, it would run to thousands of characters
Y = np.arange(200) % 3


def own_data(env_id: str) -> dict:
    """The data keywords of ``env_id`` that need no file: the presets name theirs, OpenML an id, X, y arrays."""
    return {"ClassificationBandit-v0": {"X": X, "y": Y}, "OpenMLBandit-v0": {"data_id": 1120}}.get(env_id, {})


def one_line(excinfo: pytest.ExceptionInfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and len(message) < 300, message
    return message


BAD_PATHS = [3, 3.5, True, b"/tmp/openml", ["/tmp/openml"], ("/tmp",), {"dir": "/tmp"}, "", np.zeros(3), object()]


@pytest.mark.parametrize("cache_dir", BAD_PATHS, ids=lambda v: type(v).__name__ + repr(v)[:12])
@pytest.mark.parametrize("env_id", DATASET_ENV_IDS + USER_DATA_ENV_IDS)
def test_dataset_env_names_a_cache_dir_that_is_not_a_path(env_id, cache_dir):
    with pytest.raises(ValueError, match=r"^cache_dir must be a path \(a non-empty str or an os.PathLike such as "
                                         r"pathlib.Path\) or None, got .* of type ") as excinfo:
        gym.make(env_id, cache_dir=cache_dir, **own_data(env_id))
    assert type(cache_dir).__name__ in one_line(excinfo)


@pytest.mark.parametrize("cache_dir", [3, b"/tmp"])
def test_loaders_name_a_cache_dir_that_is_not_a_path(cache_dir):
    for call in (lambda: load_openml(1120, cache_dir=cache_dir), lambda: is_cached("shuttle", cache_dir)):
        with pytest.raises(ValueError, match="cache_dir must be a path"):
            call()


def test_dataset_env_takes_a_pathlib_cache_dir(tmp_path):
    assert not is_cached("shuttle", Path(tmp_path))  # accepted, and an empty directory holds nothing


@pytest.mark.parametrize(
    ("feature_names", "match"),
    [
        (3, r"feature_names must be a list of 3 column names \(str\), got 3 of type int"),
        ("abc", r"feature_names must be a list of 3 column names \(str\), got 'abc' of type str"),
        ([1, 2, 3], r"feature_names must hold str names, got 1 of type int at index 0"),
        (["a", "b", "a"], r"feature_names must be distinct, got 'a' at indices 0 and 2"),
        (["a", "b"], r"feature_names has 2 names for the 3 columns of X"),
        (np.array([["a", "b", "c"]]), r"feature_names must be a list of 3 column names \(str\), got ndarray of "
                                      r"shape \(1, 3\)"),
    ],
)
def test_feature_names_that_are_not_names_give_one_short_line(feature_names, match):
    with pytest.raises(ValueError, match=match) as excinfo:
        gym.make("ClassificationBandit-v0", X=X, y=Y, feature_names=feature_names)
    assert "array(" not in one_line(excinfo)  # X and y stay out of the message


def test_feature_names_accepts_a_bunch_style_array_of_names():
    env = gym.make("ClassificationBandit-v0", X=X, y=Y, feature_names=np.array(["a", "b", "c"]))
    assert env.unwrapped.sim.data.feature_names == ("a", "b", "c")


@pytest.mark.parametrize("missing", [0, {}, "", False])
@pytest.mark.parametrize("env_id", ["ClassificationBandit-v0", "Shuttle-v0"])
def test_a_falsy_missing_is_refused_not_taken_as_the_default(env_id, missing):
    with pytest.raises(ValueError, match=rf"missing must be one of \('error', 'impute', 'drop'\), got {missing!r}"):
        gym.make(env_id, missing=missing, **own_data(env_id))


def test_ten_thousand_classes_are_refused_with_the_observation_size():
    classes, features = 10_000, 2
    x = np.random.default_rng(1).normal(size=(classes, features))
    observation = 4 * classes * classes * features  # bytes of one (K, K d) float32 observation
    assert observation > dataset_envs.MAX_OBSERVATION_BYTES
    with pytest.raises(MemoryError, match=rf"10000 classes x 2 features make each observation \(10000, 20000\) "
                                          rf"float32, {observation / 2**20:,.0f} MiB, above the limit of") as excinfo:
        gym.make("ClassificationBandit-v0", X=x, y=np.arange(classes))
    assert "MAX_OBSERVATION_BYTES" in one_line(excinfo)


def test_observation_limit_is_the_module_constant(monkeypatch):
    observation = 4 * 3 * 3 * 3  # 3 classes of 3 features
    gym.make("ClassificationBandit-v0", X=X, y=Y)
    monkeypatch.setattr(dataset_envs, "MAX_OBSERVATION_BYTES", observation)  # at the limit: accepted
    gym.make("ClassificationBandit-v0", X=X, y=Y)
    monkeypatch.setattr(dataset_envs, "MAX_OBSERVATION_BYTES", observation - 1)
    with pytest.raises(MemoryError, match=r"make each observation \(3, 9\) float32"):
        gym.make("ClassificationBandit-v0", X=X, y=Y)
