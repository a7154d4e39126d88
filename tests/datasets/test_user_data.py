"""A user's own data: prepare_dataset (numpy, pandas, sklearn Bunch) and load_openml (any OpenML id, offline)."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bandit_gym.datasets import DatasetNotFoundError, load_dataset, prepare_dataset
from bandit_gym.datasets.loaders import load_openml


def test_numpy_rows_are_l2_scaled_and_classes_sorted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5))  # (N, d)
    y = rng.choice([7, 3, 5], size=40)
    data = prepare_dataset(x, y)
    assert data.class_names == ("3", "5", "7") and data.feature_names == ("x0", "x1", "x2", "x3", "x4")
    assert data.labels.tolist() == [[3, 5, 7].index(v) for v in y]
    expected = x / np.linalg.norm(x, axis=1, keepdims=True)
    torch.testing.assert_close(data.features, torch.from_numpy(expected).float())
    assert (data.feature_low, data.feature_high) == (-1.0, 1.0) and data.source is None


@pytest.mark.parametrize("scaling", ["l2", "standardize"])
def test_features_of_any_finite_magnitude_scale_like_moderate_ones(scaling):
    # Squares of 1e300 overflow (an infinite norm made all-zero features) and of 1e-300 underflow; both
    # scalings are unchanged by a positive factor per row (l2) or per column (standardize).
    rng = np.random.default_rng(1)
    moderate = rng.normal(size=(12, 3))  # (N, d)
    y = np.arange(12) % 2
    magnitudes = np.array([1e300, 1e-300, 1.0])
    # l2: rows 0-3 at 1e300, rows 4-7 at 1e-300; standardize: column 0 at 1e300, column 1 at 1e-300.
    factor = np.repeat(magnitudes, 4)[:, None] if scaling == "l2" else magnitudes[None, :]
    extreme = moderate * factor
    want = prepare_dataset(moderate, y, scaling=scaling).features
    got = prepare_dataset(extreme, y, scaling=scaling).features
    assert torch.isfinite(got).all() and (got.abs().sum(dim=1) > 0).all()
    torch.testing.assert_close(got, want)  # float32 rounding of the same float64 numbers
    if scaling == "l2":  # moderate rows are computed as before, bit for bit
        assert torch.equal(got[8:], torch.from_numpy(moderate[8:] / np.linalg.norm(moderate[8:], axis=1,
                                                                                   keepdims=True)).float())


def test_unscaled_features_beyond_float32_are_refused_naming_the_column():
    x = np.array([[1.0, 2.0], [3.0, 1e300], [0.5, 4.0]])
    with pytest.raises(ValueError, match=r"X column 'x1' holds 1e\+300 at row 1, beyond float32's range .* "
                                         r"scaling='none'; pass scaling='l2' or 'standardize'"):
        prepare_dataset(x, [0, 1, 0], scaling="none")


def test_a_pickled_dataset_holds_its_data_and_no_device_copies():
    data = prepare_dataset(np.arange(12.0).reshape(6, 2), [0, 1, 2, 0, 1, 2], scaling="none")
    data.on("cpu")
    copy = pickle.loads(pickle.dumps(data))
    assert torch.equal(copy.features, data.features) and torch.equal(copy.labels, data.labels)
    assert copy.class_names == data.class_names and copy._by_device == {}
    assert copy.on("cpu")[0] is copy.on("cpu")[0]


def test_feature_names_name_the_columns_of_an_array_only():
    data = prepare_dataset(np.eye(3), [0, 1, 1], feature_names=["a", "b", "c"])
    assert data.feature_names == ("a", "b", "c")
    with pytest.raises(ValueError, match=r"feature_names has 2 names for the 3 columns of X"):
        prepare_dataset(np.eye(3), [0, 1, 1], feature_names=["a", "b"])
    with pytest.raises(ValueError, match=r"feature_names must be None when X is a pandas DataFrame"):
        prepare_dataset(pd.DataFrame(np.eye(3)), [0, 1, 1], feature_names=["a", "b", "c"])


def test_dataframe_columns_of_every_kind_are_encoded():
    frame = pd.DataFrame({
        "size": [1.5, 2.0, 3.0, 4.0],
        "colour": pd.Categorical(["red", "blue", "red", "green"], categories=["red", "green", "blue"]),
        "shape": ["round", "flat", "round", "flat"],  # text: sorted values, flat=0, round=1
        "ripe": [True, False, True, True],
    })
    y = pd.Series(["keep", "drop", "keep", "drop"])
    ordinal = prepare_dataset(frame, y, scaling="none")
    assert ordinal.feature_names == ("size", "colour", "shape", "ripe")
    assert ordinal.features.tolist() == [[1.5, 0, 1, 1], [2, 2, 0, 0], [3, 0, 1, 1], [4, 1, 0, 1]]
    assert ordinal.class_names == ("drop", "keep") and ordinal.labels.tolist() == [1, 0, 1, 0]
    declared = pd.Categorical(y, categories=["maybe", "keep", "drop"])  # declared order; 'maybe' never occurs
    for labels in (declared, pd.Series(declared)):
        data = prepare_dataset(frame, labels)
        assert data.class_names == ("keep", "drop") and data.labels.tolist() == [0, 1, 0, 1]
    onehot = prepare_dataset(frame, y, scaling="none", encoding="onehot")
    assert onehot.feature_names == ("size", "colour=red", "colour=green", "colour=blue", "shape=flat", "shape=round",
                                    "ripe")
    assert onehot.features[1].tolist() == [2, 0, 0, 1, 1, 0, 0]


def test_sklearn_bunch_gives_its_feature_and_target_names():
    from sklearn.datasets import load_iris

    iris = load_iris()
    data = prepare_dataset(iris, scaling="standardize")
    assert data.class_names == ("setosa", "versicolor", "virginica")
    assert data.feature_names == tuple(iris.feature_names)
    assert torch.bincount(data.labels).tolist() == [50, 50, 50]
    expected = (iris.data - iris.data.mean(0)) / iris.data.std(0)
    torch.testing.assert_close(data.features, torch.from_numpy(expected).float())
    with pytest.raises(ValueError, match="y must be None when X is an sklearn Bunch"):
        prepare_dataset(iris, iris.target)


@pytest.mark.parametrize("encoding", ["ordinal", "onehot"])
def test_a_table_gets_the_numbers_of_the_named_dataset_it_holds(small_cache, mushroom_rows, mushroom_attributes,
                                                                encoding):
    named = load_dataset("mushroom", cache_dir=small_cache, encoding=encoding, verify_checksums=False)
    frame = pd.DataFrame({
        name: pd.Categorical([row[j] if row[j] != "?" else None for row in mushroom_rows], categories=values)
        for j, (name, values) in enumerate(mushroom_attributes)
    })
    labels = pd.Categorical([row[-1] for row in mushroom_rows], categories=["e", "p"])
    own = prepare_dataset(frame, labels, encoding=encoding, missing="impute")
    assert torch.equal(own.features, named.features) and torch.equal(own.labels, named.labels)
    assert own.feature_names == named.feature_names and own.class_names == named.class_names


def test_missing_values_are_refused_imputed_or_dropped():
    x = np.array([[1.0, "a"], [np.nan, "b"], [3.0, None], [5.0, "a"], [7.0, "b"]], dtype=object)
    y = np.array(["u", "v", "w", "u", "v"])
    with pytest.raises(ValueError, match=r"X column 'x0' has 1 missing values \(first at row 1\); pass missing="):
        prepare_dataset(x, y)
    imputed = prepare_dataset(x, y, missing="impute", scaling="none")
    assert imputed.features[:, 0].tolist() == [1, 4, 3, 5, 7]  # 4 = mean of 1, 3, 5, 7
    assert imputed.features[:, 1].tolist() == [0, 1, 2, 0, 1]  # missing text: a value of its own, after a and b
    dropped = prepare_dataset(x, y, missing="drop", scaling="none")
    assert dropped.features.tolist() == [[1, 0], [5, 0], [7, 1]]
    assert dropped.class_names == ("u", "v") and dropped.labels.tolist() == [0, 0, 1]  # w lost its only row
    with pytest.raises(ValueError, match=r"y has 1 missing labels \(first at row 2\)"):
        prepare_dataset(np.eye(4), [0, 1, None, 1])
    assert prepare_dataset(np.eye(4), [0, 1, None, 1], missing="drop").n_rows == 3


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (np.zeros((3, 2)), [0, 1], r"X and y must have the same number of rows, got X with 3 and y with 2"),
        (np.eye(3), ["a", "a", "a"], r"y holds one class only \('a' in all 3 rows\)"),
        (np.zeros(3), [0, 1, 0], r"X must be 2-D \(rows, features\), got shape \(3,\); for one feature pass"),
        (np.eye(3), [0.5, 1.0, 2.0], r"y holds 0.5, not a class label"),
        (pd.DataFrame({"day": pd.to_datetime(["2024-01-01"] * 3)}), [0, 1, 0], r"X column 'day' holds dates"),
        ([[1, "a"], ["b", 2], [3, "c"]], [0, 1, 0], r"X column 'x0' mixes numbers and text \(row 0: 1, row 1: 'b'\)"),
        ([[{}], [1], [2]], [0, 1, 0], r"X column 'x0' holds \{\} \(dict\) at row 0, which cannot be encoded"),
        (np.array([[1.0], [np.inf], [2.0]]), [0, 1, 0], r"X column 'x0' holds inf at row 1; features must be finite"),
        (np.eye(3), None, r"y \(the class labels\) is required"),
        (np.zeros((0, 2)), [], r"X must have at least one row and one column"),
        (pd.Series([1.0, 2.0]), [0, 1], r"X must be 2-D \(rows, features\), got a pandas Series; pass X.to_frame\(\)"),
        (np.ones((2, 1), dtype=complex), [0, 1], r"X column 'x0' has dtype complex128, which cannot be encoded"),
        (np.eye(2), np.eye(2), r"y must be 1-D \(one label per row\), got shape \(2, 2\)"),
        (np.eye(2), pd.DataFrame({"a": [0, 1], "b": [1, 0]}), r"y must be one column of labels, got a DataFrame "
         r"with 2 columns"),
        (np.array([[np.nan], [np.nan]]), [0, 1], r"y has no rows left after dropping missing values"),
    ],
)
def test_bad_data_is_refused_before_any_round(x, y, match):
    with pytest.raises(ValueError, match=match):
        prepare_dataset(x, y, missing="drop" if "dropping" in match else "error")


def test_a_sparse_matrix_is_refused_with_what_to_do():
    from scipy import sparse

    with pytest.raises(ValueError, match=r"X is a sparse matrix \(csr_matrix\); pass X.toarray\(\)"):
        prepare_dataset(sparse.csr_matrix(np.eye(2)), [0, 1])


def test_labels_as_one_column_booleans_or_codes_with_names():
    x = np.eye(4)
    assert prepare_dataset(x, pd.DataFrame({"label": ["b", "a", "b", "a"]})).class_names == ("a", "b")
    assert prepare_dataset(x, np.array([[1], [0], [1], [1]])).labels.tolist() == [1, 0, 1, 1]
    flags = prepare_dataset(x, np.array([True, False, True, True]))
    assert flags.class_names == ("False", "True") and flags.labels.tolist() == [1, 0, 1, 1]


def test_bad_options_name_the_argument_and_the_accepted_values():
    with pytest.raises(ValueError, match=r"missing must be one of \('error', 'impute', 'drop'\), got 'mean'"):
        prepare_dataset(np.eye(2), [0, 1], missing="mean")
    with pytest.raises(ValueError, match=r"encoding must be one of \('ordinal', 'onehot'\), got 'dummies'"):
        prepare_dataset(np.eye(2), [0, 1], encoding="dummies")


_WEATHER = [("outlook", ["sunny", "rain"]), ("temperature", "NUMERIC"), ("windy", ["no", "yes"]), ("play", "INTEGER")]
_WEATHER_ROWS = [["sunny", 30.5, "no", 0], ["rain", 20.0, "yes", 1], ["sunny", "?", "yes", 1], ["rain", 18.5, "no", 2]]


def test_load_openml_reads_any_id_offline_like_a_users_table(tmp_path, openml_writer):
    openml_writer(tmp_path, 9001, _WEATHER, _WEATHER_ROWS, target="windy")
    data = load_openml(9001, cache_dir=tmp_path, scaling="none")
    assert data.name == "test9001" and data.source.name == "dataset.arff"
    assert data.feature_names == ("outlook", "temperature", "play") and data.class_names == ("no", "yes")
    frame = pd.DataFrame({
        "outlook": pd.Categorical([r[0] for r in _WEATHER_ROWS], categories=["sunny", "rain"]),
        "temperature": [np.nan if r[1] == "?" else r[1] for r in _WEATHER_ROWS],
        "play": [r[3] for r in _WEATHER_ROWS],
    })
    labels = pd.Categorical([r[2] for r in _WEATHER_ROWS], categories=["no", "yes"])
    own = prepare_dataset(frame, labels, scaling="none", missing="impute")
    assert torch.equal(data.features, own.features) and torch.equal(data.labels, own.labels)
    assert data.features[2, 1].item() == pytest.approx((30.5 + 20.0 + 18.5) / 3)  # imputed by default


def test_load_openml_target_argument_and_integer_or_regression_targets(tmp_path, openml_writer):
    openml_writer(tmp_path, 9002, _WEATHER, _WEATHER_ROWS, target="windy")
    by_play = load_openml(9002, cache_dir=tmp_path, target="play")  # an integer attribute: its values are classes
    assert by_play.class_names == ("0", "1", "2") and by_play.labels.tolist() == [0, 1, 1, 2]
    assert "windy" in by_play.feature_names and "play" not in by_play.feature_names
    with pytest.raises(ValueError, match=r"the target attribute 'temperature' holds 30.5, not a class label"):
        load_openml(9002, cache_dir=tmp_path, target="temperature", missing="drop")
    with pytest.raises(ValueError, match=r"target attribute 'colour' \(from the target argument\) is not among"):
        load_openml(9002, cache_dir=tmp_path, target="colour")
    openml_writer(tmp_path, 9004, [("class", ["a", "b"])], [["a"], ["b"]])
    with pytest.raises(ValueError, match=r"test9004: no feature columns besides the labels"):
        load_openml(9004, cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"data_id must be an integer >= 1, got 'iris'"):
        load_openml("iris", cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"missing must be one of \('error', 'impute', 'drop'\), got 'skip'"):
        load_openml(9002, cache_dir=tmp_path, missing="skip")
    with pytest.raises(ValueError, match=r"attribute 'temperature' has 1 missing values \(first at row 2\)"):
        load_openml(9002, cache_dir=tmp_path, missing="error")


def test_load_openml_missing_id_fails_at_once_naming_it_and_how_to_fill_the_cache(tmp_path, no_network):
    start = time.perf_counter()
    with pytest.raises(DatasetNotFoundError) as info:
        load_openml(4242, cache_dir=tmp_path / "empty")
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert message.startswith(f"OpenML dataset 4242 is not in the cache directory {tmp_path / 'empty'}")
    assert "load_openml(4242, cache_dir=DIR, download=True)" in message


def test_load_openml_download_asks_openml_by_id_once(tmp_path, monkeypatch, openml_writer):
    import openml

    calls = []

    def fake_get_dataset(dataset_id, download_data=False, **kwargs):
        calls.append(dataset_id)
        root = Path(openml.config.get_config_as_dict()["cachedir"])
        openml_writer(root, dataset_id, _WEATHER, _WEATHER_ROWS, target="windy")

    monkeypatch.setattr(openml.datasets, "get_dataset", fake_get_dataset)
    data = load_openml(9003, cache_dir=tmp_path / "dl", download=True)
    assert calls == [9003] and data.n_rows == 4
    assert load_openml(9003, cache_dir=tmp_path / "dl", download=True) is data and calls == [9003]  # cached
