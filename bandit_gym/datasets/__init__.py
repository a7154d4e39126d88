"""Classification data as bandits: your own ``X, y``, any OpenML id, and the LMC-TS paper's datasets (Section 5.2).

One env family (:class:`DatasetBanditEnv`): ``ClassificationBandit-v0`` takes your data,
``OpenMLBandit-v0`` an OpenML id, and the named ids are presets of it (UCI data through
OpenML, CIFAR10 through torchvision)::

    import gymnasium as gym
    import bandit_gym

    env = gym.make("ClassificationBandit-v0", X=frame, y="label")       # a DataFrame and its label column
    env = gym.make("OpenMLBandit-v0", data_id=1120, cache_dir="/data/openml_cache")
    env = gym.make("Shuttle-v0", cache_dir="/data/openml_cache")
    venv = gym.make_vec("MagicTelescope-v0", num_envs=10, vectorization_mode="vector_entry_point")

See ``docs/datasets.md`` for the table of datasets, the preprocessing and offline use.
The envs and loaders need the ``datasets`` extra (``pip install "contextual-bandit-gym[datasets]"``);
importing this package does not.
"""

from __future__ import annotations

from bandit_gym.datasets.envs import DatasetBanditEnv, DatasetBanditSimulator, DatasetBanditVectorEnv
from bandit_gym.datasets.errors import (
    DatasetFileError,
    DatasetIntegrityError,
    DatasetNotFoundError,
    MissingDependencyError,
)
from bandit_gym.datasets.loaders import (
    SPECS,
    LoadedDataset,
    download_dataset,
    load_dataset,
    load_openml,
    resolve_cache_dir,
)
from bandit_gym.datasets.user_data import prepare_dataset

#: Registered ids of the named dataset presets (they need their data on disk: see ``bandit-gym download``).
DATASET_ENV_IDS = ("Shuttle-v0", "MagicTelescope-v0", "Mushroom-v0", "Covertype-v0", "CIFAR10-v0")
#: Registered ids of the same family that take their data as keywords of ``gym.make``.
USER_DATA_ENV_IDS = ("ClassificationBandit-v0", "OpenMLBandit-v0")

__all__ = [
    "DATASET_ENV_IDS",
    "SPECS",
    "USER_DATA_ENV_IDS",
    "DatasetBanditEnv",
    "DatasetBanditSimulator",
    "DatasetBanditVectorEnv",
    "DatasetFileError",
    "DatasetIntegrityError",
    "DatasetNotFoundError",
    "LoadedDataset",
    "MissingDependencyError",
    "download_dataset",
    "load_dataset",
    "load_openml",
    "prepare_dataset",
    "resolve_cache_dir",
]
