"""``bandit_gym.logged`` refuses bad logs, bad target policies and damaged files, naming the field and index."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bandit_gym.logged import ESTIMATORS, BanditLog

T, R, K, D = 6, 2, 3, 2


def arrays() -> dict[str, np.ndarray]:
    """A small valid log's fields: uniform propensities, arms' features and rewards from a fixed generator."""
    generator = np.random.default_rng(0)
    return {
        "features": generator.normal(size=(T, R, K, D)).astype(np.float32),
        "actions": generator.integers(0, K, (T, R)),
        "rewards": generator.normal(size=(T, R)),
        "propensities": np.full((T, R), 1.0 / K),
        "expected_rewards": generator.normal(size=(T, R, K)).astype(np.float32),
    }


def uniform_target() -> np.ndarray:
    return np.full((T, R, K), 1.0 / K)


def one_line(excinfo: pytest.ExceptionInfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and len(message) < 300
    return message


@pytest.mark.parametrize(
    ("field", "index", "value", "match"),
    [
        ("rewards", (3, 1), np.nan, r"rewards must be finite; rewards\[3, 1\] is nan"),
        ("rewards", (0, 0), np.inf, r"rewards must be finite; rewards\[0, 0\] is inf"),
        ("features", (2, 0, 1, 1), np.nan, r"features must be finite; features\[2, 0, 1, 1\] is nan"),
        ("features", (5, 1, 0, 0), -np.inf, r"features must be finite; features\[5, 1, 0, 0\] is -inf"),
        ("expected_rewards", (1, 1, 2), np.nan, r"expected_rewards must be finite; expected_rewards\[1, 1, 2\] is nan"),
        ("propensities", (4, 0), np.nan, r"propensities must lie in \(0, 1\] .*; propensities\[4, 0\] is nan"),
        ("propensities", (1, 1), 1.5, r"propensities must lie in \(0, 1\] .*; propensities\[1, 1\] is 1.5"),
        ("actions", (2, 1), K, rf"actions must be arm indices in \[0, {K}\); actions\[2, 1\] is {K}"),
    ],
)
def test_bandit_log_names_the_field_and_first_bad_index(field, index, value, match):
    fields = arrays()
    fields[field][index] = value
    with pytest.raises(ValueError, match=match) as excinfo:
        BanditLog(**fields)
    one_line(excinfo)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("propensities", np.ones((T, R), bool), "propensities must be a numpy array of float numbers, got dtype bool"),
        ("actions", np.zeros((T, R)), "actions must be a numpy array of integer or unsigned integer numbers, got "
                                      "dtype float64"),
        ("rewards", np.zeros((T, R), bool), "rewards must be a numpy array of float or integer or unsigned integer "
                                            "numbers, got dtype bool"),
        ("rewards", [[0.0] * R] * T, "rewards must be a numpy array of float .* of type list"),
        ("features", np.zeros((0, R, K, D), np.float32), r"features must have shape \(T, R, K, d\) with at least one "
                                                         r"round, replica, arm and feature, got \(0, 2, 3, 2\)"),
    ],
)
def test_bandit_log_refuses_a_dtype_or_an_empty_log(field, value, match):
    fields = arrays()
    fields[field] = value
    if field == "features":  # a log of no rounds: every field empty
        fields = {name: array[:0] for name, array in fields.items()}
    with pytest.raises(ValueError, match=match) as excinfo:
        BanditLog(**fields)
    one_line(excinfo)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda p: p.__setitem__((2, 1, 0), np.nan), r"target must hold probabilities >= 0; target\[2, 1, 0\] is nan"),
        (lambda p: p.__setitem__((4, 0, 1), -0.25), r"target must hold probabilities >= 0; target\[4, 0, 1\] is -0.25"),
        (lambda p: p.__setitem__((3, 1, 2), 0.5), r"target.sum\(axis=2\) must be 1 .*; target.sum\(axis=2\)\[3, 1\] is "
                                                  r"1.166"),
    ],
)
@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_estimators_refuse_target_probabilities_naming_the_round(change, match, estimator):
    target = uniform_target()
    change(target)
    with pytest.raises(ValueError, match=match) as excinfo:
        ESTIMATORS[estimator](BanditLog(**arrays()), target)
    one_line(excinfo)


def test_estimators_accept_probabilities_within_float32_rounding():
    target = uniform_target().astype(np.float32).astype(np.float64)  # 1/3 rounded: rows sum to 1 +- 3e-8
    assert not np.all(target.sum(axis=2) == 1)
    value = ESTIMATORS["IPS"](BanditLog(**arrays()), target).value
    assert np.isfinite(value).all()


def test_estimators_refuse_a_bool_target_and_a_bad_level():
    log = BanditLog(**arrays())
    with pytest.raises(ValueError, match="target must be a numpy array of float numbers, got dtype bool"):
        ESTIMATORS["SNIPS"](log, uniform_target() > 0)
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\), got '0.9'"):
        ESTIMATORS["IPS"](log, uniform_target(), level="0.9")
    with pytest.raises(ValueError, match="lambda_reg must be a finite number >= 0.0, got -1.0"):
        ESTIMATORS["DM"](log, uniform_target(), lambda_reg=-1.0)


def _saved(tmp_path, name: str = "log.npz") -> tuple:
    path = tmp_path / name
    BanditLog(**arrays()).save(path)
    return path, path.read_bytes()


@pytest.mark.parametrize("damage", ["truncated", "empty", "crc", "npy"])
def test_load_of_a_damaged_file_names_the_file(tmp_path, damage):
    path, data = _saved(tmp_path)
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "crc":  # the archive's index is intact, one member's bytes are not
        start = data.index(b"rewards.npy") + 200
        path.write_bytes(data[:start] + bytes(b ^ 0xFF for b in data[start:start + 16]) + data[start + 16:])
    else:
        np.save(path.with_suffix(".npy"), np.zeros(3))
        path = path.with_suffix(".npy")
    with pytest.raises(ValueError, match=re.escape(str(path))) as excinfo:
        BanditLog.load(path)
    message = one_line(excinfo)
    assert "truncated or damaged" in message or "is not a bandit log" in message


def test_load_of_a_refused_log_names_the_file_and_the_field(tmp_path):
    fields = arrays()
    fields["rewards"][1, 0] = np.nan
    path = tmp_path / "nan.npz"
    np.savez(path, **fields)
    with pytest.raises(ValueError, match=re.escape(f"{path}: rewards must be finite; rewards[1, 0] is nan")):
        BanditLog.load(path)
