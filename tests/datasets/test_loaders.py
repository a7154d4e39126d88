"""Loaders end to end on small files in openml's and torchvision's layouts; offline, read-only and corrupt caches."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bandit_experiments import cli
from bandit_gym.datasets import (
    DatasetFileError,
    DatasetIntegrityError,
    DatasetNotFoundError,
    MissingDependencyError,
    load_dataset,
    resolve_cache_dir,
)
from bandit_gym.datasets.loaders import SPECS, check_published, load_openml

#: The small stand-ins of conftest.py are not the published datasets: load them without the integrity check.
STAND_IN = {"verify_checksums": False}


def _copy(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / "cache"
    shutil.copytree(root, target)
    return target


def test_load_openml_numeric_drops_row_id_and_maps_labels_in_declared_order(small_cache):
    data = load_dataset("magictelescope", cache_dir=small_cache, scaling="none", **STAND_IN)
    assert data.features.shape == (30, 10) and data.features.dtype == torch.float32
    assert data.feature_names == tuple(f"A{i}" for i in range(10))  # the ID column is gone
    assert data.class_names == ("g", "h")
    assert data.labels.tolist() == [i % 2 for i in range(30)]  # written as g, h, g, h, ...
    header = data.source.read_text().splitlines().index("@DATA") + 1
    raw = np.loadtxt(data.source, delimiter=",", skiprows=header, usecols=range(1, 11), dtype=np.float64)
    torch.testing.assert_close(data.features, torch.from_numpy(raw).float())


def test_load_is_shared_per_process_and_per_device(small_cache):
    a = load_dataset("shuttle", cache_dir=small_cache, **STAND_IN)
    b = load_dataset("Shuttle", cache_dir=str(small_cache), **STAND_IN)
    assert a is b
    assert a.on("cpu")[0] is b.on("cpu")[0]
    assert load_dataset("shuttle", cache_dir=small_cache, scaling="none", **STAND_IN) is not a


def test_l2_rows_have_unit_norm_and_standardize_centres_columns(small_cache):
    l2 = load_dataset("covertype", cache_dir=small_cache, **STAND_IN)
    torch.testing.assert_close(l2.features.norm(dim=1), torch.ones(35))
    assert (l2.feature_low, l2.feature_high) == (-1.0, 1.0)
    std = load_dataset("covertype", cache_dir=small_cache, scaling="standardize", **STAND_IN)
    torch.testing.assert_close(std.features.mean(0), torch.zeros(54), atol=1e-5, rtol=0)
    torch.testing.assert_close(std.features.std(0, unbiased=False), torch.ones(54), atol=1e-5, rtol=0)
    assert (std.feature_low, std.feature_high) == (-np.inf, np.inf)


def test_mushroom_ordinal_and_onehot_encoding_with_missing_values(small_cache, mushroom_rows):
    ordinal = load_dataset("mushroom", cache_dir=small_cache, scaling="none", **STAND_IN)
    # declared values: cap-shape {b, x}, odor {a, n, p}, stalk-root {b, c, e, r}; '?' -> one past the last
    expected = [[1, 2, 2], [0, 0, 4], [1, 1, 1], [0, 2, 3], [1, 0, 4], [1, 2, 0], [0, 1, 2], [1, 2, 4]]
    assert ordinal.features.tolist() == expected
    assert ordinal.labels.tolist() == [1 if row[-1] == "p" else 0 for row in mushroom_rows]
    onehot = load_dataset("mushroom", cache_dir=small_cache, encoding="onehot", scaling="none", **STAND_IN)
    assert onehot.dim == 2 + 3 + 4
    assert onehot.feature_names[:3] == ("cap-shape=b", "cap-shape=x", "odor=a")
    assert onehot.features[0].tolist() == [0, 1, 0, 0, 1, 0, 0, 1, 0]
    assert onehot.features[1, 5:].tolist() == [0, 0, 0, 0]  # stalk-root missing: all zeros
    assert onehot.features.sum(1).tolist() == [3, 2, 3, 3, 2, 3, 3, 2]


def test_parquet_cache_reads_like_arff_with_sorted_values_and_unused_categories_kept(small_cache, tmp_path):
    import pandas as pd

    arff = load_dataset("mushroom", cache_dir=small_cache, encoding="onehot", **STAND_IN)
    root = _copy(small_cache, tmp_path)  # loads are cached per directory: a new one for the parquet file
    folder = _folder(root, 24)
    header = (folder / "dataset.arff").read_text().splitlines().index("@DATA") + 1
    frame = pd.read_csv(folder / "dataset.arff", skiprows=header, header=None, dtype=str,
                        names=["cap-shape", "odor", "stalk-root", "class"], na_values=["?"], keep_default_na=False)
    frame["odor"] = pd.Categorical(frame["odor"], categories=["p", "n", "a", "z"])  # unsorted, 'z' unused
    (folder / "dataset.arff").unlink()
    frame.to_parquet(folder / "dataset_24.pq")
    parquet = load_dataset("mushroom", cache_dir=root, encoding="onehot", **STAND_IN)
    assert parquet.source.name == "dataset_24.pq"
    assert parquet.feature_names == (*arff.feature_names[:5], "odor=z", *arff.feature_names[5:])
    torch.testing.assert_close(parquet.features[:, [0, 1, 2, 3, 4, 6, 7, 8, 9]], arff.features, rtol=0, atol=0)
    assert parquet.features[:, 5].sum() == 0 and torch.equal(parquet.labels, arff.labels)


def test_numeric_missing_values_take_the_column_mean(tmp_path, openml_writer):
    openml_writer(
        tmp_path, 40685, [("a", "NUMERIC"), ("b", "REAL"), ("class", [str(c) for c in range(1, 8)])],
        [[1, 2, 1], ["?", 4, 2], [3, "?", 3], [5, 6, 4], [7, 8, 5], [9, 10, 6], [11, 12, 7]],
    )
    data = load_dataset("shuttle", cache_dir=tmp_path, scaling="none", **STAND_IN)
    assert data.features[1, 0].item() == pytest.approx(np.mean([1, 3, 5, 7, 9, 11]))
    assert data.features[2, 1].item() == pytest.approx(np.mean([2, 4, 6, 8, 10, 12]))
    assert data.labels.tolist() == list(range(7))


def test_cifar10_pixels_scaled_and_flattened_channel_first(tmp_path, cifar_writer):
    images = cifar_writer(tmp_path, n_images=12, seed=3)
    data = load_dataset("cifar10", cache_dir=tmp_path, scaling="none", verify_checksums=False)
    assert data.features.shape == (12, 3 * 32 * 32)
    # CIFAR's pickle rows are already C, H, W flattened: the features are those rows, rescaled.
    torch.testing.assert_close(data.features, torch.from_numpy((images / 255.0 - 0.5) / 0.5).float())
    assert data.labels.tolist() == [i % 10 for i in range(12)]
    assert data.class_names[0] == "airplane" and len(data.class_names) == 10
    assert (data.feature_low, data.feature_high) == (-1.0, 1.0)


class _CreatesAFileWhenUnpickled:
    """What a crafted cache file can hold: unpickling it calls ``open(path, "w")``, which creates ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return open, (str(self.path), "w")


@pytest.mark.parametrize("verify_checksums", [False, True])
@pytest.mark.parametrize("crafted", ["test_batch", "batches.meta"])
def test_a_crafted_cifar10_pickle_is_refused_before_it_runs_code(tmp_path, cifar_writer, crafted, verify_checksums):
    cifar_writer(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / crafted
    marker = tmp_path / "code_ran"
    content = pickle.loads(path.read_bytes())
    content["labels" if crafted == "test_batch" else "label_names"] = _CreatesAFileWhenUnpickled(marker)
    path.write_bytes(pickle.dumps(content))
    pickle.loads(path.read_bytes()).clear()  # the file is malicious: a plain unpickler runs its code
    assert marker.exists()
    marker.unlink()
    # With checksums, the stand-in's test_batch already differs from the published md5; without, the crafted file
    # is refused by name at the callable it names (open, from the io module).
    refused = rf"{crafted}: refused to unpickle io.open: .* not a CIFAR10 file"
    match = "test_batch: md5 differs" if verify_checksums else refused
    with pytest.raises(DatasetFileError, match=match):
        load_dataset("cifar10", cache_dir=tmp_path, verify_checksums=verify_checksums)
    assert not marker.exists()


def test_cifar10_files_pickled_like_the_originals_load_the_same(tmp_path, cifar_writer):
    # The published files are protocol-2 pickles that name numpy's array rebuilders (numpy.core in
    # numpy 1's spelling), which the restricted unpickler must accept.
    images = cifar_writer(tmp_path / "new", n_images=12, seed=3)
    folder = tmp_path / "old" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in ("test_batch", "batches.meta"):
        text = pickle.dumps(pickle.loads((tmp_path / "new" / "cifar-10-batches-py" / name).read_bytes()), protocol=2)
        (folder / name).write_bytes(text.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    assert b"numpy.core.multiarray\n_reconstruct" in (folder / "test_batch").read_bytes()
    data = load_dataset("cifar10", cache_dir=tmp_path / "old", scaling="none", verify_checksums=False)
    torch.testing.assert_close(data.features, torch.from_numpy((images / 255.0 - 0.5) / 0.5).float())
    assert data.labels.tolist() == [i % 10 for i in range(12)]


def test_cifar10_checksums_reject_files_that_are_not_the_real_ones(small_cifar):
    with pytest.raises(DatasetFileError, match="test_batch.*md5"):
        load_dataset("cifar10", cache_dir=small_cifar)


def test_bad_arguments_name_the_argument_and_the_accepted_values(small_cache):
    with pytest.raises(ValueError, match=r"dataset must be one of .*'shuttle'.*got 'iris'"):
        load_dataset("iris", cache_dir=small_cache)
    with pytest.raises(ValueError, match=r"encoding must be one of \('ordinal', 'onehot'\), got 'dummy'"):
        load_dataset("mushroom", cache_dir=small_cache, encoding="dummy")
    with pytest.raises(ValueError, match=r"scaling must be one of .*got 'L2'"):
        load_dataset("mushroom", cache_dir=small_cache, scaling="L2")


@pytest.mark.parametrize(
    ("blocked", "name", "download"),
    [("pandas", "shuttle", False), ("arff", "mushroom", False), ("torchvision", "cifar10", False),
     ("openml", "magictelescope", True)],
)
def test_a_missing_optional_package_names_the_extra_to_install(small_cache, tmp_path, monkeypatch, blocked, name,
                                                               download):
    for module in [blocked, *(m for m in sys.modules if m.startswith(blocked + "."))]:
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises, as if it were not installed
    cache = tmp_path / "empty" if download else small_cache  # download: the cache lacks the data
    with pytest.raises(MissingDependencyError) as info:
        load_dataset(name, cache_dir=cache, download=download, **STAND_IN)
    message = str(info.value)
    assert 'pip install "contextual-bandit-gym[datasets]"' in message and blocked in message
    assert info.value.name.split(".")[0] == blocked
    assert isinstance(info.value, ModuleNotFoundError)  # what callers catch for a missing package


_BASE_INSTALL_SCRIPT = """
import sys
for name in ("pandas", "openml", "sklearn", "torchvision", "arff"):
    sys.modules[name] = None  # as if only the base install were there
import gymnasium as gym
import bandit_gym
env = gym.make("LinearBandit-v0")
env.reset(seed=0)
env.step(0)
import bandit_gym.datasets
from bandit_gym.datasets.loaders import SPECS
try:
    gym.make("Shuttle-v0", cache_dir=sys.argv[1])
except ImportError as exc:
    print(type(exc).__name__, "|", exc)
"""


def test_base_install_imports_and_runs_synthetic_envs_and_dataset_envs_name_the_extra(small_cache):
    out = subprocess.run(
        [sys.executable, "-c", _BASE_INSTALL_SCRIPT, str(small_cache)],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    kind, message = out.stdout.strip().splitlines()[-1].split(" | ")
    assert kind == "MissingDependencyError"
    assert "The Shuttle dataset" in message and "pandas" in message
    assert message.endswith('pip install "contextual-bandit-gym[datasets]"')


def test_cache_dir_resolution_honours_keyword_then_openml_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENML_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_dir("shuttle") == tmp_path / "env"
    assert resolve_cache_dir("shuttle", tmp_path / "kw") == tmp_path / "kw"
    monkeypatch.setenv("BANDIT_GYM_CIFAR10_ROOT", str(tmp_path / "tv"))
    assert resolve_cache_dir("cifar10") == tmp_path / "tv"


@pytest.fixture
def requests_made(monkeypatch, no_network) -> list[str]:
    """The URLs of the HTTP requests a test makes (openml's through ``requests``, torchvision's through ``urllib``),
    each refused as a machine without a network would: at once, with a connection error."""
    import urllib.request

    import requests

    urls: list[str] = []

    def refuse_session_request(session, method, url, *args, **kwargs):
        urls.append(url)
        raise requests.exceptions.ConnectionError(f"no network in this test: {method} {url}")

    def refuse_urlopen(url, *args, **kwargs):
        urls.append(getattr(url, "full_url", url))
        raise OSError(f"no network in this test: {url}")

    monkeypatch.setattr(requests.Session, "request", refuse_session_request)
    monkeypatch.setattr(urllib.request, "urlopen", refuse_urlopen)
    return urls


@pytest.mark.parametrize("name", ["shuttle", "cifar10"])
def test_missing_dataset_fails_at_once_naming_dataset_directory_and_command(tmp_path, requests_made, name):
    """Without ``download=True`` a missing dataset is an error before any request is made."""
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset(name, cache_dir=tmp_path / "empty")
    message = str(info.value)
    assert requests_made == []
    assert not (tmp_path / "empty").exists()  # nothing written either
    assert str(tmp_path / "empty") in message
    assert f"bandit-gym download {name} --cache-dir DIR" in message
    assert ("OpenML dataset 40685" if name == "shuttle" else "CIFAR10") in message


def test_offline_download_fails_fast_with_a_clear_message(tmp_path, requests_made, capsys):
    """Offline, each download attempt makes one request and gives up: no retry loop (nor its waits)."""
    import openml

    root_before = openml.config.get_config_as_dict()["cachedir"]
    with pytest.raises(DatasetNotFoundError, match=r"could not download Mushroom into .*Check the internet"):
        load_dataset("mushroom", cache_dir=tmp_path / "empty", download=True)
    assert len(requests_made) == 1, requests_made
    assert cli.main(["download", "mushroom", "--cache-dir", str(tmp_path / "empty")]) == 1
    assert len(requests_made) == 2, requests_made  # two attempts, one try each
    assert "bandit-gym download: error: could not download Mushroom" in capsys.readouterr().err
    assert openml.config.get_config_as_dict()["cachedir"] == root_before  # openml's config restored


def test_read_only_cache_loads_and_writes_nothing(small_cache, tmp_path, mushroom_rows):
    root = _copy(small_cache, tmp_path)
    paths = [root, *root.rglob("*")]
    before = sorted(str(p) for p in paths)
    for path in paths:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        data = load_dataset("mushroom", cache_dir=root, **STAND_IN)
        assert data.n_rows == len(mushroom_rows)
        assert sorted(str(p) for p in [root, *root.rglob("*")]) == before
    finally:
        for path in paths:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _folder(root: Path, dataset_id: int) -> Path:
    return root / "org" / "openml" / "www" / "datasets" / str(dataset_id)


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda t: t[: t.index("@DATA") + 40], "fewer than 4 fields"),  # cut inside a row
        (lambda t: t[: t.index("@DATA") - 20], "no @DATA section"),  # cut inside the header
        (lambda t: t.replace("x,p,e,p", "x,p,e,p,p,p", 1), "cannot parse the ARFF data"),  # first row too long
        (lambda t: t.replace("x,n,c,e", "x,n,c,e,e", 1), "data row 2 has more than 4 fields"),
        (lambda t: t.replace("x,n,c,e", "x,n,zz,e", 1), r"'stalk-root' holds \['zz'\]"),
        (lambda t: t.replace("@ATTRIBUTE 'odor' {a, n, p}", "@ATTRIBUTE 'odor' {a, n, p"), "malformed ARFF header"),
        (lambda t: "", "no @DATA section"),
    ],
)
def test_corrupt_arff_names_the_file(small_cache, tmp_path, damage, match):
    root = _copy(small_cache, tmp_path)
    arff = _folder(root, 24) / "dataset.arff"
    arff.write_text(damage(arff.read_text()))
    with pytest.raises(DatasetFileError, match=match) as info:
        load_dataset("mushroom", cache_dir=root)
    assert str(arff) in str(info.value)


def test_md5_in_description_catches_a_partial_download(tmp_path, openml_writer):
    rows = [["x", "a", "b", "e"], ["b", "n", "c", "p"], ["x", "n", "b", "e"]]
    attributes = [("cap-shape", ["b", "x"]), ("odor", ["a", "n"]), ("stalk-root", ["b", "c"]), ("class", ["e", "p"])]
    folder = openml_writer(tmp_path, 24, attributes, rows)
    good = hashlib.md5((folder / "dataset.arff").read_bytes()).hexdigest()
    openml_writer(tmp_path, 24, attributes, rows[:2], md5=good)  # the file lost its last row
    with pytest.raises(DatasetFileError, match=r"dataset\.arff: md5 .* differs"):
        load_dataset("mushroom", cache_dir=tmp_path)
    with pytest.raises(DatasetFileError, match=r"dataset\.arff: md5 .* differs"):
        load_openml(24, cache_dir=tmp_path)  # any id: the same check
    assert load_dataset("mushroom", cache_dir=tmp_path, **STAND_IN).n_rows == 2  # on purpose: no check


def _arff_parts(text: str) -> tuple[list[str], list[str]]:
    """An ARFF text as (header lines up to @DATA, data lines)."""
    lines = text.splitlines()
    start = lines.index("@DATA") + 1
    return lines[:start], [line for line in lines[start:] if line]


def _truncate_at_row(text: str, n_rows: int) -> str:
    header, rows = _arff_parts(text)
    return "\n".join(header + rows[:n_rows]) + "\n"


def _relabel_first_row(text: str, new_class: str) -> str:
    header, rows = _arff_parts(text)
    rows[0] = rows[0].rsplit(",", 1)[0] + "," + new_class
    return "\n".join(header + rows) + "\n"


def _drop_attribute(text: str, index: int) -> str:
    """Remove attribute ``index`` from the header and its field from every row: a file that still parses."""
    header, rows = _arff_parts(text)
    attributes = [i for i, line in enumerate(header) if line.upper().startswith("@ATTRIBUTE")]
    del header[attributes[index]]
    rows = [",".join(f for i, f in enumerate(row.split(",")) if i != index) for row in rows]
    return "\n".join(header + rows) + "\n"


@pytest.mark.parametrize(
    ("name", "damage", "found"),
    [
        ("magictelescope", lambda t: _truncate_at_row(t, 3000), r"expected 19,020 rows, found 3,000; expected rows "
         r"per class \{'g': 12332, 'h': 6688\}, found \{'g': \d+, 'h': \d+\}"),
        ("shuttle", lambda t: _relabel_first_row(t, "6"), r"expected rows per class \{'1': 45586, .*'6': 10, "
         r"'7': 13\}, found \{'1': \d+, .*'6': 11, '7': 13\}"),
        ("mushroom", lambda t: _drop_attribute(t, 3),
         r"expected 22 feature columns, found 21: missing \['bruises%3F'\]"),
    ],
)
def test_a_file_that_is_not_the_published_dataset_is_refused(published_lookalikes, tmp_path, name, damage, found):
    assert load_dataset(name, cache_dir=published_lookalikes).n_rows == SPECS[name].n_rows  # undamaged: passes
    root = _copy(published_lookalikes, tmp_path)
    arff = _folder(root, SPECS[name].openml_id) / "dataset.arff"
    arff.write_text(damage(arff.read_text()))
    with pytest.raises(DatasetIntegrityError, match=found) as info:
        load_dataset(name, cache_dir=root)
    assert str(info.value).startswith(f"{arff} is not the published {SPECS[name].title} dataset")
    assert "verify_checksums=False" in str(info.value)
    loaded = load_dataset(name, cache_dir=root, verify_checksums=False)  # on purpose: the modified copy loads
    assert loaded.n_rows == (3000 if name == "magictelescope" else SPECS[name].n_rows)


def test_a_row_id_not_declared_in_the_description_is_an_unexpected_column(published_lookalikes, tmp_path):
    root = _copy(published_lookalikes, tmp_path)
    description = _folder(root, 1120) / "description.xml"
    description.write_text(description.read_text().replace("<oml:row_id_attribute>ID</oml:row_id_attribute>", ""))
    with pytest.raises(DatasetIntegrityError, match=r"expected 10 feature columns, found 11: missing \[\], "
                       r"unexpected \['ID'\]"):
        load_dataset("magictelescope", cache_dir=root)


def test_published_check_names_a_renamed_class_attribute_and_reordered_columns(tmp_path):
    spec = SPECS["shuttle"]
    labels = np.repeat(np.arange(7), [n for _, n in spec.class_counts])  # the published class counts
    classes = [c for c, _ in spec.class_counts]
    check_published(spec, tmp_path / "x.arff", spec.feature_names, "class", labels, classes)  # all as published
    with pytest.raises(DatasetIntegrityError, match=r"expected class attribute 'class', found 'label'; expected 9 "
                       r"feature columns, found 9: in the order \['A9', 'A8', .*'A1'\]\."):
        check_published(spec, tmp_path / "x.arff", spec.feature_names[::-1], "label", labels, classes)


def test_published_figures_of_the_large_datasets(tmp_path, openml_writer):
    # Covertype (too large to write here) and CIFAR10 go through the same check; call it with their shapes.
    labels = np.repeat(np.arange(7), 10)  # (70,)
    names = [f"A{i}" for i in range(54)]
    with pytest.raises(DatasetIntegrityError, match=r"expected 581,012 rows, found 70\. "):
        check_published(SPECS["covertype"], tmp_path / "x.arff", names, "class", labels, [str(c) for c in range(1, 8)])
    check_published(  # the published size passes (labels of 581,012 rows, 7 classes)
        SPECS["covertype"], tmp_path / "x.arff", names, "class", np.arange(581_012) % 7, [str(c) for c in range(1, 8)]
    )
    with pytest.raises(DatasetIntegrityError, match=r"expected 7 classes, found 6"):
        check_published(SPECS["covertype"], tmp_path / "x.arff", names, "class", np.arange(581_012) % 6,
                        [str(c) for c in range(1, 7)])
    classes = [c for c, _ in SPECS["cifar10"].class_counts]
    pixels = [f"pixel{i}" for i in range(3072)]
    check_published(SPECS["cifar10"], tmp_path / "test_batch", pixels, None, np.arange(10_000) % 10, classes)
    with pytest.raises(DatasetIntegrityError, match=r"test_batch is not the published CIFAR10 dataset \(torchvision\)"):
        check_published(SPECS["cifar10"], tmp_path / "test_batch", pixels, None, np.arange(9_999) % 10, classes)


def test_corrupt_description_and_cifar_pickle_name_the_file(small_cache, tmp_path, cifar_writer):
    root = _copy(small_cache, tmp_path)
    description = _folder(root, 1120) / "description.xml"
    description.write_text("<oml:data_set_description xmlns:oml='http://openml.org/openml'><oml:id>11")
    with pytest.raises(DatasetFileError, match=f"{description}: not a readable OpenML dataset description"):
        load_dataset("magictelescope", cache_dir=root)
    cifar_writer(tmp_path / "cifar")
    batch = tmp_path / "cifar" / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(batch.read_bytes()[:1000])
    with pytest.raises(DatasetFileError, match="test_batch.*truncated or damaged"):
        load_dataset("cifar10", cache_dir=tmp_path / "cifar", verify_checksums=False)


def test_download_true_with_a_complete_read_only_cache_never_calls_openml(small_cache, tmp_path, monkeypatch):
    import openml

    def fail(*args, **kwargs):
        raise AssertionError("openml was asked to download a dataset that is cached")

    monkeypatch.setattr(openml.datasets, "get_dataset", fail)
    root = _copy(small_cache, tmp_path)
    paths = [root, *root.rglob("*")]
    for path in paths:
        path.chmod(path.stat().st_mode & ~stat.S_IWUSR)
    try:
        assert load_dataset("shuttle", cache_dir=root, download=True, **STAND_IN).n_rows == 42
    finally:
        for path in paths:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_cli_download_asks_openml_by_id_once_for_arff_into_the_cache_dir(
    tmp_path, monkeypatch, capsys, published_lookalikes
):
    import openml

    calls = []

    def fake_get_dataset(dataset_id, download_data=False, **kwargs):  # "downloads" a file like the published one
        calls.append(dataset_id)
        assert isinstance(dataset_id, int) and download_data  # by integer id, never by name
        assert os.environ["OPENML_SKIP_PARQUET"] == "true" and openml.config.connection_n_retries == 1
        root = Path(openml.config.get_config_as_dict()["cachedir"])
        shutil.copytree(_folder(published_lookalikes, dataset_id), _folder(root, dataset_id))

    monkeypatch.setattr(openml.datasets, "get_dataset", fake_get_dataset)
    monkeypatch.delenv("OPENML_SKIP_PARQUET", raising=False)
    retries_before = openml.config.connection_n_retries
    assert cli.main(["download", "mushroom", "--cache-dir", str(tmp_path / "dl")]) == 0
    assert calls == [24]
    assert "mushroom: 8124 rows, 22 features, 2 classes" in capsys.readouterr().out
    assert (tmp_path / "dl" / "org" / "openml" / "www" / "datasets" / "24" / "dataset.arff").is_file()
    assert "OPENML_SKIP_PARQUET" not in os.environ and openml.config.connection_n_retries == retries_before
    with pytest.raises(SystemExit):
        cli.main(["download", "iris"])
    assert "invalid choice: 'iris'" in capsys.readouterr().err


def test_cli_download_reports_a_download_that_is_not_the_published_dataset(
    tmp_path, monkeypatch, capsys, openml_writer
):
    import openml

    def fake_get_dataset(dataset_id, download_data=False, **kwargs):  # a two-row file that reads without error
        root = Path(openml.config.get_config_as_dict()["cachedir"])
        openml_writer(root, dataset_id, [("a", "NUMERIC"), ("class", ["e", "p"])], [[1.0, "e"], [2.0, "p"]])

    monkeypatch.setattr(openml.datasets, "get_dataset", fake_get_dataset)
    assert cli.main(["download", "mushroom", "--cache-dir", str(tmp_path / "dl")]) == 1
    err = capsys.readouterr().err
    assert f"{_folder(tmp_path / 'dl', 24) / 'dataset.arff'} is not the published Mushroom dataset" in err
    assert "expected 8,124 rows, found 2" in err


_CACHE_DIR_SCRIPT = """
import os, sys
from bandit_gym.datasets.loaders import resolve_cache_dir
ours = []
for home in sys.argv[1:]:
    os.environ["HOME"] = home
    ours.append(str(resolve_cache_dir("shuttle")))
assert "openml" not in sys.modules, "resolving the cache directory imported openml"
import openml
theirs = []
for home in sys.argv[1:]:
    os.environ["HOME"] = home
    openml.config._setup()  # re-reads the config file and the defaults, as at import
    theirs.append(str(openml.config.get_config_as_dict()["cachedir"]))
print(ours)
print(theirs)
"""


def test_default_cache_dir_matches_openml_without_importing_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENML_CACHE_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    plain, configured = tmp_path / "plain", tmp_path / "configured"
    plain.mkdir()
    (configured / ".config" / "openml").mkdir(parents=True)
    (configured / ".config" / "openml" / "config").write_text(f"apikey = x\ncachedir = {tmp_path}/from_config\n")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", _CACHE_DIR_SCRIPT, str(plain), str(configured)],
        env=env, cwd=repo, capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    ours, theirs = out.stdout.strip().splitlines()
    assert ours == theirs
    assert ours == str([str(plain / ".cache" / "openml"), str(tmp_path / "from_config")])
