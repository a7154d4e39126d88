"""Shared fixtures of the experiment-layer tests."""

from __future__ import annotations

import textwrap

import pytest


@pytest.fixture
def write_config(tmp_path):
    """``write_config(text, name)``: a config file ``tmp_path / name`` holding ``text`` (dedented)."""
    def write(text: str, name: str):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path
    return write
