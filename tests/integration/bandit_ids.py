"""Env ids of the tests, by family, and the data keywords that make each dataset id.

Imported by the integration tests and by ``tests/envs/conftest.py`` (``tests/integration`` is on
pytest's ``pythonpath``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from pathlib import Path

import gymnasium as gym
import numpy as np

import bandit_gym

#: The synthetic envs: made without data.
SYNTHETIC_IDS = [i for i in bandit_gym.ENV_IDS if gym.spec(i).entry_point.startswith("bandit_gym.synthetic")]
#: The Showdown's synthetic envs (bandit_gym.showdown): made without data, but with their own keywords and spaces.
SHOWDOWN_IDS = [i for i in bandit_gym.ENV_IDS if gym.spec(i).entry_point.startswith("bandit_gym.showdown")]
#: The dataset envs: the named presets read an OpenML cache; the two below take their data in gym.make.
DATASET_IDS = [i for i in bandit_gym.ENV_IDS if gym.spec(i).entry_point.startswith("bandit_gym.datasets")]
#: The dataset family's ids whose data are given as keywords (X=, y= or data_id=), not preset.
USER_DATA_IDS = [i for i in DATASET_IDS if gym.spec(i).kwargs.get("dataset") is None]
#: What OpenMLBandit-v0 reads in the tests: MagicTelescope's OpenML id, in the shared real cache.
OPENML_TEST_ID = 1120
#: Rows of the made-up data (its default horizon; a pickle of the env holds them, so they stay few).
MADE_UP_ROWS = 300


@functools.cache
def made_up_frame(n_rows: int = MADE_UP_ROWS, seed: int = 0):
    """A small made-up labelled DataFrame: two numeric columns, one text column and a ``label`` column.

    Three classes (``"a"``, ``"b"``, ``"c"``) in turn, so every class is present; the numeric columns
    are shifted by the class, so an agent can learn it. Cached: tests must not modify it.
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    classes = np.arange(n_rows) % 3  # (N,)
    return pd.DataFrame({
        "width": rng.normal(size=n_rows) + classes,
        "height": rng.normal(size=n_rows) - classes,
        "colour": np.array(["red", "green", "blue"])[rng.integers(0, 3, size=n_rows)],
        "label": np.array(["a", "b", "c"])[classes],
    })


def accepted(env_id: str, keywords: dict) -> dict:
    """The entries of ``keywords`` that ``env_id``'s simulator takes (the Wheel bandit has no ``n_arms`` or ``dim``)."""
    module, name = gym.spec(env_id).entry_point.split(":")
    simulator = getattr(importlib.import_module(module), name).simulator_class
    return {k: v for k, v in keywords.items() if k in inspect.signature(simulator.__init__).parameters}


def data_kwargs(env_id: str, openml_cache: Path | None) -> dict | None:
    """The keywords that give ``env_id`` its data; None if it needs the OpenML cache and there is none.

    ClassificationBandit-v0: the made-up frame with ``y="label"``; OpenMLBandit-v0: MagicTelescope
    by id; a named preset: the cache directory. Synthetic and Showdown synthetic ids need none (``{}``).
    """
    if env_id == "ClassificationBandit-v0":
        return {"X": made_up_frame(), "y": "label"}
    if env_id in SYNTHETIC_IDS or env_id in SHOWDOWN_IDS:
        return {}
    if openml_cache is None:
        return None
    if env_id == "OpenMLBandit-v0":
        return {"data_id": OPENML_TEST_ID, "cache_dir": str(openml_cache)}
    return {"cache_dir": str(openml_cache)}
