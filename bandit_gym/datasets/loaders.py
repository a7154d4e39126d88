"""Load the paper's real datasets once per process, preprocessed, as torch tensors.

UCI data (Shuttle, MagicTelescope, Mushroom, Covertype) come from an OpenML cache
directory, looked up by integer OpenML id (never by name: that asks the server
even when the files are cached); CIFAR10's test split comes from torchvision's
layout. Loading never downloads unless ``download=True`` is passed; a missing
dataset raises :class:`DatasetNotFoundError` at once, naming the dataset, the
directory searched and the ``bandit-gym download`` command that fills it.
See ``docs/datasets.md`` for the preprocessing.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bandit_gym.datasets import _openml_files
from bandit_gym.datasets.errors import (
    DatasetFileError,
    DatasetIntegrityError,
    DatasetNotFoundError,
    import_optional,
)
from bandit_gym.datasets.tabular import LoadedDataset, check_options, preprocess, scale


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset comes from, and what its published version holds (checked on every load).

    ``feature_names``, ``target`` and ``class_counts`` are None where only the counts are published.
    """

    name: str
    title: str
    openml_id: int | None  # None: torchvision
    n_classes: int
    n_rows: int
    n_features: int  # after the target, the row id and ignored attributes are dropped
    feature_names: tuple[str, ...] | None = None
    target: str | None = None
    class_counts: tuple[tuple[str, int], ...] | None = None  # (class, rows) in arm order


# Shuttle, MagicTelescope, Mushroom: read from the shared real cache (../shared/datasets/openml_cache) and
# checked against the UCI documentation; tests/datasets/test_real_data.py re-reads them from that cache.
# Covertype: OpenML's and UCI's published size (581,012 rows, 54 attributes, 7 classes); its class counts
# are not checked here. CIFAR10's test split: 10,000 images, exactly 1,000 per class (its documentation).
_MUSHROOM_ATTRIBUTES = (
    "cap-shape", "cap-surface", "cap-color", "bruises%3F", "odor", "gill-attachment", "gill-spacing", "gill-size",
    "gill-color", "stalk-shape", "stalk-root", "stalk-surface-above-ring", "stalk-surface-below-ring",
    "stalk-color-above-ring", "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat",
)
_MAGIC_ATTRIBUTES = (
    "fLength:", "fWidth:", "fSize:", "fConc:", "fConc1:", "fAsym:", "fM3Long:", "fM3Trans:", "fAlpha:", "fDist:",
)
_CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
SPECS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "shuttle", "Shuttle", 40685, 7, 58_000, 9, tuple(f"A{i}" for i in range(1, 10)), "class",
            (("1", 45586), ("2", 50), ("3", 171), ("4", 8903), ("5", 3267), ("6", 10), ("7", 13)),
        ),
        DatasetSpec(
            "magictelescope", "MagicTelescope", 1120, 2, 19_020, 10, _MAGIC_ATTRIBUTES, "class:",
            (("g", 12332), ("h", 6688)),
        ),
        DatasetSpec(
            "mushroom", "Mushroom", 24, 2, 8_124, 22, _MUSHROOM_ATTRIBUTES, "class", (("e", 4208), ("p", 3916)),
        ),
        DatasetSpec("covertype", "Covertype", 1596, 7, 581_012, 54),
        DatasetSpec(
            "cifar10", "CIFAR10", None, 10, 10_000, 3072, class_counts=tuple((c, 1000) for c in _CIFAR10_CLASSES),
        ),
    )
}
#: Environment variable for CIFAR10's torchvision ``root`` (OpenML data use ``OPENML_CACHE_DIR``).
CIFAR10_ROOT_ENV_VAR = "BANDIT_GYM_CIFAR10_ROOT"


_CACHE: dict[tuple, LoadedDataset] = {}
_LOCK = threading.RLock()


def get_spec(name: str) -> DatasetSpec:
    key = str(name).lower().replace("-", "").replace("_", "")
    if key not in SPECS:
        raise ValueError(f"dataset must be one of {sorted(SPECS)}, got {name!r}")
    return SPECS[key]


def resolve_cache_dir(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory searched for ``name``: ``cache_dir``, else the env variable, else the default.

    OpenML data: ``OPENML_CACHE_DIR``, else openml's configured cache directory.
    CIFAR10 (torchvision ``root``): ``BANDIT_GYM_CIFAR10_ROOT``, else ``~/.cache/bandit_gym/torchvision``.
    """
    spec = get_spec(name)
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    if spec.openml_id is None:
        return Path(os.environ.get(CIFAR10_ROOT_ENV_VAR, "~/.cache/bandit_gym/torchvision")).expanduser()
    if "OPENML_CACHE_DIR" in os.environ:
        return Path(os.environ["OPENML_CACHE_DIR"]).expanduser()
    return _openml_files.default_cache_dir()


def load_dataset(
    name: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    encoding: str = "ordinal",
    scaling: str = "l2",
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
    check_options(encoding, scaling)
    _require_packages(spec)
    root = resolve_cache_dir(spec.name, cache_dir).resolve()
    key = (spec.name, str(root), encoding, scaling, bool(verify_checksums))
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
                if not is_cached(spec.name, root):
                    raise DatasetNotFoundError(_missing_message(spec, root))
                folder = _openml_files.dataset_dir(root, spec.openml_id)
                path = _openml_files.data_file(folder, spec.openml_id)
                table = _openml_files.read_table(folder, spec.openml_id, path, verify_md5=verify_checksums)
                if verify_checksums:
                    check_published(spec, path, table.feature_names, table.target, table.labels, table.class_names)
                data = preprocess(  # the named datasets impute (Mushroom's missing stalk-root is a value)
                    table, name=spec.name, source=path, encoding=encoding, scaling=scaling, missing="impute",
                    column_word=f"{path}: attribute", label_word=f"{path}: the class attribute",
                )
            if len(data.class_names) != spec.n_classes:
                raise DatasetFileError(
                    f"{data.source}: {spec.title} should have {spec.n_classes} classes, found {list(data.class_names)}"
                )
            _CACHE[key] = data
        return _CACHE[key]


def _require_packages(spec: DatasetSpec) -> None:
    """Import what loading ``spec`` needs, or raise :class:`MissingDependencyError` naming the extra."""
    if spec.openml_id is None:
        import_optional("torchvision.datasets", f"The {spec.title} dataset", distribution="torchvision")
    else:
        import_optional("pandas", f"The {spec.title} dataset (reading OpenML files)")
        import_optional("arff", f"The {spec.title} dataset (reading ARFF headers)", distribution="liac-arff")


def check_published(
    spec: DatasetSpec,
    path: Path,
    feature_names: list[str] | tuple[str, ...],
    target: str | None,
    labels: np.ndarray,
    class_names: list[str] | tuple[str, ...],
) -> None:
    """Refuse data that are not the published ``spec``: compare columns, target, rows and class counts.

    Raises:
        DatasetIntegrityError: Naming ``path``, every figure that differs, what was expected and what was found.
    """
    problems = []
    if spec.target is not None and target != spec.target:
        problems.append(f"class attribute {spec.target!r}, found {target!r}")
    if spec.feature_names is not None and tuple(feature_names) != spec.feature_names:
        missing = [n for n in spec.feature_names if n not in feature_names]
        unexpected = [n for n in feature_names if n not in spec.feature_names]
        if missing or unexpected:
            what = f"missing {missing}" + (f", unexpected {unexpected}" if unexpected else "")
        else:
            what = f"in the order {list(feature_names)}"
        problems.append(f"{len(spec.feature_names)} feature columns, found {len(feature_names)}: {what}")
    elif len(feature_names) != spec.n_features:
        problems.append(f"{spec.n_features} feature columns, found {len(feature_names)}")
    if len(labels) != spec.n_rows:
        problems.append(f"{spec.n_rows:,} rows, found {len(labels):,}")
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=len(class_names)).tolist()
    found = tuple(zip((str(c) for c in class_names), counts, strict=True))
    if spec.class_counts is not None and found != spec.class_counts:
        problems.append(f"rows per class {dict(spec.class_counts)}, found {dict(found)}")
    elif len(class_names) != spec.n_classes:
        problems.append(f"{spec.n_classes} classes, found {len(class_names)} {list(class_names)}")
    if problems:
        source = "torchvision" if spec.openml_id is None else f"OpenML {spec.openml_id}"
        raise DatasetIntegrityError(
            f"{path} is not the published {spec.title} dataset ({source}): expected "
            + "; expected ".join(problems)
            + f". The file is truncated, damaged or edited: delete it and run `bandit-gym download {spec.name}`; "
            "to load a modified copy on purpose, pass verify_checksums=False."
        )


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
    if spec.openml_id is None:
        where = f"{root / 'cifar-10-batches-py'} (torchvision's CIFAR10 layout: test_batch and batches.meta)"
        variable = CIFAR10_ROOT_ENV_VAR
    else:
        folder = _openml_files.dataset_dir(root, spec.openml_id)
        where = f"{root} (looked for {folder}/description.xml and dataset.arff or dataset_{spec.openml_id}.pq)"
        variable = "OPENML_CACHE_DIR"
    source = "torchvision" if spec.openml_id is None else f"OpenML dataset {spec.openml_id}"
    return (
        f"{spec.title} ({source}) is not in the cache directory {where}. bandit-gym never downloads unless "
        f"asked: on a machine with internet access run `bandit-gym download {spec.name} --cache-dir DIR` "
        f"(or pass download=True), then copy DIR to this machine and pass cache_dir=DIR or set {variable}=DIR."
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
        import_optional("openml", f"Downloading {spec.title}")
    try:
        if spec.openml_id is None:
            from bandit_gym.datasets import _cifar

            return _cifar.download_cifar10(root)
        return _download_openml(spec.openml_id, root)
    except Exception as exc:
        raise DatasetNotFoundError(
            f"could not download {spec.title} into {root}: {type(exc).__name__}: {exc}. "
            "Check the internet connection, or download on another machine and copy the directory."
        ) from exc


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
