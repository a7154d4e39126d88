"""Where a classification bandit's data come from: a named dataset, an OpenML id, or the user's ``X, y``.

Every dataset env (the five named presets, ``OpenMLBandit-v0``, ``ClassificationBandit-v0``)
is one :class:`~bandit_gym.datasets.envs.DatasetBanditSimulator`; :func:`open_source` turns
its keywords into the preprocessed data and into what a pickle needs to have them again:
the named and OpenML datasets are read again from the cache, a user's data travel in the pickle.
An env's ``spec`` holds an :class:`InMemoryData` in place of the user's ``X, y``.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from dataclasses import dataclass, field
from typing import Any

from bandit_gym.datasets.loaders import load_dataset, load_openml
from bandit_gym.datasets.published import SPECS, get_spec
from bandit_gym.datasets.tabular import LoadedDataset
from bandit_gym.datasets.user_data import prepare_dataset
from bandit_gym.validation import check_bool, check_path, short_repr

_HOW = ("X=..., y=... (your own data: ClassificationBandit-v0), data_id=N (an OpenML id: OpenMLBandit-v0) or "
        f"dataset=NAME (a named preset, one of {sorted(SPECS)}: Shuttle-v0 and the others set it)")


#: The prepared data of every live :class:`InMemoryData` of this process, by its text.
_IN_MEMORY: weakref.WeakValueDictionary[str, LoadedDataset] = weakref.WeakValueDictionary()


class InMemoryData(str):
    """What a dataset env's ``spec`` holds in place of the user's ``X, y`` (the keyword ``data``).

    Text that names the prepared data (rows, features, classes, the preprocessing and a sha256 of
    the values), carrying the data themselves as :attr:`data`. Being a ``str``, it keeps the spec
    JSON-serialisable and comparable (``spec.to_json()``, ``spec == other``: equal data, equal
    specs); the data travel with it in copies and pickles, so ``gym.make(env.spec)`` and
    ``gym.make_vec(env.spec, ...)`` (async workers too) play the same data. A spec read back with
    ``EnvSpec.from_json`` holds the bare text, which finds the data while this process has them.
    """

    data: LoadedDataset
    options: dict[str, str]

    @classmethod
    def of(cls, data: LoadedDataset, options: dict[str, str]) -> InMemoryData:
        """The handle of ``data``, prepared from a user's ``X, y`` with ``options`` (encoding, scaling, missing)."""
        digest = hashlib.sha256()
        for part in (data.features.numpy(), data.labels.numpy()):
            digest.update(part.tobytes())
        digest.update(repr((data.class_names, data.feature_names, sorted(options.items()))).encode())
        chosen = ", ".join(f"{k}={v}" for k, v in options.items())
        text = (f"X, y: {data.n_rows} rows, {data.dim} features, {len(data.class_names)} classes, {chosen}, "
                f"sha256 {digest.hexdigest()[:16]}")
        return cls._made(text, data, options)

    @classmethod
    def _made(cls, text: str, data: LoadedDataset, options: dict[str, str]) -> InMemoryData:
        """The handle of ``text`` carrying ``data`` (also how a pickle rebuilds one, without hashing again)."""
        handle = super().__new__(cls, text)
        handle.data, handle.options = data, dict(options)
        if _IN_MEMORY.get(text) is None:  # equal text, equal data: the first one alive serves
            _IN_MEMORY[text] = data
        return handle

    def __reduce__(self) -> tuple:
        return InMemoryData._made, (str(self), self.data, self.options)

    def __copy__(self) -> InMemoryData:
        return self  # immutable, and its data are shared read-only

    def __deepcopy__(self, memo: dict) -> InMemoryData:
        return self


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
    handle: InMemoryData | None = field(default=None, repr=False)  # "arrays": what the env's spec holds

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
    data: str | None,
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
    unless an imputation is chosen), ``"impute"`` for the named and OpenML datasets. ``data`` is
    the :class:`InMemoryData` of an env's spec (or its text, in the process that made it): the
    user's data, prepared already.
    """
    check_bool("download", download)
    check_bool("verify_checksums", verify_checksums)
    check_path("cache_dir", cache_dir)
    given = [name for name, value in (("dataset", dataset), ("data_id", data_id), ("X", X), ("data", data))
             if value is not None]
    if X is None and y is not None:
        raise ValueError("y is given but X is not; pass the features as X=... with y (or an sklearn Bunch as X "
                         "alone)")
    if len(given) != 1:
        got = "none of them" if not given else " and ".join(given)
        raise ValueError(f"a dataset env takes its data from exactly one of {_HOW}; got {got}")
    options = {"encoding": encoding, "scaling": scaling}
    if X is not None or data is not None:
        for name, value, default in (("cache_dir", cache_dir, None), ("download", download, False),
                                     ("verify_checksums", verify_checksums, True), ("target", target, None)):
            if value is not default:
                hint = "; for a DataFrame's label column pass y='COLUMN'" if name == "target" else ""
                raise ValueError(f"{name} applies to the named and OpenML datasets, not to X, y; got "
                                 f"{name}={short_repr(value)}{hint}")
        options["missing"] = "error" if missing is None else missing
        if data is not None:
            return _source_of_handle(data, options, feature_names)
        prepared = prepare_dataset(X, y, name="X, y", feature_names=feature_names, **options)
        return DataSource("arrays", "X, y", {}, prepared, InMemoryData.of(prepared, options))
    if feature_names is not None:
        raise ValueError(f"feature_names names the columns of an array X only; got "
                         f"feature_names={short_repr(feature_names)} with {given[0]}")
    cached = {**options, "missing": "impute" if missing is None else missing, "cache_dir": cache_dir,
              "download": download, "verify_checksums": verify_checksums}
    if dataset is not None:
        if target is not None:
            raise ValueError(f"target applies to OpenMLBandit-v0 (data_id=...); {get_spec(dataset).title} has its "
                             f"published class attribute; got target={short_repr(target)}")
        arguments = {"name": get_spec(dataset).name, **cached}
        return DataSource("dataset", get_spec(dataset).title, arguments, load_dataset(**arguments))
    arguments = {"data_id": data_id, "target": target, **cached}
    data = load_openml(**arguments)
    return DataSource("openml", f"OpenML dataset {data_id} ({data.name})", arguments, data)


def _source_of_handle(data: str, options: dict[str, str], feature_names: Any) -> DataSource:
    """The source of ``data=`` (an env spec's :class:`InMemoryData`), checked against the options given with it."""
    if not isinstance(data, str):
        raise ValueError(f"data must be the InMemoryData of a ClassificationBandit-v0 spec (or its text), got "
                         f"{type(data).__name__}; pass your own data as X=..., y=...")
    if not isinstance(data, InMemoryData):
        prepared = _IN_MEMORY.get(data)
        if prepared is None:
            raise ValueError(f"data={str(data)!r} names no data of this process: a ClassificationBandit-v0 spec "
                             "carries its X, y only in memory (a spec read from JSON finds them in the process that "
                             "made them); pass X=..., y=... again")
        data = InMemoryData._made(data, prepared, _options_in_text(data))
    if feature_names is not None:
        raise ValueError(f"feature_names names the columns of an array X; data= holds prepared data, got "
                         f"feature_names={short_repr(feature_names)}")
    for name, value in options.items():
        if data.options.get(name) != value:
            raise ValueError(f"{name}={value!r} differs from the {name}={data.options.get(name)!r} that data= was "
                             "prepared with; encoding, scaling and missing apply when X, y are given")
    return DataSource("arrays", "X, y", {}, data.data, data)


def _options_in_text(text: str) -> dict[str, str]:
    """The ``name=value`` preprocessing options written in an :class:`InMemoryData`'s text."""
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)
