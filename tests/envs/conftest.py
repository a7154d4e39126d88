"""``make_env`` for every registered id: dataset envs read a writable copy of the shared real-data cache.

The real OpenML cache (Shuttle, MagicTelescope, Mushroom) is found as in ``tests/datasets/conftest.py``:
``$BANDIT_GYM_TEST_OPENML_CACHE``, else ``../shared/datasets/openml_cache`` beside the clone. A dataset
env whose data is not there (Covertype, CIFAR10) or whose extra is not installed is skipped, naming why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest

import bandit_gym  # noqa: F401  (registers the envs)

SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"
REPO = Path(__file__).resolve().parents[2]
#: Small sizes that keep every test fast; dataset envs take a short horizon only.
SMALL_SYNTHETIC = {"n_arms": 6, "dim": 4, "horizon": 40}


def is_dataset_env(env_id: str) -> bool:
    return "dataset" in gym.spec(env_id).kwargs


@pytest.fixture(scope="session")
def data_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    source = Path(os.environ.get(SHARED_CACHE_ENV_VAR, REPO.parent / "shared" / "datasets" / "openml_cache"))
    if not (source / "org" / "openml" / "www" / "datasets").is_dir():
        return None
    target = tmp_path_factory.mktemp("openml_shared") / "openml_cache"
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target


def _dataset_kwargs(env_id: str, data_cache: Path | None, small: bool) -> dict:
    if data_cache is None:
        pytest.skip(f"{env_id}: no shared OpenML cache (set {SHARED_CACHE_ENV_VAR})")
    try:
        from bandit_gym.datasets import DatasetNotFoundError, load_dataset
    except ImportError as exc:  # the datasets extra is missing
        pytest.skip(f"{env_id}: {exc}")
    try:
        load_dataset(gym.spec(env_id).kwargs["dataset"], cache_dir=data_cache)
    except (DatasetNotFoundError, ModuleNotFoundError) as exc:
        pytest.skip(f"{env_id}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return {"cache_dir": data_cache, **({"horizon": 40} if small else {})}


@pytest.fixture
def make_env(data_cache) -> Callable[..., gym.Env]:
    """``make_env(env_id, num_envs=None, small=True, **kwargs)``: ``gym.make`` (or the native ``make_vec``)."""

    def make(env_id: str, num_envs: int | None = None, small: bool = True, **kwargs) -> gym.Env:
        if is_dataset_env(env_id):
            kwargs = {**_dataset_kwargs(env_id, data_cache, small), **kwargs}
        elif small:
            kwargs = {**SMALL_SYNTHETIC, **kwargs}
        if num_envs is None:
            return gym.make(env_id, **kwargs)
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)

    return make

