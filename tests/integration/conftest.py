"""The real-data cache for the integration tests (the env ids by family are in bandit_ids.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"  # the variable of tests/datasets/conftest.py and the README


def shared_cache_source() -> Path:
    return Path(os.environ.get(SHARED_CACHE_ENV_VAR, REPO.parent / "shared" / "datasets" / "openml_cache"))


@pytest.fixture(scope="session")
def openml_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable copy of the shared real OpenML cache (read-only at its source); skip if absent."""
    source = shared_cache_source()
    if not (source / "org" / "openml" / "www" / "datasets").is_dir():
        pytest.skip(f"no shared OpenML cache at {source} (set {SHARED_CACHE_ENV_VAR} to point at one)")
    target = tmp_path_factory.mktemp("openml_real") / "openml_cache"
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target
