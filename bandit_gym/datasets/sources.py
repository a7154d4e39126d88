"""Where a classification bandit's data come from: a named dataset, an OpenML id, or the user's ``X, y``.

Every dataset env (the five named presets, ``OpenMLBandit-v0``, ``ClassificationBandit-v0``)
is one :class:`~bandit_gym.datasets.envs.DatasetBanditSimulator`; :func:`open_source` turns
its keywords into the preprocessed data and into what a pickle needs to have them again:
the named and OpenML datasets are read again from the cache, a user's data travel in the pickle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from bandit_gym.datasets.loaders import load_dataset, load_openml
from bandit_gym.datasets.published import SPECS, get_spec
from bandit_gym.datasets.tabular import LoadedDataset
from bandit_gym.datasets.user_data import prepare_dataset
from bandit_gym.validation import check_bool

_HOW = ("X=..., y=... (your own data: ClassificationBandit-v0), data_id=N (an OpenML id: OpenMLBandit-v0) or "
        f"dataset=NAME (a named preset, one of {sorted(SPECS)}: Shuttle-v0 and the others set it)")


@dataclass(eq=False)
class DataSource:
    """The data of a dataset env and how to get them again after unpickling.

    ``kind`` is ``"dataset"`` (a named preset, read with :func:`load_dataset`), ``"openml"``
    (:func:`load_openml`) or ``"arrays"`` (the user's ``X, y``, prepared once by
    :func:`prepare_dataset`); ``arguments`` are the loader's keywords.
    """

    kind: str
    title: str  # how messages name the data: "Shuttle", "OpenML dataset 1120 (MagicTelescope)", "X, y"
    arguments: dict[str, Any]
    data: LoadedDataset = field(repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """A user's data travel in the pickle; cached data are read again from the cache when loaded."""
        return self.__dict__ if self.kind == "arrays" else {**self.__dict__, "data": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.data is None:
            loader = load_dataset if self.kind == "dataset" else load_openml
            self.data = loader(**self.arguments)


def open_source(
    *,
    dataset: str | None,
    data_id: int | None,
    X: Any,
    y: Any,
    target: str | None,
    feature_names: Any,
    encoding: str,
    scaling: str,
    missing: str | None,
    cache_dir: str | os.PathLike | None,
    download: bool,
    verify_checksums: bool,
) -> DataSource:
    """Load the one source the keywords name; a clear error for none, several or keywords that do not apply.

    ``missing=None`` is the source's default: ``"error"`` for ``X, y`` (a user's NaNs are refused
    unless an imputation is chosen), ``"impute"`` for the named and OpenML datasets.
    """
    check_bool("download", download)
    check_bool("verify_checksums", verify_checksums)
    given = [name for name, value in (("dataset", dataset), ("data_id", data_id), ("X", X)) if value is not None]
    if X is None and y is not None:
        raise ValueError("y is given but X is not; pass the features as X=... with y (or an sklearn Bunch as X "
                         "alone)")
    if len(given) != 1:
        got = "none of them" if not given else " and ".join(given)
        raise ValueError(f"a dataset env takes its data from exactly one of {_HOW}; got {got}")
    options = {"encoding": encoding, "scaling": scaling}
    if X is not None:
        for name, value, default in (("cache_dir", cache_dir, None), ("download", download, False),
                                     ("verify_checksums", verify_checksums, True), ("target", target, None)):
            if value != default:
                hint = "; for a DataFrame's label column pass y='COLUMN'" if name == "target" else ""
                raise ValueError(f"{name} applies to the named and OpenML datasets, not to X, y; got {name}={value!r}"
                                 f"{hint}")
        data = prepare_dataset(X, y, name="X, y", feature_names=feature_names, missing=missing or "error", **options)
        return DataSource("arrays", "X, y", {}, data)
    if feature_names is not None:
        raise ValueError(f"feature_names names the columns of an array X only; got feature_names={feature_names!r} "
                         f"with {given[0]}")
    cached = {**options, "missing": missing or "impute", "cache_dir": cache_dir, "download": download,
              "verify_checksums": verify_checksums}
    if dataset is not None:
        if target is not None:
            raise ValueError(f"target applies to OpenMLBandit-v0 (data_id=...); {get_spec(dataset).title} has its "
                             f"published class attribute; got target={target!r}")
        arguments = {"name": get_spec(dataset).name, **cached}
        return DataSource("dataset", get_spec(dataset).title, arguments, load_dataset(**arguments))
    arguments = {"data_id": data_id, "target": target, **cached}
    data = load_openml(**arguments)
    return DataSource("openml", f"OpenML dataset {data_id} ({data.name})", arguments, data)
