"""``make_env`` for every registered id: dataset envs get their data keywords here.

The named presets and ``OpenMLBandit-v0`` (MagicTelescope by id) read the session's writable copy
of the shared real OpenML cache (``real_openml_cache`` in ``tests/conftest.py``); a preset whose
data is not there (Covertype, CIFAR10) or whose extra is not installed is skipped, naming why.
``ClassificationBandit-v0`` plays a made-up DataFrame (``tests/integration/bandit_ids.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest
from bandit_ids import accepted, data_kwargs

import bandit_gym  # noqa: F401  (registers the envs)

SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"
#: Small sizes that keep every test fast; dataset envs take a short horizon only.
SMALL_SYNTHETIC = {"n_arms": 6, "dim": 4, "horizon": 40}


def is_dataset_env(env_id: str) -> bool:
    return "dataset" in gym.spec(env_id).kwargs


@pytest.fixture(scope="session")
def data_cache(request: pytest.FixtureRequest) -> Path | None:
    """The shared real cache's session copy, or None where there is none (its tests then skip)."""
    try:
        return request.getfixturevalue("real_openml_cache")
    except pytest.skip.Exception:
        return None


def _dataset_kwargs(env_id: str, data_cache: Path | None, small: bool) -> dict:
    kwargs = data_kwargs(env_id, data_cache)
    if kwargs is None:
        pytest.skip(f"{env_id}: no shared OpenML cache (set {SHARED_CACHE_ENV_VAR})")
    try:
        from bandit_gym.datasets import DatasetNotFoundError, load_dataset
    except ImportError as exc:  # the datasets extra is missing
        pytest.skip(f"{env_id}: {exc}")
    preset = gym.spec(env_id).kwargs["dataset"]
    if preset is not None:
        try:
            load_dataset(preset, cache_dir=data_cache)
        except (DatasetNotFoundError, ModuleNotFoundError) as exc:
            pytest.skip(f"{env_id}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return {**kwargs, **({"horizon": 40} if small else {})}


@pytest.fixture
def make_env(data_cache) -> Callable[..., gym.Env]:
    """``make_env(env_id, num_envs=None, small=True, **kwargs)``: ``gym.make`` (or the native ``make_vec``)."""

    def make(env_id: str, num_envs: int | None = None, small: bool = True, **kwargs) -> gym.Env:
        if is_dataset_env(env_id):
            kwargs = {**_dataset_kwargs(env_id, data_cache, small), **kwargs}
        elif small:
            kwargs = {**accepted(env_id, SMALL_SYNTHETIC), **kwargs}
        if num_envs is None:
            return gym.make(env_id, **kwargs)
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)

    return make
