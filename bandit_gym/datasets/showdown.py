"""The Showdown's real-data bandits: Mushroom, Statlog and Covertype as envs; loaders of its other files.

Faithful to ``deep_contextual_bandits``' ``data_sampler.py`` (Riquelme, Tucker and Snoek, 2018):

* ``MushroomShowdown-v0`` (``sample_mushroom_data``): every UCI attribute one-hot over the values the
  data hold (``'?'`` of ``stalk-root`` a value of its own: 117 context values); arms 0 = do not eat (0),
  1 = eat (+5 for an edible mushroom; for a poisonous one -35 or +5, one coin per round with probability
  1/2); rows drawn with replacement. Regret is scored against the expected optimum, as the code scores it.
* ``StatlogShowdown-v0`` and ``CovertypeShowdown-v0`` (``sample_statlog_data``, ``sample_covertype_data``,
  ``classification_to_bandit_problem``): the rows visited without replacement, each feature standardised
  over the episode's rows (the code's sampled rows: mean 0, a zero standard deviation taken as 1); reward 1
  for the true class.

They read the OpenML cache the other dataset envs read (``bandit-gym download mushroom`` / ``shuttle`` /
``covertype``). Covertype, Adult, Census, Jester and Financial are also read from the Showdown's own files
(:data:`SHOWDOWN_FILES`, fetched by :func:`download_showdown_file`) by the ``load_*_file`` functions, with the
code's preprocessing; the classification ones play through ``StatlogShowdown-v0`` as ``X, y``::

    X, y = load_adult_file(download_showdown_file("adult", "/data/showdown"))
    env = gym.make("StatlogShowdown-v0", dataset=None, X=X, y=y)
"""

from __future__ import annotations

import inspect
import math
import os
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bandit_gym import rng
from bandit_gym._base import BanditEnv, BanditVectorEnv
from bandit_gym.atomic import atomic_write
from bandit_gym.datasets.envs import DatasetBanditSimulator
from bandit_gym.datasets.errors import DatasetNotFoundError, import_optional
from bandit_gym.datasets.loaders import load_dataset
from bandit_gym.rng import Stream
from bandit_gym.showdown import (
    CHUNK_ROUNDS,
    SHOWDOWN_HORIZON,
    ShowdownEnv,
    ShowdownSimulator,
    ShowdownVectorEnv,
    one_hot_blocks,
)
from bandit_gym.threads import policy
from bandit_gym.validation import check_choice, check_float, check_int, check_path

#: Where the Showdown's README points for each file (``storage.googleapis.com/bandits_datasets``).
SHOWDOWN_URL = "https://storage.googleapis.com/bandits_datasets/"
#: The Showdown's file of each dataset the OpenML cache does not hold.
SHOWDOWN_FILES = {
    "covertype": "covtype.data",
    "adult": "adult.full",
    "census": "USCensus1990.data.txt",
    "jester": "jester_data_40jokes_19181users.npy",
    "financial": "raw_stock_contexts",
}


def mushroom_contexts(features: np.ndarray, names: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Mushroom one-hot over the values the rows hold, a missing value (``'?'``) a value of its own, as
    ``pandas.get_dummies`` of the UCI file gives it: ``(N, 117)`` from the loader's ``"onehot"`` encoding.

    Args:
        features: The ``encoding="onehot"``, ``scaling="none"`` features ``(N, D)`` (0/1; a missing value:
            columns of zeros).
        names: Their ``attribute=value`` names.
    """
    columns, out_names = [], []
    attributes = list(dict.fromkeys(name.split("=")[0] for name in names))
    for attribute in attributes:
        attribute_columns = [j for j, name in enumerate(names) if name.split("=")[0] == attribute]
        values = features[:, attribute_columns]  # (N, b)
        missing = values.sum(axis=1) == 0  # (N,)
        if missing.any():  # '?' sorts first, as get_dummies orders the values
            columns.append(missing[:, None].astype(np.float32))
            out_names.append(f"{attribute}=?")
        held = values.any(axis=0)  # (b,) values no row holds get no column
        columns.append(values[:, held])
        out_names.extend(names[j] for j, keep in zip(attribute_columns, held, strict=True) if keep)
    return np.concatenate(columns, axis=1), tuple(out_names)


class MushroomShowdownSimulator(ShowdownSimulator):
    """The Showdown's Mushroom bandit (``sample_mushroom_data``); the reward values are the code's defaults.

    Args:
        dataset: The OpenML preset read: ``"mushroom"`` (OpenML 24).
        horizon: Rounds per episode (2,000); rows are drawn with replacement, so any number.
        reward_no_eat: Arm 0's reward (0).
        reward_edible: Arm 1's reward for an edible mushroom (5).
        reward_poisonous_bad, reward_poisonous_good: Arm 1's reward for a poisonous one when harmed (-35) or
            not (5); ``reward_poisonous_good > reward_poisonous_bad`` and ``reward_edible > reward_no_eat``.
        prob_poisonous_bad: Probability of being harmed (0.5), in ``[0, 1]``.
        cache_dir, download, verify_checksums: As for :func:`bandit_gym.datasets.load_dataset`.
    """

    feature_low, feature_high = 0.0, 1.0
    n_arms = 2

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", *, dataset: str = "mushroom",
                 horizon: int = SHOWDOWN_HORIZON, reward_no_eat: float = 0.0, reward_edible: float = 5.0,
                 reward_poisonous_bad: float = -35.0, reward_poisonous_good: float = 5.0,
                 prob_poisonous_bad: float = 0.5, cache_dir: str | os.PathLike | None = None, download: bool = False,
                 verify_checksums: bool = True) -> None:
        super().__init__(num_replicas, device)
        self.dataset = check_choice("dataset", dataset, ("mushroom",))
        self.horizon = check_int("horizon", horizon)
        self.reward_no_eat = check_float("reward_no_eat", reward_no_eat)
        self.reward_edible = check_float("reward_edible", reward_edible)
        if self.reward_edible <= self.reward_no_eat:
            raise ValueError(f"reward_edible must exceed reward_no_eat={reward_no_eat!r} (eating an edible "
                             f"mushroom is optimal), got {reward_edible!r}")
        self.reward_poisonous_bad = check_float("reward_poisonous_bad", reward_poisonous_bad)
        self.reward_poisonous_good = check_float("reward_poisonous_good", reward_poisonous_good)
        if self.reward_poisonous_good <= self.reward_poisonous_bad:
            raise ValueError(f"reward_poisonous_good must exceed reward_poisonous_bad={reward_poisonous_bad!r}, "
                             f"got {reward_poisonous_good!r}")
        self.prob_poisonous_bad = check_float("prob_poisonous_bad", prob_poisonous_bad, minimum=0.0, maximum=1.0)
        self.loading = {"cache_dir": check_path("cache_dir", cache_dir), "download": download,
                        "verify_checksums": verify_checksums}
        self._load()
        self.context_dim = self.features.shape[1]
        self.dim = self.n_arms * self.context_dim
        self.chunk_rounds = CHUNK_ROUNDS

    def _load(self) -> None:
        data = load_dataset(self.dataset, encoding="onehot", scaling="none", missing="impute", **self.loading)
        features, self.feature_names = mushroom_contexts(data.features.numpy(), data.feature_names)
        self.features = torch.from_numpy(features).to(self.device)  # (N, 117)
        self.edible = (data.labels == data.class_names.index("e")).to(self.device)  # (N,) bool

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in super().__getstate__().items() if k not in ("features", "edible")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._load()  # read again from the cache, before the episode is recomputed
        super().__setstate__({})

    def _new_episode(self) -> None:
        pass  # every round draws its row and coin

    def _draw_rows(self, chunk: int) -> tuple[torch.Tensor, ...]:
        B = self.chunk_rounds
        rows = torch.remainder(rng.random_words(self.keys, Stream.CONTEXT, chunk, B), len(self.features))  # (R, B)
        edible = self.edible[rows]  # (R, B)
        harmed = rng.uniform(self.keys, Stream.REWARD, chunk, (B,)) < self.prob_poisonous_bad  # (R, B) the coin
        poisonous = torch.where(harmed, self.reward_poisonous_bad, self.reward_poisonous_good)  # (R, B)
        eat = torch.where(edible, self.reward_edible, poisonous)  # (R, B)
        expected_poisonous = (self.prob_poisonous_bad * self.reward_poisonous_bad
                              + (1 - self.prob_poisonous_bad) * self.reward_poisonous_good)
        eat_mean = torch.where(edible, self.reward_edible, expected_poisonous)  # (R, B)
        no_eat = torch.full_like(eat, self.reward_no_eat)  # (R, B)
        table, means = torch.stack((no_eat, eat), dim=2), torch.stack((no_eat, eat_mean), dim=2)  # (R, B, 2)
        if self.reward_no_eat > expected_poisonous:
            optimal = edible.long()  # (R, B) eat the edible ones only
        else:
            optimal = torch.ones_like(rows)  # eating is optimal whatever the mushroom
        best = means.gather(2, optimal[..., None]).squeeze(2)  # (R, B) the expected optimum
        return one_hot_blocks(self.features[rows], self.n_arms), means.float(), table.float(), best.float(), optimal


class ShowdownClassificationSimulator(DatasetBanditSimulator):
    """A classification bandit as ``classification_to_bandit_problem`` makes it: each feature standardised over
    the episode's rows (mean 0, standard deviation 1; a constant feature only centred), the rest as
    :class:`~bandit_gym.datasets.envs.DatasetBanditSimulator` (its keywords; the registry sets
    ``dataset="shuttle"``, ``scaling="none"``, ``horizon=2000``)."""

    derived = (*DatasetBanditSimulator.derived, "_centre", "_scale")

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", **kwargs: Any) -> None:
        super().__init__(num_replicas, device, **kwargs)
        # n values of mean 0 and (population) std 1 lie within sqrt(n - 1) of 0; the slack covers float32 rounding
        bound = math.sqrt(max(self.horizon - 1, 1)) * (1 + 1e-6)
        self.feature_low, self.feature_high = -bound, bound

    __init__.__signature__ = inspect.signature(DatasetBanditSimulator.__init__)  # its keywords, for check_keywords

    def _new_episode(self) -> None:
        super()._new_episode()
        with policy():
            x = self.features[self.rows].double()  # (R, T, d) the episode's rows
            std = x.std(dim=1, correction=0, keepdim=True)  # (R, 1, d) numpy's std
            self._centre = x.mean(dim=1, keepdim=True)  # (R, 1, d)
            self._scale = torch.where(std > 0, std, torch.ones_like(std))

    def _contexts(self, chunk: int) -> torch.Tensor:
        B = self.chunk_rounds
        # Round T (observed, never played) wraps to the first row.
        rounds = torch.arange(chunk * B, (chunk + 1) * B, device=self.device) % self.horizon  # (B,)
        rows = self.rows[:, rounds]  # (R, B)
        self._labels_now = self.labels[rows]  # (R, B)
        x = ((self.features[rows].double() - self._centre) / self._scale).float()  # (R, B, d)
        return one_hot_blocks(x, self.n_arms)


# -- loaders of the Showdown's own files ----------------------------------------------------------------------
def download_showdown_file(name: str, cache_dir: str | os.PathLike) -> Path:
    """The Showdown's file of ``name`` (:data:`SHOWDOWN_FILES`) in ``cache_dir``, downloaded from
    :data:`SHOWDOWN_URL` first if it is not there (written whole or not at all)."""
    check_choice("name", name, tuple(SHOWDOWN_FILES))
    folder = Path(check_path("cache_dir", cache_dir)).expanduser()
    path = folder / SHOWDOWN_FILES[name]
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        url = SHOWDOWN_URL + SHOWDOWN_FILES[name]
        try:
            with urllib.request.urlopen(url, timeout=60) as response, atomic_write(path) as out:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
        except OSError as exc:
            raise DatasetNotFoundError(f"could not download {url} into {folder}: {type(exc).__name__}: {exc}. "
                                       "Download it on a machine with internet access and copy it there") from exc
    return path


def _pandas():
    return import_optional("pandas", "Reading the Showdown's data files")


def _labels_and_features(df: Any, label: Any) -> tuple[np.ndarray, np.ndarray]:
    """The column ``label`` as category codes ``(N,)`` (sorted values) and the other columns ``(N, d)`` float64."""
    labels = df[label].astype("category").cat.codes.to_numpy().astype(np.int64)
    return df.drop(columns=[label]).to_numpy(dtype=np.float64), labels


def load_covertype_file(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Covertype's ``covtype.data`` as the Showdown reads it (``sample_covertype_data``): ``X (N, 54), y (N,)``.

    ``header=0`` as in the code (the file has no header, so its first row names the columns and is not
    played: 581,011 rows), rows with a missing value dropped, the last column (7 cover types) the label.
    """
    df = _pandas().read_csv(path, header=0, na_values=["?"]).dropna()
    return _labels_and_features(df, df.columns[-1])


def load_adult_file(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Adult's ``adult.full`` as the Showdown reads it (``sample_adult_data``): rows with a missing value
    (``' ?'``) dropped; the label is column 6 (occupation, 14 classes); columns 1, 3, 5, 7, 8, 9, 13 and 14
    one-hot, the others numeric."""
    pd = _pandas()
    df = pd.read_csv(path, header=None, na_values=[" ?"]).dropna()
    df = pd.get_dummies(df, columns=[1, 3, 5, 7, 8, 9, 13, 14])
    return _labels_and_features(df, 6)


def load_census_file(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """US Census 1990's ``USCensus1990.data.txt`` as the Showdown reads it (``sample_census_data``): rows with a
    missing value dropped; the label is ``dOccup`` (9 classes); ``caseid`` dropped; every other column one-hot."""
    pd = _pandas()
    df = pd.read_csv(path, header=0, na_values=["?"]).dropna()
    labels = df["dOccup"].astype("category").cat.codes.to_numpy().astype(np.int64)
    df = df.drop(columns=["dOccup", "caseid"])
    return pd.get_dummies(df, columns=list(df.columns)).to_numpy(dtype=np.float64), labels


def load_jester_file(path: str | os.PathLike, context_dim: int = 32, n_arms: int = 8) -> tuple[np.ndarray, ...]:
    """Jester's ``jester_data_40jokes_19181users.npy`` (``sample_jester_data``): contexts ``(N, 32)``, the
    first ``context_dim`` ratings, and rewards ``(N, 8)``, the last ``n_arms`` ratings (the code shuffles the
    40 columns once per run before the split). ``context_dim + n_arms`` must be the file's 40 columns."""
    ratings = np.load(path)
    context_dim, n_arms = check_int("context_dim", context_dim), check_int("n_arms", n_arms)
    if ratings.ndim != 2 or ratings.shape[1] != context_dim + n_arms:
        raise ValueError(f"{path}: context_dim + n_arms must be the file's columns, {ratings.shape[1:]} of shape "
                         f"{ratings.shape}; got {context_dim} + {n_arms}")
    return ratings[:, :context_dim].astype(np.float64), ratings[:, context_dim:].astype(np.float64)


def load_financial_file(path: str | os.PathLike) -> np.ndarray:
    """The Financial dataset's ``raw_stock_contexts`` (``sample_stock_data``): contexts ``(3713, 21)``, one
    header line skipped. The code's rewards are linear in them: ``beta_j`` uniform in ``[-1, 1]^21`` scaled to
    unit norm, noise ``N(0, (0.01 (j + 1))^2)`` for the 8 arms."""
    return np.loadtxt(path, skiprows=1, ndmin=2)


# -- the Gymnasium faces ------------------------------------------------------------------------------------------
class MushroomShowdownEnv(ShowdownEnv):
    """The Showdown's Mushroom bandit (``MushroomShowdown-v0``); see :class:`MushroomShowdownSimulator`.

    ## Observation Space
    ``Box(0, 1, (2, 234), float32)``: the 117 one-hot context values in one-hot-block form.

    ## Action Space
    ``Discrete(2)``: 0 do not eat, 1 eat.

    ## Rewards
    0 for not eating; eating pays 5 for an edible mushroom, -35 or 5 (a coin per round) for a poisonous one.

    ## Info
    ``expected_rewards``: the arms' means, ``[0, 5]`` for an edible mushroom and ``[0, -15]`` for a poisonous one
    (the mean of its coin); ``optimal_action``: 1 for an edible mushroom, else 0; ``reward_row``: what every arm
    pays this round (the coin drawn); ``optimal_reward``: the expected optimum (5 or 0); ``step`` adds
    ``regret``: the previous ``optimal_reward`` minus the reward paid, the code's score (eating a poisonous
    mushroom: 35 or -5).

    ## Version History
    * v0: initial version.
    """

    simulator_class = MushroomShowdownSimulator


class MushroomShowdownVectorEnv(ShowdownVectorEnv):
    """Batched :class:`MushroomShowdownEnv`."""

    simulator_class = MushroomShowdownSimulator


class ShowdownClassificationEnv(BanditEnv):
    """A classification bandit with the Showdown's standardisation (``StatlogShowdown-v0``); see
    :class:`ShowdownClassificationSimulator`.

    Spaces, rewards (1 for the true class) and ``info`` as :class:`~bandit_gym.datasets.envs.DatasetBanditEnv`
    (regret ``1 - reward``, the code's ``opt_rewards`` of ones); the features are standardised over the episode's ``T``
    rows, so they lie in ``[-sqrt(T - 1), sqrt(T - 1)]``, the observation space's bounds.
    """

    simulator_class = ShowdownClassificationSimulator


class ShowdownClassificationVectorEnv(BanditVectorEnv):
    """Batched :class:`ShowdownClassificationEnv`."""

    simulator_class = ShowdownClassificationSimulator
