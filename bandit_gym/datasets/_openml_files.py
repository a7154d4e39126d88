"""Read a dataset from an OpenML cache directory: no network, no writes.

The layout is the one ``openml`` (0.15) uses::

    <root>/org/openml/www/datasets/<id>/description.xml
    <root>/org/openml/www/datasets/<id>/dataset.arff        (or dataset_<id>.pq)

We parse these files ourselves instead of calling ``openml.datasets.get_dataset``:
``openml`` writes pickles next to the data on first load (which fails on a
read-only cache, e.g. a shared cluster mount), may go to the server for files it
considers missing (parquet, features), and reports damaged files with a
traceback from deep inside its parser. Reading the files directly never touches
the network or the cache directory, and every failure names the file.

ARFF headers are parsed with ``liac-arff`` (an ``openml`` dependency); the data
section, which can be large (Covertype: 581,012 rows), with ``pandas.read_csv``.
Both are optional (the ``datasets`` extra) and imported only when a file is read,
so that this module, and ``bandit_gym`` with it, imports on the base install.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import warnings
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bandit_gym.datasets.errors import DatasetFileError, import_optional
from bandit_gym.datasets.tabular import Table

if TYPE_CHECKING:
    import pandas as pd

#: Subdirectory of the cache root that holds files of the public server www.openml.org.
SERVER_SUBDIR = Path("org", "openml", "www")
_NS = "{http://openml.org/openml}"
_NUMERIC = {"NUMERIC", "REAL", "INTEGER"}
_EXTRA = "\0extra field"  # a column name no ARFF attribute has


@dataclass
class RawTable(Table):
    """A dataset as read from the cache (see :class:`Table`), with its data file and class attribute."""

    path: Path | None = None
    target: str = ""
    title: str | None = None  # the description's name


def dataset_dir(root: Path, dataset_id: int) -> Path:
    """Folder of dataset ``dataset_id`` in the cache rooted at ``root``."""
    return Path(root) / SERVER_SUBDIR / "datasets" / str(dataset_id)


def default_cache_dir() -> Path:
    """openml's cache directory without importing openml (a 2-4 s import), as openml 0.15 resolves it.

    If openml is already imported its live configuration wins; else its config file's ``cachedir``;
    else ``$XDG_CACHE_HOME/openml`` or ``~/.cache/openml`` (``~/.openml`` off Linux).
    """
    if "openml" in sys.modules:
        return Path(sys.modules["openml"].config.get_config_as_dict()["cachedir"]).expanduser()
    linux = platform.system().lower() == "linux"
    if linux:
        config_home = Path(os.environ.get("XDG_CONFIG_HOME", "~/.config")).expanduser()
        config_file = config_home / "openml" / "config"
    else:
        config_file = Path("~/.openml/config").expanduser()
    try:
        for line in config_file.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cachedir" and value.strip():
                return Path(value.strip()).expanduser()
    except OSError:
        pass
    if not linux:
        return Path("~/.openml").expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "openml"


def data_file(folder: Path, dataset_id: int) -> Path | None:
    """The data file of a cached dataset (ARFF preferred, then parquet), or None."""
    for candidate in ("dataset.arff", f"dataset_{dataset_id}.pq", "dataset.pq"):
        if (folder / candidate).is_file():
            return folder / candidate
    return None


def read_description(path: Path) -> dict[str, object]:
    """The fields of ``description.xml`` that loading needs."""
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError, UnicodeDecodeError) as exc:
        raise DatasetFileError(
            f"{path}: not a readable OpenML dataset description ({exc}); delete it and download again"
        ) from None

    def text(tag: str) -> str | None:
        node = root.find(_NS + tag)
        return node.text.strip() if node is not None and node.text else None

    return {
        "name": text("name"),
        "target": text("default_target_attribute"),
        "row_id": text("row_id_attribute"),
        "ignore": [n.text.strip() for n in root.findall(_NS + "ignore_attribute") if n.text],
        "md5": text("md5_checksum"),
    }


def read_table(
    folder: Path, dataset_id: int, path: Path, verify_md5: bool = True, target: str | None = None
) -> RawTable:
    """Read the dataset in ``folder`` whose data file is ``path``; the class attribute is ``target``.

    With ``verify_md5``, an ARFF file is checked against the md5 sum of ``description.xml`` if it has one.
    ``target`` None: the description's ``default_target_attribute``. A numeric class attribute must
    hold integers (classes); anything else is refused as a regression target.
    """
    description = read_description(folder / "description.xml")
    origin = "the target argument" if target is not None else "description.xml"
    target = target if target is not None else description["target"]
    if target is None:
        raise DatasetFileError(
            f"{folder / 'description.xml'}: the description names no default_target_attribute; pass target="
        )
    if path.suffix == ".arff":
        if verify_md5 and description["md5"]:
            _check_md5(path, description["md5"])
        names, kinds, frame = _read_arff(path)
    else:
        names, kinds, frame = _read_parquet(path)
    drop = {description["row_id"], *description["ignore"]} - {None, target}
    if target not in names:
        raise DatasetFileError(f"{path}: target attribute {target!r} (from {origin}) is not among {names}")
    table = RawTable([], [], [], np.empty(0, np.int64), [], path=path, target=target, title=description["name"])
    for name, kind in zip(names, kinds, strict=True):
        if name in drop:
            continue
        values, categories = _convert(path, name, kind, frame[name])
        if name == target:
            if categories is None:  # a numeric target: classes are its distinct values, which must be integers
                known = values[~np.isnan(values)]
                fractional = known[known != np.round(known)]
                if fractional.size:
                    raise ValueError(
                        f"{path}: the target attribute {target!r} holds {fractional[0]:g}, not a class label "
                        "(a regression dataset?); pass target= a nominal or integer attribute"
                    )
                classes = np.unique(known)
                codes = np.searchsorted(classes, np.nan_to_num(values, nan=0.0))
                values = np.where(np.isnan(values), -1, codes)
                categories = [f"{c:g}" for c in classes]
            if (values < 0).any():
                row = int(np.argmax(values < 0))
                raise DatasetFileError(f"{path}: data row {row} has no class label ('?'); labels may not be missing")
            table.labels, table.class_names = values.astype(np.int64), categories
        else:
            table.feature_names.append(name)
            table.columns.append(values)
            table.categories.append(categories)
    return table


def _check_md5(path: Path, expected: str) -> None:
    digest = hashlib.md5()
    with path.open("rb") as fh:
        for piece in iter(lambda: fh.read(1 << 22), b""):
            digest.update(piece)
    if digest.hexdigest() != expected:
        raise DatasetFileError(
            f"{path}: md5 {digest.hexdigest()} differs from the description's {expected} "
            "(a partial or damaged download); delete the file and download again"
        )


def _pandas():
    return import_optional("pandas", "Reading an OpenML cache file")


def _read_arff(path: Path) -> tuple[list[str], list[object], pd.DataFrame]:
    """Header through liac-arff, data section through pandas; every failure names the file."""
    arff = import_optional("arff", "Reading an ARFF header", distribution="liac-arff")  # installed with openml
    pd = _pandas()

    header = []
    try:
        fh = path.open("r", encoding="utf-8")
    except OSError as exc:
        raise DatasetFileError(f"{path}: cannot open ({exc})") from None
    with fh:
        try:
            for line in fh:
                header.append(line)
                if line.strip().upper().startswith("@DATA"):
                    break
            else:
                raise DatasetFileError(f"{path}: no @DATA section (the file is truncated or not ARFF)")
            try:
                attributes = arff.loads("".join(header))["attributes"]
            except Exception as exc:  # liac-arff raises its own ArffException family and others
                raise DatasetFileError(f"{path}: malformed ARFF header ({exc})") from None
            names = [a[0] for a in attributes]
            kinds = [a[1] if isinstance(a[1], list) else str(a[1]).upper() for a in attributes]
            for name, kind in zip(names, kinds, strict=True):
                if not isinstance(kind, list) and kind not in _NUMERIC:
                    raise DatasetFileError(
                        f"{path}: attribute {name!r} has type {kind}; only numeric and nominal attributes are supported"
                    )
            # Nominal columns are read as categories (memory-light). Only '?' means missing, so a field
            # that is not there reads as '': a short row shows as '' in the last column, a long one as a
            # value in one extra column (or a ParserError, or a ParserWarning from the first row).
            dtypes = {
                n: ("category" if isinstance(k, list) or n == names[-1] else "float64")
                for n, k in zip(names, kinds, strict=True)
            }
            dtypes[_EXTRA] = "category"
            na_values = {n: ["?"] for n in names[:-1]}
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                frame = pd.read_csv(
                    fh, header=None, names=[*names, _EXTRA], index_col=False, dtype=dtypes, na_values=na_values,
                    keep_default_na=False, quotechar="'", skipinitialspace=True, comment="%", engine="c",
                )
        except DatasetFileError:
            raise
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.ParserWarning) as exc:
            raise DatasetFileError(f"{path}: cannot parse the ARFF data ({exc}); the file is damaged") from None
    if len(frame) and str(frame.iloc[0, 0]).startswith("{"):
        raise DatasetFileError(f"{path}: sparse ARFF data is not supported")
    for column, what in ((names[-1], "fewer"), (_EXTRA, "more")):
        bad = (frame[column] == "").to_numpy() if what == "fewer" else (frame[column] != "").to_numpy()
        if bad.any():
            raise DatasetFileError(
                f"{path}: data row {int(np.argmax(bad))} has {what} than {len(names)} fields "
                "(the file is truncated or damaged); delete it and download again"
            )
    frame = frame.drop(columns=_EXTRA)
    return names, kinds, frame


def _read_parquet(path: Path) -> tuple[list[str], list[object], pd.DataFrame]:
    pd = _pandas()
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types (ArrowInvalid, OSError, ...)
        raise DatasetFileError(f"{path}: cannot read the parquet file ({exc}); delete it and download again") from None
    kinds: list[object] = []
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column) and not isinstance(column.dtype, pd.CategoricalDtype):
            kinds.append("NUMERIC")
        else:  # parquet keeps no declared value order: sort, numerically when every value is a number
            # A categorical column declares its categories, used or not (a partial file uses fewer).
            declared = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.dropna()
            values = [str(v) for v in pd.unique(declared.astype(str))]
            numeric = pd.to_numeric(pd.Series(values), errors="coerce")
            kinds.append(sorted(values, key=float) if numeric.notna().all() else sorted(values))
    frame = frame.astype({n: "category" for n, k in zip(frame.columns, kinds, strict=True) if isinstance(k, list)})
    return [str(n) for n in frame.columns], kinds, frame


def _convert(path: Path, name: str, kind: object, column: pd.Series) -> tuple[np.ndarray, list[str] | None]:
    """One column as float64 (numeric) or int64 codes into the declared values (nominal)."""
    pd = _pandas()
    if not isinstance(kind, list):
        if isinstance(column.dtype, pd.CategoricalDtype):  # the last column, read as text
            text = column.astype(str)
            values = pd.to_numeric(text.where(text != "?"), errors="coerce")
            bad = values.isna() & (text != "?")
            if bad.any():
                raise DatasetFileError(f"{path}: attribute {name!r} is numeric but holds {text[bad].iloc[0]!r}")
            return values.to_numpy(np.float64), None
        return column.to_numpy(np.float64), None
    declared = [str(v) for v in kind]
    found = [str(c) for c in column.cat.categories]
    unknown = sorted(set(found) - set(declared) - {"?"})
    if unknown:
        raise DatasetFileError(
            f"{path}: attribute {name!r} holds {unknown[:5]}, not among its declared values {declared}"
        )
    lookup = np.array([declared.index(c) if c in declared else -1 for c in found] + [-1], dtype=np.int64)
    codes = column.cat.codes.to_numpy().astype(np.int64)  # -1 for NaN -> lookup[-1] = -1
    return lookup[codes], declared
