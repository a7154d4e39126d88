"""A user's own data through prepare_dataset: numpy, pandas, sklearn Bunch; the named datasets' numbers; bad data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from bandit_gym.datasets import load_dataset, prepare_dataset


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
    ],
)
def test_bad_data_is_refused_before_any_round(x, y, match):
    with pytest.raises(ValueError, match=match):
        prepare_dataset(x, y)


def test_bad_options_name_the_argument_and_the_accepted_values():
    with pytest.raises(ValueError, match=r"missing must be one of \('error', 'impute', 'drop'\), got 'mean'"):
        prepare_dataset(np.eye(2), [0, 1], missing="mean")
    with pytest.raises(ValueError, match=r"encoding must be one of \('ordinal', 'onehot'\), got 'dummies'"):
        prepare_dataset(np.eye(2), [0, 1], encoding="dummies")
