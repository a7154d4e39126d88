"""Every agent test runs twice: with the compiled kernels (the default) and with
``BANDIT_GYM_KERNELS=0`` (plain torch), so both paths meet the same expectations."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, params=["kernels-on", "kernels-off"])
def kernels(request, monkeypatch):
    """Switch the agents' kernels on or off for one test (the variable is read at each call)."""
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1" if request.param == "kernels-on" else "0")
    return request.param
