"""What the published datasets hold: sources, sizes, columns and class counts, checked on every load.

A cached file can read cleanly and still not be the published dataset (a download
cut at a row boundary, a file edited by hand); :func:`check_published` compares
what was read with the figures of :data:`SPECS` and refuses a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bandit_gym.datasets.errors import DatasetIntegrityError


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


def get_spec(name: str) -> DatasetSpec:
    """The spec of ``name`` (case, ``-`` and ``_`` ignored), or a ``ValueError`` listing the accepted names."""
    key = str(name).lower().replace("-", "").replace("_", "")
    if key not in SPECS:
        raise ValueError(f"dataset must be one of {sorted(SPECS)}, got {name!r}")
    return SPECS[key]


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


__all__ = ["SPECS", "DatasetSpec", "check_published", "get_spec"]
