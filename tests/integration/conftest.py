"""The real-data cache for the integration tests (the env ids by family are in bandit_ids.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def openml_cache(real_openml_cache: Path) -> Path:
    """The writable copy of the shared real OpenML cache (``tests/conftest.py``); skip if absent."""
    return real_openml_cache
