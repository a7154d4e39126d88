"""A user's own labelled data (numpy arrays, a pandas DataFrame or an sklearn ``Bunch``) as a dataset.

::

    from sklearn.datasets import load_iris
    from bandit_gym.datasets import prepare_dataset

    data = prepare_dataset(load_iris())                       # a Bunch: its data, target and names
    data = prepare_dataset(frame, "label", encoding="onehot", missing="impute")  # y: the label column

The result is the :class:`~bandit_gym.datasets.LoadedDataset` that the named
datasets produce, through the same :func:`~bandit_gym.datasets.tabular.preprocess`.
Nothing here imports pandas or sklearn: their objects are recognised by what they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bandit_gym.datasets.tabular import LoadedDataset, Table, check_options, preprocess
from bandit_gym.validation import short_repr


def prepare_dataset(
    X: Any,
    y: Any = None,
    *,
    name: str = "custom",
    feature_names: Sequence[str] | None = None,
    encoding: str = "ordinal",
    scaling: str = "l2",
    missing: str = "error",
) -> LoadedDataset:
    """Turn features ``X`` and class labels ``y`` into a preprocessed dataset, checked before any round.

    Columns: numbers and booleans are numeric; text (and pandas ``category``) columns are nominal,
    encoded by ``encoding`` over their values (a ``category``'s declared order, else sorted).
    Classes: arm ``j`` is the ``j``-th class in sorted order (a pandas ``category``: its declared
    order; an sklearn ``Bunch``'s integer targets: its ``target_names``).

    Args:
        X: A 2-D array-like (numpy, torch on CPU, nested lists), a pandas DataFrame, or an sklearn
            ``Bunch`` holding ``data`` and ``target`` (then ``y`` must be None).
        y: Class labels, one per row of ``X``: integers, strings or booleans (a 1-D array-like or a
            pandas Series; a column of them, an ``(n, 1)`` array or a one-column DataFrame, is taken as
            its one column, as scikit-learn takes it), or, when ``X`` is a DataFrame, the name of its
            column that holds them (that column is then not a feature).
        name: A name for the dataset.
        feature_names: Names of the columns of an array ``X``, one distinct ``str`` per column (default:
            a ``Bunch``'s ``feature_names``, else ``x0``, ``x1``, ...). A DataFrame names its own columns.
        encoding, scaling: As for the named datasets: see :func:`bandit_gym.datasets.tabular.preprocess`.
        missing: ``"error"`` (default): refuse NaN/None; ``"impute"``: numeric values take the column
            mean, nominal ones a value of their own (the named datasets' treatment); ``"drop"``: drop
            those rows.

    Raises:
        ValueError: Naming the argument, the column or row and what is accepted: ``X`` and ``y`` of
            different lengths, a column that cannot be encoded (dates, mixed numbers and text, other
            objects), missing values with ``missing="error"``, non-finite values, labels that are not
            classes (non-integer numbers), or fewer than 2 classes.
    """
    check_options(encoding, scaling, missing)
    target_names = None
    if _is_bunch(X):
        if y is not None:
            raise ValueError("y must be None when X is an sklearn Bunch (its target holds the labels), got "
                             f"{type(y).__name__}")
        bunch = X
        X, y, target_names = bunch["data"], bunch["target"], bunch.get("target_names")
        if feature_names is None:
            feature_names = bunch.get("feature_names")
    elif y is None:
        raise ValueError("y (the class labels) is required unless X is an sklearn Bunch")
    elif isinstance(y, str):
        X, y = _split_label_column(X, y)
    feature_names, columns, categories = _features(X, feature_names)
    labels, class_names = _labels(y, target_names)
    n_rows = len(columns[0])
    if len(labels) != n_rows:
        raise ValueError(f"X and y must have the same number of rows, got X with {n_rows} and y with {len(labels)}")
    table = Table(feature_names, columns, categories, labels, class_names)
    return preprocess(table, name=name, encoding=encoding, scaling=scaling, missing=missing)


def _split_label_column(frame: Any, column: str) -> tuple[Any, Any]:
    """``(frame without column, frame[column])``: ``y`` given as the name of a DataFrame's label column."""
    if not _is_pandas(frame, "DataFrame"):
        raise ValueError(f"y may be a column name ({column!r}) only when X is a pandas DataFrame, got X of type "
                         f"{type(frame).__name__}; pass the labels themselves")
    names = [str(c) for c in frame.columns]
    if names.count(column) != 1:
        what = "several columns" if names.count(column) else "no column"
        raise ValueError(f"y={column!r} names {what} of X; X's columns: {names}")
    position = names.index(column)
    return frame.drop(columns=frame.columns[position]), frame.iloc[:, position]


def _is_bunch(x: Any) -> bool:
    return isinstance(x, dict) and "data" in x and "target" in x


def _is_pandas(x: Any, kind: str) -> bool:
    return type(x).__module__.startswith("pandas") and type(x).__name__ == kind


def _features(x: Any, names: Any) -> tuple[list[str], list[np.ndarray], list[list[str] | None]]:
    """The columns of ``X`` as :class:`Table` columns, with their names."""
    if _is_pandas(x, "DataFrame"):
        if names is not None:
            raise ValueError("feature_names must be None when X is a pandas DataFrame (its columns are named); "
                             "rename the columns instead")
        pairs = [(str(c), x.iloc[:, j]) for j, c in enumerate(x.columns)]
    else:
        if hasattr(x, "toarray"):
            raise ValueError(f"X is a sparse matrix ({type(x).__name__}); pass X.toarray()")
        if _is_pandas(x, "Series"):
            raise ValueError("X must be 2-D (rows, features), got a pandas Series; pass X.to_frame()")
        array = np.asarray(x)
        if array.dtype.kind in "US" and not isinstance(x, np.ndarray):  # nested lists of numbers and text
            array = np.asarray(x, dtype=object)  # keep each value's own type
        if array.ndim != 2:
            raise ValueError(f"X must be 2-D (rows, features), got shape {array.shape}"
                             + ("; for one feature pass X.reshape(-1, 1)" if array.ndim == 1 else ""))
        names = [f"x{j}" for j in range(array.shape[1])] if names is None else _names(names, array.shape[1])
        pairs = list(zip(names, array.T, strict=True))
    if not pairs or len(pairs[0][1]) == 0:
        raise ValueError(f"X must have at least one row and one column, got {len(pairs)} columns")
    columns, categories = [], []
    for column_name, values in pairs:
        column, cats = _column(f"X column {column_name!r}", values)
        columns.append(column)
        categories.append(cats)
    return [name for name, _ in pairs], columns, categories


def _names(names: Any, n_columns: int) -> list[str]:
    """``feature_names`` checked: a list, tuple or 1-D array of ``n_columns`` distinct ``str``."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray)) or np.ndim(names) != 1:
        raise ValueError(f"feature_names must be a list of {n_columns} column names (str), got {short_repr(names)} "
                         f"of type {type(names).__name__}")
    names = list(names)
    if len(names) != n_columns:
        raise ValueError(f"feature_names has {len(names)} names for the {n_columns} columns of X")
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise ValueError(f"feature_names must hold str names, got {short_repr(name)} of type "
                             f"{type(name).__name__} at index {index}")
        if name in seen:
            raise ValueError(f"feature_names must be distinct, got {name!r} at indices {seen[name]} and {index}")
        seen[name] = index
    return [str(name) for name in names]


def _column(what: str, values: Any) -> tuple[np.ndarray, list[str] | None]:
    """float64 with NaN (numeric) or int64 codes with -1 (nominal, with its categories)."""
    if _is_pandas(values, "Series"):
        kind = values.dtype.kind if isinstance(values.dtype, np.dtype) else getattr(values.dtype, "kind", "O")
        if type(values.dtype).__name__ == "CategoricalDtype":
            categories = [str(c) for c in values.cat.categories]
            return values.cat.codes.to_numpy().astype(np.int64), categories
        if kind in "biuf":  # numpy and pandas' nullable numbers and booleans (pd.NA becomes NaN)
            return values.astype("float64").to_numpy(dtype=np.float64, na_value=np.nan), None
        values = values.to_numpy(dtype=object) if kind not in "mM" else values.to_numpy()
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind in "biuf":
        return values.astype(np.float64), None
    if kind in "mM":
        raise ValueError(f"{what} holds dates or durations ({values.dtype}); convert them to numbers first")
    if kind in "US":
        values = values.astype(object)
    if kind not in "OUS":
        raise ValueError(f"{what} has dtype {values.dtype}, which cannot be encoded; pass numbers or text")
    missing = np.array([_is_missing(v) for v in values], dtype=bool)  # (N,)
    is_number = ~missing & np.array([isinstance(v, (bool, int, float, np.number)) for v in values], dtype=bool)
    is_text = np.array([isinstance(v, str) for v in values], dtype=bool)
    other = ~(missing | is_number | is_text)
    if other.any():
        row = int(np.argmax(other))
        raise ValueError(f"{what} holds {values[row]!r} ({type(values[row]).__name__}) at row {row}, which cannot "
                         "be encoded; columns must hold numbers or text")
    if is_number.any() and is_text.any():
        a, b = int(np.argmax(is_number)), int(np.argmax(is_text))
        raise ValueError(f"{what} mixes numbers and text (row {a}: {values[a]!r}, row {b}: {values[b]!r}); "
                         "convert it to one kind (a text marker for missing values: replace it by None)")
    if is_text.any():
        categories = sorted({str(v) for v in values[is_text]})
        lookup = {c: i for i, c in enumerate(categories)}
        codes = [-1 if m else lookup[str(v)] for v, m in zip(values, missing, strict=True)]
        return np.array(codes, np.int64), categories
    return np.array([np.nan if m else float(v) for v, m in zip(values, missing, strict=True)], np.float64), None


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(np.isnan(v))
    return type(v).__name__ in ("NAType", "NaTType")  # pandas' missing markers


def _labels(y: Any, target_names: Any) -> tuple[np.ndarray, list[str]]:
    """int64 codes (-1 for missing) into the class names."""
    if _is_pandas(y, "DataFrame"):
        if y.shape[1] != 1:
            raise ValueError(f"y must be one column of labels, got a DataFrame with {y.shape[1]} columns")
        y = y.iloc[:, 0]
    if _is_pandas(y, "Series") and type(y.dtype).__name__ == "CategoricalDtype":
        y = y.array  # the pandas.Categorical behind the Series
    if _is_pandas(y, "Categorical"):  # classes: the declared categories that occur, in declared order
        codes = np.asarray(y.codes, dtype=np.int64)  # (N,) -1 for missing
        used = sorted(set(codes[codes >= 0].tolist()))
        new_code = np.full(len(y.categories) + 1, -1, np.int64)  # the extra last entry maps code -1 to -1
        new_code[used] = np.arange(len(used))
        return new_code[codes], [str(y.categories[i]) for i in used]
    array = np.asarray(y.to_numpy(dtype=object) if _is_pandas(y, "Series") and y.dtype.kind not in "biufUS" else y)
    if array.ndim == 2 and array.shape[1] == 1:  # a column of labels, (n, 1): its one column (documented)
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {array.shape}")
    values, categories = _column("y", array)
    if categories is not None:  # text labels
        return values, categories
    known = ~np.isnan(values)
    if not np.all(values[known] == np.round(values[known])):
        example = values[known][values[known] != np.round(values[known])][0]
        raise ValueError(f"y holds {example}, not a class label; a classification bandit needs integer, text or "
                         "boolean labels (is y a regression target?)")
    classes = np.unique(values[known]).astype(np.int64)  # (K,) sorted
    codes = np.full(len(values), -1, np.int64)
    codes[known] = np.searchsorted(classes, values[known].astype(np.int64))
    if array.dtype.kind == "b":
        return codes, [str(bool(c)) for c in classes]
    if target_names is not None and len(classes) and classes.min() >= 0 and classes.max() < len(target_names):
        return codes, [str(target_names[c]) for c in classes]
    return codes, [str(c) for c in classes]
