"""Real-data contextual bandits (LMC-TS paper, Section 5.2): classification as a bandit.

A dataset with ``K`` classes and ``d`` features becomes a ``K``-armed bandit:
each round shows one example ``x``; arm ``j`` is the one-hot-block vector
``(0, ..., x, ..., 0)`` in ``R^{K d}`` with ``x`` in block ``j``; playing the
arm of the true class pays 1, any other arm 0. Each run visits the rows in a
random order drawn from its key, without replacement.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from bandit_gym import rng
from bandit_gym._base import BanditEnv, BanditSimulator, BanditVectorEnv
from bandit_gym.datasets.sources import open_source
from bandit_gym.rng import Stream
from bandit_gym.threads import policy
from bandit_gym.validation import check_int, check_memory

#: The paper's horizon on the real datasets (capped by the number of rows).
PAPER_HORIZON = 10_000
#: Largest observation a dataset env builds, in bytes: one round's ``(K, K d)`` float32 one-hot blocks
#: (``4 K^2 d`` bytes for ``K`` classes of ``d`` features). An env holds about ``3 R + 2`` of them for ``R``
#: replicas (the rounds drawn, the observation space's low and high bounds and the batched space's), so a
#: single env stays near 1 GiB; CIFAR10 (10 classes of 3,072 features) needs 1.2 MB. A larger one is refused
#: with its size: fewer classes (merge rare ones) or fewer features.
MAX_OBSERVATION_BYTES = 2**28


class DatasetBanditSimulator(BanditSimulator):
    """``R`` replicas of a classification bandit over one shared, preprocessed dataset.

    One simulator for every dataset env: the data come from exactly one of ``dataset`` (a named
    preset), ``data_id`` (any OpenML dataset) or ``X, y`` (your own data); see
    :func:`bandit_gym.datasets.sources.open_source`. Everything after loading is the same for all.

    Args:
        dataset: ``shuttle``, ``magictelescope``, ``mushroom``, ``covertype`` or ``cifar10``
            (:func:`bandit_gym.datasets.load_dataset`, which checks the published figures).
        data_id: An OpenML dataset id, read from the same offline cache (:func:`bandit_gym.datasets.load_openml`).
        X, y: Your features and labels: numpy arrays, a pandas DataFrame with a Series or the name of
            its label column as ``y``, or an sklearn ``Bunch`` as ``X`` alone
            (:func:`bandit_gym.datasets.prepare_dataset`). The prepared arrays travel in a pickle.
        data: What the env's ``spec`` holds in place of ``X, y`` (an
            :class:`~bandit_gym.datasets.sources.InMemoryData`: the prepared data, named by their
            shape, preprocessing and sha256), so that ``gym.make(env.spec)`` plays the same data.
        target: The class attribute of an OpenML dataset (default: its description's).
        feature_names: Names of the columns of an array ``X``.
        horizon: Rounds per episode ``T``; default ``min(10_000, rows)``. Rows are drawn without
            replacement, so it may not exceed the number of rows (after ``max_rows``).
        max_rows: Use only a fixed random subset of this many rows (the same subset for every run,
            drawn from ``subset_seed``); default: every row.
        subset_seed: Seed of that subset (integer >= 0).
        encoding, scaling: See :func:`bandit_gym.datasets.tabular.preprocess`.
        missing: Missing feature values: ``"error"``, ``"impute"`` or ``"drop"``; default (None)
            ``"error"`` for ``X, y`` and ``"impute"`` for the named and OpenML datasets.
        cache_dir, download, verify_checksums: Where the named and OpenML datasets are read from,
            whether to download a missing one, whether to check the files (see :func:`load_dataset`).
    """

    derived = (*BanditSimulator.derived, "rows", "_labels_now")

    def __init__(
        self,
        num_replicas: int,
        device: torch.device | str = "cpu",
        *,
        dataset: str | None = None,
        data_id: int | None = None,
        X: Any = None,  # scikit-learn's name for the feature matrix
        y: Any = None,
        data: str | None = None,
        target: str | None = None,
        feature_names: Sequence[str] | None = None,
        horizon: int | None = None,
        max_rows: int | None = None,
        subset_seed: int = 0,
        encoding: str = "ordinal",
        scaling: str = "l2",
        missing: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        download: bool = False,
        verify_checksums: bool = True,
    ) -> None:
        super().__init__(num_replicas, device)
        #: The data and how a loaded pickle gets them again (a user's X, y travel in the pickle).
        self.source = open_source(
            dataset=dataset, data_id=data_id, X=X, y=y, data=data, target=target, feature_names=feature_names,
            encoding=encoding, scaling=scaling, missing=missing, cache_dir=cache_dir, download=download,
            verify_checksums=verify_checksums)
        self._attach_data()
        title = self.source.title
        n_rows = self.data.n_rows
        check_int("subset_seed", subset_seed, minimum=0)
        self.pool: torch.Tensor | None = None  # (M,) row indices, or None for all rows
        if max_rows is not None:
            max_rows = check_int("max_rows", max_rows)
            if max_rows > n_rows:
                raise ValueError(f"max_rows must be at most the {n_rows} rows of {title}, got {max_rows}")
            with policy():  # torch's threads: bandit_gym/threads.py
                subset = rng.permutation(rng.seed_to_key(subset_seed), Stream.INSTANCE, n_rows)[0, :max_rows]  # (M,)
                self.pool = subset.sort().values.to(self.device)
        self.n_pool = n_rows if self.pool is None else len(self.pool)
        if horizon is None:
            horizon = min(PAPER_HORIZON, self.n_pool)
        self.horizon = check_int("horizon", horizon)
        if self.horizon > self.n_pool:
            raise ValueError(
                f"horizon must be at most the number of rows, {self.n_pool} ({title}"
                f"{'' if max_rows is None else f' with max_rows={max_rows}'}), because every run visits rows "
                f"without replacement; got {horizon}"
            )
        self.n_arms = len(self.data.class_names)
        self.feature_dim = self.data.dim  # d of one example
        self.dim = self.n_arms * self.feature_dim  # K d of one arm
        self.chunk_rounds = max(1, 8192 // (self.n_arms * self.dim))  # rounds built per call (any number will do)
        self.feature_low, self.feature_high = self.data.feature_low, self.data.feature_high
        self._check_size(title)
        self.rows: torch.Tensor | None = None  # (R, T) row indices of this episode, in visiting order
        self._labels_now: torch.Tensor | None = None  # (R,) true classes of the current round

    def _check_size(self, title: str) -> None:
        """Refuse an observation above :data:`MAX_OBSERVATION_BYTES`, and an env this machine cannot hold."""
        observation = self.n_arms * self.dim * 4  # bytes of one (K, K d) float32 observation
        total = observation * (self.num_replicas * (self.chunk_rounds + 2) + 2)  # the chunk, batched and single bounds
        what = f"{self.num_replicas} replica(s) of {title} ({self.n_arms} arms x dim {self.dim})"
        if observation > MAX_OBSERVATION_BYTES:
            raise MemoryError(
                f"{title}: {self.n_arms} classes x {self.feature_dim} features make each observation "
                f"({self.n_arms}, {self.dim}) float32, {observation / 2**20:,.0f} MiB, above the limit of "
                f"{MAX_OBSERVATION_BYTES / 2**20:,.0f} MiB (bandit_gym.datasets.envs.MAX_OBSERVATION_BYTES); "
                f"{what} would need about {total / 2**30:,.1f} GiB. Use fewer classes (merge rare ones) or fewer "
                "features")
        check_memory(total, what)

    def spec_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The user's ``X, y`` (and ``feature_names``) give way to ``data``: their prepared data, named in text."""
        if self.source.kind != "arrays":
            return kwargs
        own = {k: v for k, v in kwargs.items() if k not in ("X", "y", "feature_names", "data")}
        return {**own, "X": None, "y": None, "data": self.source.handle}

    def _attach_data(self) -> None:
        self.data = self.source.data
        self.features, self.labels = self.data.on(self.device)  # (N, d), (N,): shared, never copied

    def __getstate__(self) -> dict:
        return {k: v for k, v in super().__getstate__().items() if k not in ("data", "features", "labels")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._attach_data()  # the data first (the source has loaded them again), then the episode
        super().__setstate__({})

    def _new_episode(self) -> None:
        with policy():  # a row order hashes and sorts a whole dataset's rows (bandit_gym/threads.py)
            order = rng.permutation(self.keys, Stream.CONTEXT, self.n_pool)[:, : self.horizon]  # (R, T)
        self.rows = order if self.pool is None else self.pool[order]

    def _contexts(self, chunk: int) -> torch.Tensor:
        with policy():  # CIFAR10's chunks of one-hot-block arms are large enough for torch's threads
            return self._one_hot_blocks(chunk)

    def _one_hot_blocks(self, chunk: int) -> torch.Tensor:
        B, K, d = self.chunk_rounds, self.n_arms, self.feature_dim
        # Round T (observed, never played) wraps to the first row.
        rounds = torch.arange(chunk * B, (chunk + 1) * B, device=self.device) % self.horizon  # (B,)
        rows = self.rows[:, rounds]  # (R, B)
        self._labels_now = self.labels[rows]  # (R, B)
        arm_rows = torch.zeros(self.num_replicas, B, K, K, d, dtype=torch.float32,
                               device=self.device)  # (R, B, K, K, d)
        arms = torch.arange(K, device=self.device)
        arm_rows[:, :, arms, arms, :] = self.features[rows][:, :, None, :]  # block j of arm j holds the example
        return arm_rows.view(self.num_replicas, B, K, K * d)  # (R, B, K, K d)

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(self._labels_now, self.n_arms).to(torch.float32)  # (R, B, K)

    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        return chosen_mean.clone()  # Bernoulli(0 or 1) is deterministic: 1 for the true class

    def _arm_rewards(self, expected: torch.Tensor, t: int) -> torch.Tensor:
        return expected.clone()  # (R, n, K)


class DatasetBanditEnv(BanditEnv):
    """Classification as a contextual bandit (LMC-TS paper, Section 5.2); see ``docs/datasets.md``.

    ## Description
    Each round shows one example of a labelled dataset, as ``n_classes`` arms in
    one-hot-block form; the agent guesses the class. One env class for every source of data:
    ``ClassificationBandit-v0`` (your ``X, y``), ``OpenMLBandit-v0`` (``data_id=N``, any
    OpenML classification dataset) and the presets ``Shuttle-v0``, ``MagicTelescope-v0``,
    ``Mushroom-v0``, ``Covertype-v0`` and ``CIFAR10-v0`` (``dataset=NAME``, checked against the
    published figures). Cached data are read from a local cache and never downloaded unless
    ``download=True``; see ``bandit-gym download``.

    ## Observation Space
    ``Box(low, high, (n_classes, n_classes * d), float32)``: row ``j`` holds the
    example's ``d`` features in columns ``j d .. (j + 1) d - 1`` and zeros
    elsewhere. ``[-1, 1]`` with ``scaling="l2"`` (the default) and for CIFAR10;
    unbounded otherwise.

    ## Action Space
    ``Discrete(n_classes)``: arm ``j`` is class ``class_names[j]`` (the order of
    the class values declared in the data file; CIFAR10: torchvision's order; your
    ``y``: sorted, or a ``category``'s declared order).

    ## Rewards
    1 for the arm of the true class, 0 otherwise.

    ## Info
    ``expected_rewards``: the one-hot label of the observation it comes with;
    ``optimal_action``: its class; ``step`` adds ``regret = 1 - reward``.

    ## Arguments
    See :class:`DatasetBanditSimulator`: one of ``dataset``, ``data_id`` (with ``target``) or
    ``X, y`` (with ``feature_names``); ``horizon`` (``min(10_000, rows)``), ``max_rows``,
    ``subset_seed``, ``encoding`` (``"ordinal"``), ``scaling`` (``"l2"``), ``missing``,
    ``cache_dir``, ``download`` (False), ``verify_checksums`` (True).

    ## Version History
    * v0: initial version.
    """

    simulator_class = DatasetBanditSimulator

    @property
    def class_names(self) -> tuple[str, ...]:
        return self.sim.data.class_names


class DatasetBanditVectorEnv(BanditVectorEnv):
    """Batched :class:`DatasetBanditEnv`: replica ``i`` of ``reset(seed=s)`` is the single env with ``seed=s + i``.

    The dataset is moved to ``device`` once per process and shared by all replicas.
    """

    simulator_class = DatasetBanditSimulator

    @property
    def class_names(self) -> tuple[str, ...]:
        return self.sim.data.class_names
