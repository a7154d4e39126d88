"""Load the paper's real datasets (and any OpenML one) once per process, preprocessed, as torch tensors.

UCI data (Shuttle, MagicTelescope, Mushroom, Covertype) come from an OpenML cache
directory, looked up by integer OpenML id (never by name: that asks the server
even when the files are cached); CIFAR10's test split comes from torchvision's
layout. Loading never downloads unless ``download=True`` is passed; a missing
dataset raises :class:`DatasetNotFoundError` at once, naming the dataset, the
directory searched and the ``bandit-gym download`` command that fills it.
:func:`load_dataset` also checks that the files are the published datasets
(``published.py``); :func:`load_openml` reads any other id by the same rules.
See ``docs/datasets.md`` for the preprocessing.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import torch

from bandit_gym.datasets import _openml_files
from bandit_gym.datasets.errors import DatasetFileError, DatasetNotFoundError, import_optional
from bandit_gym.datasets.published import SPECS, DatasetSpec, check_published, get_spec
from bandit_gym.datasets.tabular import LoadedDataset, check_options, preprocess, scale
from bandit_gym.validation import check_bool, check_int, check_path

__all__ = [  # SPECS, get_spec, check_published and LoadedDataset are re-exported from their modules
    "CIFAR10_ROOT_ENV_VAR", "SPECS", "DatasetSpec", "LoadedDataset", "check_published", "download_dataset",
    "get_spec", "is_cached", "load_dataset", "load_openml", "resolve_cache_dir",
]
#: Environment variable for CIFAR10's torchvision ``root`` (OpenML data use ``OPENML_CACHE_DIR``).
CIFAR10_ROOT_ENV_VAR = "BANDIT_GYM_CIFAR10_ROOT"


_CACHE: dict[tuple, LoadedDataset] = {}
_LOCK = threading.RLock()


def resolve_cache_dir(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory searched for ``name``: ``cache_dir``, else the env variable, else the default.

    OpenML data: ``OPENML_CACHE_DIR``, else openml's configured cache directory.
    CIFAR10 (torchvision ``root``): ``BANDIT_GYM_CIFAR10_ROOT``, else ``~/.cache/bandit_gym/torchvision``.
    ``cache_dir`` must be None or a path (:func:`bandit_gym.validation.check_path`).
    """
    spec = get_spec(name)
    check_path("cache_dir", cache_dir)
    if cache_dir is None and spec.openml_id is None:
        return Path(os.environ.get(CIFAR10_ROOT_ENV_VAR, "~/.cache/bandit_gym/torchvision")).expanduser()
    return _openml_root(cache_dir)


def _openml_root(cache_dir: str | os.PathLike | None) -> Path:
    if check_path("cache_dir", cache_dir) is not None:
        return Path(cache_dir).expanduser()
    if "OPENML_CACHE_DIR" in os.environ:
        return Path(os.environ["OPENML_CACHE_DIR"]).expanduser()
    return _openml_files.default_cache_dir()


def load_dataset(
    name: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    encoding: str = "ordinal",
    scaling: str = "l2",
    missing: str = "impute",
    download: bool = False,
    verify_checksums: bool = True,
) -> LoadedDataset:
    """Load ``name`` (see :data:`SPECS`) preprocessed; cached per process by all the arguments.

    Args:
        name: ``shuttle``, ``magictelescope``, ``mushroom``, ``covertype`` or ``cifar10``.
        cache_dir: OpenML cache root (or torchvision root for CIFAR10); see :func:`resolve_cache_dir`.
        encoding: Nominal attributes as one ordinal code each (``"ordinal"``) or one 0/1 column per
            declared value (``"onehot"``). No effect on CIFAR10.
        scaling: ``"l2"`` (each row to unit norm, the paper's code), ``"standardize"`` (each column
            to mean 0, std 1) or ``"none"``.
        missing: Missing feature values (Mushroom's ``stalk-root``): ``"impute"`` (default; see
            :func:`bandit_gym.datasets.tabular.preprocess`), ``"drop"`` their rows, or ``"error"``.
            The published figures are checked on the file before this step.
        download: Download the data into ``cache_dir`` first if missing (needs the internet).
        verify_checksums: Check that the files are the published dataset: md5 sums (CIFAR10: torchvision's;
            OpenML: ``description.xml``'s, where it has one), and the row count, columns and class counts
            of :data:`SPECS`. A mismatch raises :class:`DatasetIntegrityError`. False loads a modified copy.

    Raises:
        MissingDependencyError: The ``datasets`` extra is not installed.
        DatasetNotFoundError: The data are not in the cache directory.
        DatasetFileError: A file is damaged; :class:`DatasetIntegrityError`: it is not the published dataset.
    """
    spec = get_spec(name)
    check_options(encoding, scaling, missing)
    check_bool("download", download)
    check_bool("verify_checksums", verify_checksums)
    _require_packages(spec)
    root = resolve_cache_dir(spec.name, cache_dir).resolve()
    key = (spec.name, str(root), encoding, scaling, missing, verify_checksums)
    with _LOCK:
        if key not in _CACHE:
            if download and not is_cached(spec.name, root):
                download_dataset(spec.name, root)
            if spec.openml_id is None:
                from bandit_gym.datasets import _cifar

                x, y, classes, source = _cifar.load_cifar10_test(root, verify_checksums, _missing_message(spec, root))
                names = tuple(f"pixel{i}" for i in range(x.shape[1]))
                if verify_checksums:
                    check_published(spec, source, names, None, y, classes)
                x, low, high = scale(x, scaling, -1.0, 1.0)
                data = LoadedDataset(
                    spec.name, torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),
                    torch.from_numpy(np.asarray(y, dtype=np.int64)), tuple(classes), names, source, low, high,
                )
            else:
                table = _read_openml(root, spec.openml_id, verify_checksums, None, _missing_message(spec, root))
                if verify_checksums:
                    check_published(
                        spec, table.path, table.feature_names, table.target, table.labels, table.class_names
                    )
                data = _preprocess_openml(table, spec.name, encoding, scaling, missing)  # Mushroom has '?'
            if len(data.class_names) != spec.n_classes:
                raise DatasetFileError(
                    f"{data.source}: {spec.title} should have {spec.n_classes} classes, found {list(data.class_names)}"
                )
            _CACHE[key] = data
        return _CACHE[key]


def load_openml(
    data_id: int,
    *,
    cache_dir: str | os.PathLike | None = None,
    target: str | None = None,
    encoding: str = "ordinal",
    scaling: str = "l2",
    missing: str = "impute",
    download: bool = False,
    verify_checksums: bool = True,
) -> LoadedDataset:
    """Any OpenML classification dataset by integer id, from the same offline cache as the named datasets.

    The same files, layout and rules as :func:`load_dataset` (never downloads unless ``download=True``;
    never writes to the cache), and the same preprocessing; cached per process by all the arguments.
    There are no published figures to compare for an arbitrary id: ``verify_checksums`` checks the md5
    sum of ``description.xml`` where it has one.

    Args:
        data_id: The OpenML dataset id (an integer >= 1; names would need the server).
        cache_dir: OpenML cache root; default ``OPENML_CACHE_DIR``, else openml's cache directory.
        target: The class attribute; default the description's ``default_target_attribute``. A
            numeric target must hold integers (a regression target is refused).
        encoding, scaling, missing: See :func:`bandit_gym.datasets.tabular.preprocess`; ``missing``
            defaults to ``"impute"``, the named datasets' treatment.
        download, verify_checksums: As for :func:`load_dataset`.
    """
    data_id = check_int("data_id", data_id, minimum=1)
    if target is not None and not isinstance(target, str):
        raise ValueError(f"target must be an attribute name (str) or None, got {target!r}")
    check_options(encoding, scaling, missing)
    check_bool("download", download)
    check_bool("verify_checksums", verify_checksums)
    title = f"OpenML dataset {data_id}"
    _require_openml_readers(title)
    root = _openml_root(cache_dir).resolve()
    key = ("openml", data_id, str(root), target, encoding, scaling, missing, verify_checksums)
    with _LOCK:
        if key not in _CACHE:
            folder = _openml_files.dataset_dir(root, data_id)
            if download and _openml_files.data_file(folder, data_id) is None:
                _download_openml_or_explain(title, data_id, root)
            message = _openml_missing_message(title, data_id, root, f"load_openml({data_id}, cache_dir=DIR, "
                                              "download=True)")
            table = _read_openml(root, data_id, verify_checksums, target, message)
            _CACHE[key] = _preprocess_openml(table, table.title or f"openml{data_id}", encoding, scaling, missing)
        return _CACHE[key]


def _read_openml(
    root: Path, data_id: int, verify_checksums: bool, target: str | None, missing_message: str
) -> _openml_files.RawTable:
    folder = _openml_files.dataset_dir(root, data_id)
    path = _openml_files.data_file(folder, data_id)
    if path is None or not (folder / "description.xml").is_file():
        raise DatasetNotFoundError(missing_message)
    return _openml_files.read_table(folder, data_id, path, verify_md5=verify_checksums, target=target)


def _preprocess_openml(
    table: _openml_files.RawTable, name: str, encoding: str, scaling: str, missing: str
) -> LoadedDataset:
    return preprocess(
        table, name=name, source=table.path, encoding=encoding, scaling=scaling, missing=missing,
        column_word=f"{table.path}: attribute", label_word=f"{table.path}: the class attribute {table.target!r}",
    )


def _require_openml_readers(title: str) -> None:
    import_optional("pandas", f"{title} (reading OpenML files)")
    import_optional("arff", f"{title} (reading ARFF headers)", distribution="liac-arff")


def _require_packages(spec: DatasetSpec) -> None:
    """Import what loading ``spec`` needs, or raise :class:`MissingDependencyError` naming the extra."""
    if spec.openml_id is None:
        import_optional("torchvision.datasets", f"The {spec.title} dataset", distribution="torchvision")
    else:
        _require_openml_readers(f"The {spec.title} dataset")


def is_cached(name: str, cache_dir: str | os.PathLike | None = None) -> bool:
    """Whether the files of ``name`` are in its cache directory (they are not opened)."""
    spec = get_spec(name)
    root = resolve_cache_dir(spec.name, cache_dir)
    if spec.openml_id is None:
        folder = root / "cifar-10-batches-py"
        return (folder / "test_batch").is_file() and (folder / "batches.meta").is_file()
    folder = _openml_files.dataset_dir(root, spec.openml_id)
    return (folder / "description.xml").is_file() and _openml_files.data_file(folder, spec.openml_id) is not None


def _missing_message(spec: DatasetSpec, root: Path) -> str:
    how = f"`bandit-gym download {spec.name} --cache-dir DIR` (or pass download=True)"
    if spec.openml_id is not None:
        return _openml_missing_message(f"{spec.title} (OpenML dataset {spec.openml_id})", spec.openml_id, root, how)
    return (
        f"{spec.title} (torchvision) is not in the cache directory {root / 'cifar-10-batches-py'} (torchvision's "
        "CIFAR10 layout: test_batch and batches.meta). bandit-gym never downloads unless asked: on a machine with "
        f"internet access run {how}, then copy DIR to this machine and pass cache_dir=DIR or set "
        f"{CIFAR10_ROOT_ENV_VAR}=DIR."
    )


def _openml_missing_message(title: str, data_id: int, root: Path, how: str) -> str:
    folder = _openml_files.dataset_dir(root, data_id)
    return (
        f"{title} is not in the cache directory {root} (looked for {folder}/description.xml and dataset.arff or "
        f"dataset_{data_id}.pq). bandit-gym never downloads unless asked: on a machine with internet access run "
        f"{how}, then copy DIR to this machine and pass cache_dir=DIR or set OPENML_CACHE_DIR=DIR."
    )


def download_dataset(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Download ``name`` into ``cache_dir`` (see :func:`resolve_cache_dir`); return the dataset folder.

    OpenML data are fetched by id with a single try (no retry loop) and stored as
    ``description.xml`` + ``dataset.arff``, the layout :func:`load_dataset` reads.
    """
    spec = get_spec(name)
    root = resolve_cache_dir(spec.name, cache_dir)
    _require_packages(spec)
    if spec.openml_id is not None:
        return _download_openml_or_explain(spec.title, spec.openml_id, root)
    from bandit_gym.datasets import _cifar

    try:
        return _cifar.download_cifar10(root)
    except Exception as exc:
        raise DatasetNotFoundError(_download_failed(spec.title, root, exc)) from exc


def _download_failed(title: str, root: Path, exc: Exception) -> str:
    return (
        f"could not download {title} into {root}: {type(exc).__name__}: {exc}. "
        "Check the internet connection, or download on another machine and copy the directory."
    )


def _download_openml_or_explain(title: str, data_id: int, root: Path) -> Path:
    import_optional("openml", f"Downloading {title}")
    try:
        return _download_openml(data_id, root)
    except Exception as exc:
        raise DatasetNotFoundError(_download_failed(title, root, exc)) from exc


def _download_openml(dataset_id: int, root: Path) -> Path:
    import openml

    config = openml.config
    saved = (config.get_config_as_dict()["cachedir"], config.retry_policy, config.connection_n_retries)
    saved_skip = os.environ.get(config.OPENML_SKIP_PARQUET_ENV_VAR)
    root.mkdir(parents=True, exist_ok=True)
    try:
        config.set_root_cache_directory(root)
        config.set_retry_policy("human", 1)
        os.environ[config.OPENML_SKIP_PARQUET_ENV_VAR] = "true"  # ARFF: the layout we read
        openml.datasets.get_dataset(dataset_id, download_data=True)
    finally:
        config.set_root_cache_directory(saved[0])
        config.set_retry_policy(saved[1], saved[2])
        if saved_skip is None:
            os.environ.pop(config.OPENML_SKIP_PARQUET_ENV_VAR, None)
        else:
            os.environ[config.OPENML_SKIP_PARQUET_ENV_VAR] = saved_skip
    return _openml_files.dataset_dir(root, dataset_id)
