"""One dataset-env family: ClassificationBandit-v0 (your X, y), OpenMLBandit-v0 (any OpenML id), and the presets.

Everything is made through ``gym.make`` / ``gym.make_vec`` as a user would; the small OpenML
stand-ins of ``conftest.py`` are not the published data, hence ``verify_checksums=False`` for presets.
"""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch

import bandit_gym
from bandit_gym.datasets import (
    DATASET_ENV_IDS,
    USER_DATA_ENV_IDS,
    DatasetBanditEnv,
    DatasetNotFoundError,
    prepare_dataset,
)

VECTOR = "vector_entry_point"


def made_up(n_rows: int = 30, seed: int = 0) -> pd.DataFrame:
    """Three classes in turn, two numeric columns and one text column."""
    rng = np.random.default_rng(seed)
    classes = np.arange(n_rows) % 3
    return pd.DataFrame({"width": rng.normal(size=n_rows) + classes, "height": rng.normal(size=n_rows),
                         "colour": np.array(["red", "blue"])[rng.integers(0, 2, n_rows)],
                         "label": np.array(["cat", "dog", "eel"])[classes]})


def play(env: gym.Env, steps: int) -> list:
    out = []
    for t in range(steps):
        obs, reward, _, truncated, info = env.step(t % env.action_space.n)
        out += [obs, reward, truncated, info["regret"], info["optimal_action"]]
    return out


def rollout(env: gym.Env, seed: int, steps: int) -> list:
    obs, info = env.reset(seed=seed)
    return [obs, info["optimal_action"], *play(env, steps)]


def assert_same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_the_family_is_one_env_class_and_the_named_ids_are_presets_of_it():
    assert USER_DATA_ENV_IDS == ("ClassificationBandit-v0", "OpenMLBandit-v0")
    ids = (*USER_DATA_ENV_IDS, *DATASET_ENV_IDS)
    assert set(ids) <= set(bandit_gym.ENV_IDS)
    for env_id in ids:
        spec = gym.spec(env_id)
        assert spec.entry_point == "bandit_gym.datasets.envs:DatasetBanditEnv"
        assert spec.vector_entry_point == "bandit_gym.datasets.envs:DatasetBanditVectorEnv"
    assert gym.spec("ClassificationBandit-v0").kwargs["dataset"] is None
    assert gym.spec("OpenMLBandit-v0").kwargs["dataset"] is None
    assert gym.spec("Shuttle-v0").kwargs["dataset"] == "shuttle"


@pytest.mark.parametrize("form", ["numpy", "frame+column", "frame+series", "bunch"])
def test_every_form_of_user_data_gives_the_one_hot_bandit_of_its_prepared_rows(form):
    frame = made_up()
    numeric = frame[["width", "height"]].to_numpy()
    given = {
        "numpy": {"X": numeric, "y": frame["label"].to_numpy()},
        "frame+column": {"X": frame, "y": "label"},
        "frame+series": {"X": frame.drop(columns="label"), "y": frame["label"]},
        "bunch": {"X": {"data": numeric, "target": np.arange(30) % 3, "target_names": ["cat", "dog", "eel"]}},
    }[form]
    env = gym.make("ClassificationBandit-v0", **given, horizon=12)
    prepared = prepare_dataset(**given)
    k, d = 3, prepared.dim
    assert d == (3 if form.startswith("frame") else 2)
    assert env.unwrapped.class_names == ("cat", "dog", "eel")
    assert env.observation_space.shape == (k, k * d) and env.action_space == gym.spaces.Discrete(k)
    sim = env.unwrapped.sim
    obs, info = env.reset(seed=4)
    for _ in range(12):
        row = int(sim.rows[0, sim.t])
        expected = np.zeros((k, k * d), dtype=np.float32)
        for j in range(k):
            expected[j, j * d:(j + 1) * d] = prepared.features[row].numpy()
        np.testing.assert_array_equal(obs, expected)
        label = int(prepared.labels[row])
        assert info["optimal_action"] == label
        obs, reward, _, truncated, info = env.step(label)
        assert reward == 1.0 and info["regret"] == 0.0
    assert truncated


def test_user_data_options_reach_the_env_and_each_seed_shuffles_the_rows():
    frame = made_up()
    env = gym.make("ClassificationBandit-v0", X=frame, y="label")
    assert env.unwrapped.horizon == 30  # min(10_000, rows)
    onehot = gym.make("ClassificationBandit-v0", X=frame, y="label", encoding="onehot", scaling="standardize")
    assert onehot.observation_space.shape == (3, 3 * 4)  # width, height, colour=blue, colour=red
    assert np.isinf(onehot.observation_space.high).all()
    assert env.observation_space.high.max() == 1.0  # l2 rows by default
    sim = env.unwrapped.sim
    env.reset(seed=0)
    first = sim.rows[0].clone()
    assert sorted(first.tolist()) == list(range(30))  # every row once
    env.reset(seed=0)
    assert torch.equal(sim.rows[0], first)
    env.reset(seed=1)
    assert not torch.equal(sim.rows[0], first)
    assert gym.make("ClassificationBandit-v0", X=frame, y="label", max_rows=10).unwrapped.horizon == 10
    with pytest.raises(ValueError, match=r"horizon must be at most the number of rows, 30 \(X, y\).*got 31"):
        gym.make("ClassificationBandit-v0", X=frame, y="label", horizon=31)


def test_missing_values_are_refused_unless_imputed_or_dropped_through_gym_make():
    frame = made_up()
    frame.loc[5, "width"] = np.nan
    with pytest.raises(ValueError, match=r"X column 'width' has 1 missing values \(first at row 5\); pass "
                                         r"missing='impute'"):
        gym.make("ClassificationBandit-v0", X=frame, y="label")
    assert gym.make("ClassificationBandit-v0", X=frame, y="label", missing="impute").unwrapped.horizon == 30
    assert gym.make("ClassificationBandit-v0", X=frame, y="label", missing="drop").unwrapped.horizon == 29
    with pytest.raises(ValueError, match=r"missing must be one of \('error', 'impute', 'drop'\), got 'mean'"):
        gym.make("ClassificationBandit-v0", X=frame, y="label", missing="mean")


@pytest.mark.parametrize(("change", "match"), [
    (lambda f: f.assign(when=pd.date_range("2020-01-01", periods=30)),
     r"X column 'when' holds dates or durations .* convert them to numbers first"),
    (lambda f: f.assign(mixed=[1.5, "x"] * 15), r"X column 'mixed' mixes numbers and text"),
    (lambda f: f.assign(thing=[object()] * 30), r"X column 'thing' holds <object .* which cannot be encoded"),
    (lambda f: f.assign(label="cat"), r"y holds one class only \('cat' in all 30 rows\)"),
    (lambda f: f.assign(label=np.linspace(0, 1, 30)), r"y holds .*, not a class label"),
])
def test_bad_data_fails_in_gym_make_before_any_round(change, match):
    with pytest.raises(ValueError, match=match):
        gym.make("ClassificationBandit-v0", X=change(made_up()), y="label")
    with pytest.raises(ValueError, match=match):
        gym.make_vec("ClassificationBandit-v0", num_envs=2, vectorization_mode=VECTOR, X=change(made_up()), y="label")


def test_mismatched_lengths_and_misnamed_columns_fail_in_gym_make():
    frame = made_up()
    with pytest.raises(ValueError, match=r"X and y must have the same number of rows, got X with 30 and y with 29"):
        gym.make("ClassificationBandit-v0", X=frame[["width"]], y=frame["label"][:29])
    with pytest.raises(ValueError, match=r"y='kind' names no column of X; X's columns: \['width', 'height'"):
        gym.make("ClassificationBandit-v0", X=frame, y="kind")
    with pytest.raises(ValueError, match=r"y may be a column name \('label'\) only when X is a pandas DataFrame"):
        gym.make("ClassificationBandit-v0", X=frame.to_numpy(), y="label")


@pytest.mark.parametrize(("env_id", "kwargs", "match"), [
    ("ClassificationBandit-v0", {}, r"exactly one of X=\.\.\., y=\.\.\. .*; got none of them"),
    ("ClassificationBandit-v0", {"y": [0, 1]}, r"y is given but X is not"),
    ("OpenMLBandit-v0", {}, r"data_id=N \(an OpenML id: OpenMLBandit-v0\).*got none of them"),
    ("OpenMLBandit-v0", {"data_id": 0}, r"data_id must be an integer >= 1, got 0"),
    ("Shuttle-v0", {"X": np.eye(3)}, r"exactly one of .*; got dataset and X"),
    ("ClassificationBandit-v0", {"X": np.eye(2), "y": [0, 1], "data_id": 1120}, r"got data_id and X"),
    ("ClassificationBandit-v0", {"X": np.eye(2), "y": [0, 1], "cache_dir": "/data"},
     r"cache_dir applies to the named and OpenML datasets, not to X, y; got cache_dir='/data'"),
    ("ClassificationBandit-v0", {"X": np.eye(2), "y": [0, 1], "target": "class"},
     r"target applies .* not to X, y; got target='class'; for a DataFrame's label column pass y='COLUMN'"),
    ("Shuttle-v0", {"target": "class"}, r"target applies to OpenMLBandit-v0 \(data_id=\.\.\.\); Shuttle has its "),
    ("OpenMLBandit-v0", {"data_id": 1120, "feature_names": ["a"]}, r"feature_names names the columns of an array X"),
])
def test_a_missing_or_ambiguous_source_of_data_is_named(env_id, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(env_id, **kwargs)


def test_native_batched_env_replica_r_is_the_single_env_seeded_s_plus_r():
    frame = made_up()
    venv = gym.make_vec("ClassificationBandit-v0", num_envs=3, vectorization_mode=VECTOR, X=frame, y="label",
                        horizon=8)
    singles = [gym.make("ClassificationBandit-v0", X=frame, y="label", horizon=8) for _ in range(3)]
    obs, info = venv.reset(seed=10)
    single_obs = [env.reset(seed=10 + i)[0] for i, env in enumerate(singles)]
    for t in range(8):
        np.testing.assert_array_equal(obs, np.stack(single_obs))
        actions = np.array([t % 3, 1, 2])
        obs, rewards, _, truncated, info = venv.step(actions)
        for i, env in enumerate(singles):
            single_obs[i], reward, _, single_truncated, single_info = env.step(int(actions[i]))
            assert rewards[i] == reward and info["regret"][i] == single_info["regret"]  # 0 or 1: exact
            assert bool(truncated[i]) == single_truncated


def test_a_pickle_carries_the_users_data_and_continues_the_run():
    env = gym.make("ClassificationBandit-v0", X=made_up(), y="label")
    env.reset(seed=3)
    for t in range(5):
        env.step(t % 3)
    source = env.unwrapped.sim.source
    state = pickle.loads(pickle.dumps(source)).__dict__
    assert state["kind"] == "arrays" and torch.equal(state["data"].features, source.data.features)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.sim.data is not env.unwrapped.sim.data  # its own copy, from the pickle
    assert_same(play(clone, 10), play(env, 10))


@pytest.mark.parametrize("form", ["numpy", "frame+column"])
def test_the_spec_of_a_users_data_env_is_json_comparable_and_makes_the_same_env(form):
    frame = made_up()
    kwargs = ({"X": frame[["width", "height"]].to_numpy(), "y": frame["label"].to_numpy()} if form == "numpy"
              else {"X": frame, "y": "label"})
    env = gym.make("ClassificationBandit-v0", horizon=12, **kwargs)
    spec = env.spec
    assert spec.kwargs["X"] is None and spec.kwargs["y"] is None  # the arrays stay out of the spec
    assert str(spec.kwargs["data"]).startswith("X, y: 30 rows, ") and "sha256 " in spec.kwargs["data"]
    assert gym.envs.registration.EnvSpec.from_json(spec.to_json()) == spec  # JSON, and back to an equal spec
    assert spec == pickle.loads(pickle.dumps(spec))  # copies compare (a DataFrame in the spec used to raise)
    other = gym.make("ClassificationBandit-v0", horizon=12, X=made_up(seed=1), y="label")
    assert other.spec != spec  # other data, other spec
    for remade in (gym.make(spec), gym.make(gym.envs.registration.EnvSpec.from_json(spec.to_json()))):
        assert remade.spec == spec
        assert_same(rollout(remade, seed=4, steps=12), rollout(env, seed=4, steps=12))
    venv = gym.make_vec(spec, num_envs=2, vectorization_mode=VECTOR)
    assert venv.spec.to_json() and venv.spec.kwargs["data"] == spec.kwargs["data"]
    np.testing.assert_array_equal(venv.reset(seed=4)[0][0], env.reset(seed=4)[0])
    sync = gym.make_vec(spec, num_envs=2, vectorization_mode="sync")
    np.testing.assert_array_equal(sync.reset(seed=4)[0][0], env.reset(seed=4)[0])


def test_a_spec_data_name_with_other_options_or_unknown_here_is_refused():
    spec = gym.make("ClassificationBandit-v0", X=made_up(), y="label").spec
    with pytest.raises(ValueError, match=r"scaling='none' differs from the scaling='l2' that data= was prepared with"):
        gym.make(spec, scaling="none")
    unknown = str(spec.kwargs["data"]).replace("sha256 ", "sha256 0")
    with pytest.raises(ValueError, match=r"data='X, y: 30 rows.*' names no data of this process.*pass X=..., y=..."):
        gym.make("ClassificationBandit-v0", data=unknown)


def test_a_pickled_cached_dataset_env_holds_no_data_and_reads_them_again(small_cache):
    env = gym.make("OpenMLBandit-v0", data_id=40685, cache_dir=small_cache, horizon=20)
    env.reset(seed=0)
    sim_state = pickle.dumps(env.unwrapped.sim.source)
    assert len(sim_state) < 2_000  # how to load the data, not the 42 x 9 features
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.sim.data is env.unwrapped.sim.data  # read again, from the process's cache
    assert_same(play(clone, 5), play(env, 5))


def test_openml_id_reads_the_cache_like_the_preset_with_that_id(small_cache):
    by_id = gym.make("OpenMLBandit-v0", data_id=1120, cache_dir=small_cache, horizon=20)
    preset = gym.make("MagicTelescope-v0", cache_dir=small_cache, horizon=20, verify_checksums=False)
    assert isinstance(by_id.unwrapped, DatasetBanditEnv) and type(by_id.unwrapped) is type(preset.unwrapped)
    assert by_id.unwrapped.class_names == preset.unwrapped.class_names == ("g", "h")
    torch.testing.assert_close(by_id.unwrapped.sim.features, preset.unwrapped.sim.features, rtol=0, atol=0)
    assert_same(rollout(by_id, seed=5, steps=20), rollout(preset, seed=5, steps=20))
    venv = gym.make_vec("OpenMLBandit-v0", num_envs=2, vectorization_mode=VECTOR, data_id=1120,
                        cache_dir=small_cache, encoding="onehot", horizon=5)
    assert venv.single_observation_space.shape == (2, 2 * 10)


def test_openml_id_not_in_the_cache_fails_at_once_naming_the_directory(tmp_path, no_network):
    with pytest.raises(DatasetNotFoundError, match=rf"OpenML dataset 999 is not in the cache directory {tmp_path}"):
        gym.make("OpenMLBandit-v0", data_id=999, cache_dir=tmp_path)


def test_presets_take_the_familys_missing_option(small_cache):
    imputed = gym.make("Mushroom-v0", cache_dir=small_cache, verify_checksums=False)
    dropped = gym.make("Mushroom-v0", cache_dir=small_cache, verify_checksums=False, missing="drop")
    assert (imputed.unwrapped.horizon, dropped.unwrapped.horizon) == (8, 5)  # 3 rows lack stalk-root
    with pytest.raises(ValueError, match=r"stalk-root' has 3 missing values"):
        gym.make("Mushroom-v0", cache_dir=small_cache, verify_checksums=False, missing="error")


def test_bandit_gym_envs_lists_the_family_with_the_keywords_it_needs(capsys):
    from bandit_experiments import cli

    assert cli.main(["envs"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert "needs X=..., y=..." in rows["ClassificationBandit-v0"]
    assert "needs data_id=N" in rows["OpenMLBandit-v0"]


@pytest.mark.slow  # two spawned interpreters import torch: about 12 s on a busy 2-core CPU
def test_async_workers_get_the_users_data_by_fork_and_spawn(tmp_path):
    # Forked workers of a parent that started torch's threads would hang in the row shuffle (a
    # multi-threaded sort): the dataset envs run it on one thread there (tests/envs checks every id).
    # With 'spawn' each worker unpickles its env's X, y. Both equal the native batched env.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import gymnasium as gym, numpy as np, torch, bandit_gym
        X = np.arange(40.0).reshape(20, 2) % 7
        y = np.arange(20) % 2
        torch.randn(2**20).exp()                                  # torch's intra-op threads now exist
        make = dict(num_envs=2, X=X, y=y, horizon=6)
        native = gym.make_vec("ClassificationBandit-v0", vectorization_mode="vector_entry_point", **make)
        for context in ("fork", "spawn"):
            venv = gym.make_vec("ClassificationBandit-v0", vectorization_mode="async",
                                vector_kwargs={"context": context}, **make)
            same = all(np.array_equal(a, b) for a, b in zip(venv.reset(seed=3)[0], native.reset(seed=3)[0]))
            for t in range(5):
                a, b = venv.step(np.array([t % 2, 1])), native.step(np.array([t % 2, 1]))
                same &= np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
            print(context + ":", same)
            venv.close()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["fork: True", "spawn: True"]
