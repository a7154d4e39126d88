"""A labelled table to the preprocessed data every dataset env reads: missing values, encoding, scaling.

The named datasets (:func:`bandit_gym.datasets.load_dataset`) and a user's own
data (:func:`bandit_gym.datasets.prepare_dataset`) both end in :func:`preprocess`,
so a user's table gets the same options and the same treatment as the UCI files.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ENCODINGS = ("ordinal", "onehot")
SCALINGS = ("l2", "standardize", "none")
#: What to do with missing values: refuse them, impute them (as the named datasets do), or drop their rows.
MISSING = ("error", "impute", "drop")

_LOCK = threading.RLock()


@dataclass
class Table:
    """A labelled table before preprocessing.

    ``columns[i]`` is float64 with NaN for missing values if ``categories[i]`` is None
    (numeric), else int64 codes into ``categories[i]`` with -1 for missing (nominal).
    ``labels`` are int64 codes into ``class_names``, -1 for missing.
    """

    feature_names: list[str]
    columns: list[np.ndarray]
    categories: list[list[str] | None]
    labels: np.ndarray
    class_names: list[str]


@dataclass(eq=False)
class LoadedDataset:
    """A preprocessed dataset shared by every env of the process that uses it."""

    name: str
    features: torch.Tensor  # (N, d) float32, CPU
    labels: torch.Tensor  # (N,) int64 arm indices
    class_names: tuple[str, ...]  # class_names[j] is the label of arm j
    feature_names: tuple[str, ...]
    source: Path | None  # the data file; None for data given in memory
    feature_low: float
    feature_high: float
    _by_device: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict, repr=False)

    @property
    def n_rows(self) -> int:
        return self.features.shape[0]

    @property
    def dim(self) -> int:
        return self.features.shape[1]

    def __getstate__(self) -> dict:
        """Pickle the data, not the copies on devices (they are made again on first use)."""
        return {**self.__dict__, "_by_device": {}}

    def on(self, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features, labels)`` on ``device``, copied there once and then shared."""
        device = torch.device(device)
        with _LOCK:
            if device not in self._by_device:
                self._by_device[device] = (self.features.to(device), self.labels.to(device))
            return self._by_device[device]


def check_options(encoding: str, scaling: str, missing: str = "impute") -> None:
    """Raise ``ValueError`` naming the first preprocessing option that is not accepted."""
    for argument, value, accepted in (("encoding", encoding, ENCODINGS), ("scaling", scaling, SCALINGS),
                                      ("missing", missing, MISSING)):
        if value not in accepted:
            raise ValueError(f"{argument} must be one of {accepted}, got {value!r}")


def preprocess(
    table: Table,
    *,
    name: str,
    source: Path | None = None,
    encoding: str = "ordinal",
    scaling: str = "l2",
    missing: str = "error",
    column_word: str = "X column",
    label_word: str = "y",
) -> LoadedDataset:
    """Missing values, then encoding, then scaling; the result as float32/int64 tensors.

    Args:
        table: The columns and labels.
        name: The dataset's name (kept on the result).
        source: The file the table was read from, if any.
        encoding: Nominal columns as one ordinal code each (``"ordinal"``: the value's index in
            ``categories``, missing as one more value after them) or one 0/1 column per value
            (``"onehot"``, missing as all zeros).
        scaling: ``"l2"`` (each row to unit norm), ``"standardize"`` (each column to mean 0, std 1)
            or ``"none"``.
        missing: ``"error"``: refuse missing feature values; ``"impute"``: numeric ones take the
            column's mean over the observed values, nominal ones are a value of their own (see
            ``encoding``); ``"drop"``: drop the rows that have any. Missing labels are refused
            unless ``"drop"``.
        column_word, label_word: How messages name a column and the labels (``"X column"``, ``"y"``).

    Raises:
        ValueError: A missing value (with ``missing="error"``), fewer than 2 classes, no rows, or a
            value that is not finite; the message names the column and the first row.
    """
    check_options(encoding, scaling, missing)
    if not table.columns:
        raise ValueError(f"{name}: no feature columns besides the labels; a bandit needs at least one feature")
    labels = np.asarray(table.labels, dtype=np.int64)  # (N,)
    keep = np.ones(len(labels), dtype=bool)  # (N,)
    if (labels < 0).any():
        if missing != "drop":
            first = int(np.argmax(labels < 0))
            raise ValueError(
                f"{label_word} has {int((labels < 0).sum())} missing labels (first at row {first}); "
                "labels cannot be imputed: drop those rows, or pass missing='drop'"
            )
        keep &= labels >= 0
    for column_name, values, categories in zip(table.feature_names, table.columns, table.categories, strict=True):
        gaps = np.isnan(values) if categories is None else values < 0  # (N,)
        if gaps.any() and missing == "error":
            raise ValueError(
                f"{column_word} {column_name!r} has {int(gaps.sum())} missing values (first at row "
                f"{int(np.argmax(gaps))}); pass missing='impute' (numeric: the column mean; nominal: a value of "
                "its own) or missing='drop' (drop those rows)"
            )
        if missing == "drop":
            keep &= ~gaps
    dropped = not keep.all()
    if dropped:  # classes left without rows are no arms
        present = np.unique(labels[keep])  # (K',) sorted codes
        labels = np.searchsorted(present, labels[keep]).astype(np.int64)
        table = Table(table.feature_names, [c[keep] for c in table.columns], table.categories, labels,
                      [table.class_names[i] for i in present])
    if len(labels) == 0:
        raise ValueError(f"{label_word} has no rows" + (" left after dropping missing values" if dropped else ""))
    present = np.unique(labels)
    if len(present) < 2:
        raise ValueError(
            f"{label_word} holds one class only ({table.class_names[present[0]]!r} in all {len(labels)} rows); "
            "a classification bandit needs at least 2 classes (arms)"
        )
    x, names = _encode(table, encoding)  # (N, d)
    finite = np.isfinite(x)
    if not finite.all():
        row, col = (int(i) for i in np.argwhere(~finite)[0])
        raise ValueError(f"{column_word} {names[col]!r} holds {x[row, col]} at row {row}; features must be finite")
    x, low, high = scale(x, scaling)
    beyond = np.abs(x) > np.finfo(np.float32).max  # (N, d) what float32 features would hold as inf
    if beyond.any():
        row, col = (int(i) for i in np.argwhere(beyond)[0])
        raise ValueError(f"{column_word} {names[col]!r} holds {x[row, col]} at row {row}, beyond float32's range "
                         f"(+-3.4e38) with scaling={scaling!r}; pass scaling='l2' or 'standardize', or rescale it")
    return LoadedDataset(
        name, torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.from_numpy(labels),
        tuple(table.class_names), tuple(names), source, low, high,
    )


def _encode(table: Table, encoding: str) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as they are (missing: the column mean); nominal ones encoded (missing: see preprocess)."""
    columns, names = [], []
    for name, values, categories in zip(table.feature_names, table.columns, table.categories, strict=True):
        if categories is None:
            observed = values[~np.isnan(values)]
            fill = observed.mean() if observed.size else 0.0
            columns.append(np.where(np.isnan(values), fill, values)[:, None])
            names.append(name)
        elif encoding == "ordinal":
            columns.append(np.where(values < 0, len(categories), values).astype(np.float64)[:, None])
            names.append(name)
        else:
            columns.append((values[:, None] == np.arange(len(categories))[None, :]).astype(np.float64))
            names.extend(f"{name}={c}" for c in categories)
    return np.concatenate(columns, axis=1), names  # (N, d)


#: Rows (``"l2"``) or columns (``"standardize"``) whose largest ``|value|`` is outside ``[1/_SAFE, _SAFE]``
#: are divided by it before scaling, so that their squares neither overflow (1e300 would give an infinite
#: norm, hence all-zero features) nor underflow; the others are scaled as they are.
_SAFE = 1e100


def scale(
    x: np.ndarray, scaling: str, low: float = -np.inf, high: float = np.inf
) -> tuple[np.ndarray, float, float]:
    """Apply ``scaling`` in float64; return the data and the bounds of its values (``low, high`` if unscaled).

    Both scalings are unchanged by a positive factor per row (``"l2"``) or per column
    (``"standardize"``), so values of any finite magnitude give the same result as moderate ones.
    """
    x = np.asarray(x, dtype=np.float64)
    if scaling == "l2":  # |x_i| <= ||x|| so every value is in [-1, 1]; all-zero rows stay zero
        x = _tame(x, axis=1)
        norms = np.linalg.norm(x, axis=1, keepdims=True)  # (N, 1)
        return x / np.where(norms > 0, norms, 1.0), -1.0, 1.0
    if scaling == "standardize":  # constant columns become 0
        x = _tame(x, axis=0)
        std = x.std(axis=0)  # (d,)
        return (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0), -np.inf, np.inf
    return x, low, high


def _tame(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` with each row (``axis=1``) or column (``axis=0``) whose largest ``|value|`` is beyond ``_SAFE`` or
    below ``1 / _SAFE`` (and not 0) divided by that value; the others as they are."""
    peak = np.abs(x).max(axis=axis, keepdims=True)  # (N, 1) or (1, d)
    extreme = (peak > _SAFE) | ((peak > 0) & (peak < 1 / _SAFE))
    return x / np.where(extreme, peak, 1.0) if extreme.any() else x
