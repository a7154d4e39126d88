"""Small datasets written by the tests in openml's and torchvision's cache layouts; the shared real cache.

The small stand-ins are not the published datasets, so tests load them with
``verify_checksums=False``; :func:`write_like_published` writes files that match
every published figure (columns, rows, class counts) with random values.
The real cache: ``$BANDIT_GYM_TEST_OPENML_CACHE`` if set (then it must exist),
else ``<clone>/../shared/datasets/openml_cache`` (skipped if absent).
Nothing here downloads: ``no_network`` points openml at a closed localhost port.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from bandit_gym.datasets.loaders import SPECS

REPO = Path(__file__).resolve().parents[2]


def write_openml_dataset(
    root: Path,
    dataset_id: int,
    attributes: list[tuple[str, str | list[str]]],
    rows: list[list[object]],
    *,
    target: str = "class",
    row_id: str | None = None,
    md5: str | None = None,
) -> Path:
    """Write ``description.xml`` and ``dataset.arff`` under ``root`` in openml's cache layout."""
    folder = root / "org" / "openml" / "www" / "datasets" / str(dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    extra = f"  <oml:row_id_attribute>{row_id}</oml:row_id_attribute>\n" if row_id else ""
    extra += f"  <oml:md5_checksum>{md5}</oml:md5_checksum>\n" if md5 else ""
    (folder / "description.xml").write_text(
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">\n'
        f"  <oml:id>{dataset_id}</oml:id>\n  <oml:name>test{dataset_id}</oml:name>\n  <oml:format>ARFF</oml:format>\n"
        f"  <oml:default_target_attribute>{target}</oml:default_target_attribute>\n{extra}"
        "</oml:data_set_description>\n"
    )
    lines = [f"@RELATION test{dataset_id}", ""]
    for name, kind in attributes:
        spec = "{" + ", ".join(kind) + "}" if isinstance(kind, list) else kind
        lines.append(f"@ATTRIBUTE '{name}' {spec}")
    lines += ["", "@DATA"] + [",".join(str(v) for v in row) for row in rows]
    (folder / "dataset.arff").write_text("\n".join(lines) + "\n")
    return folder


def _numeric_dataset(root: Path, dataset_id: int, n_features: int, classes: list[str], n_rows: int, seed: int,
                     row_id: bool = False) -> None:
    rng = np.random.default_rng(seed)
    labels = np.arange(n_rows) % len(classes)  # every class present
    x = rng.normal(size=(n_rows, n_features)).round(3) + labels[:, None]  # classes are separable-ish
    attributes = ([("ID", "INTEGER")] if row_id else []) + [(f"A{i}", "NUMERIC") for i in range(n_features)]
    attributes.append(("class", classes))
    rows = [([i + 1] if row_id else []) + list(x[i]) + [classes[labels[i]]] for i in range(n_rows)]
    write_openml_dataset(root, dataset_id, attributes, rows, row_id="ID" if row_id else None)


MUSHROOM_ATTRIBUTES = [("cap-shape", ["b", "x"]), ("odor", ["a", "n", "p"]), ("stalk-root", ["b", "c", "e", "r"])]
MUSHROOM_ROWS = [
    ["x", "p", "e", "p"], ["b", "a", "?", "e"], ["x", "n", "c", "e"], ["b", "p", "r", "p"],
    ["x", "a", "?", "e"], ["x", "p", "b", "p"], ["b", "n", "e", "e"], ["x", "p", "?", "p"],
]


@pytest.fixture(scope="session")
def small_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An OpenML cache with small stand-ins for the four UCI datasets (right ids, classes, widths)."""
    root = tmp_path_factory.mktemp("openml_small")
    _numeric_dataset(root, 40685, 9, [str(c) for c in range(1, 8)], 42, seed=1)  # Shuttle: 9 -> 7 arms
    _numeric_dataset(root, 1120, 10, ["g", "h"], 30, seed=2, row_id=True)  # MagicTelescope, with row id
    write_openml_dataset(root, 24, [*MUSHROOM_ATTRIBUTES, ("class", ["e", "p"])], MUSHROOM_ROWS)  # Mushroom
    _numeric_dataset(root, 1596, 54, [str(c) for c in range(1, 8)], 35, seed=4)  # Covertype: 54 -> 7 arms
    return root


CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_cifar10(root: Path, n_images: int = 20, seed: int = 0) -> np.ndarray:
    """Write torchvision's CIFAR10 test split layout; return the images as (N, 3072) uint8 rows."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(seed).integers(0, 256, size=(n_images, 3072), dtype=np.uint8)
    labels = [i % 10 for i in range(n_images)]
    with (folder / "test_batch").open("wb") as fh:
        pickle.dump({"batch_label": b"testing batch 1 of 1", "data": data, "labels": labels}, fh)
    with (folder / "batches.meta").open("wb") as fh:
        pickle.dump({"label_names": CIFAR_CLASSES, "num_vis": 3072, "num_cases_per_batch": n_images}, fh)
    return data


@pytest.fixture(scope="session")
def small_cifar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cifar_small")
    write_cifar10(root)
    return root


def write_like_published(root: Path, name: str, seed: int = 0) -> Path:
    """Write ``name`` in openml's layout with its published columns, row count and class counts; random values."""
    spec = SPECS[name]
    classes = [c for c, _ in spec.class_counts]
    labels = np.repeat(np.arange(len(classes)), [n for _, n in spec.class_counts])  # (N,)
    rng = np.random.default_rng(seed)
    rng.shuffle(labels)
    x = rng.integers(-50, 50, size=(spec.n_rows, spec.n_features))  # (N, d)
    row_id = "ID" if name == "magictelescope" else None
    attributes = [("ID", "INTEGER")] if row_id else []
    attributes += [(n, "NUMERIC") for n in spec.feature_names] + [(spec.target, classes)]
    rows = [([i + 1] if row_id else []) + x[i].tolist() + [classes[labels[i]]] for i in range(spec.n_rows)]
    return write_openml_dataset(root, spec.openml_id, attributes, rows, target=spec.target, row_id=row_id)


@pytest.fixture(scope="session")
def published_lookalikes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An OpenML cache whose Shuttle, MagicTelescope and Mushroom match every published figure."""
    root = tmp_path_factory.mktemp("openml_lookalike")
    for name in ("shuttle", "magictelescope", "mushroom"):
        write_like_published(root, name)
    return root


@pytest.fixture(scope="session")
def real_cache(real_openml_cache: Path) -> Path:
    """The writable copy of the shared real OpenML cache (``tests/conftest.py``)."""
    return real_openml_cache


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> str:
    """Point openml at a closed localhost port and disable proxies, so any request fails at once."""
    import openml

    server = "http://127.0.0.1:9/api/v1/xml"
    monkeypatch.setattr(openml.config, "server", server)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    return server


# The writers as fixtures, so that test modules need not import this conftest.
@pytest.fixture
def openml_writer():
    return write_openml_dataset


@pytest.fixture
def cifar_writer():
    return write_cifar10


@pytest.fixture
def mushroom_rows() -> list[list[str]]:
    return MUSHROOM_ROWS


@pytest.fixture
def mushroom_attributes() -> list[tuple[str, list[str]]]:
    return MUSHROOM_ATTRIBUTES
