"""The Showdown's real-data bandits and loaders (``bandit_gym/datasets/showdown.py``) on small data the tests write.

Mushroom and Statlog read the small OpenML stand-ins of ``conftest.py`` (``verify_checksums=False``); the
loaders of the Showdown's own files read files written here in each file's layout. Nothing downloads.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.datasets.loaders import load_dataset
from bandit_gym.datasets.showdown import (
    download_showdown_file,
    load_adult_file,
    load_census_file,
    load_covertype_file,
    load_financial_file,
    load_jester_file,
    mushroom_contexts,
)

pytest.importorskip("pandas")


def small(env_id: str, cache, **kwargs):
    return gym.make(env_id, cache_dir=str(cache), verify_checksums=False, **kwargs).unwrapped


def test_mushroom_contexts_one_hot_the_values_held_and_missing_as_its_own(small_cache, mushroom_rows):
    data = load_dataset("mushroom", cache_dir=small_cache, encoding="onehot", scaling="none", verify_checksums=False)
    x, names = mushroom_contexts(data.features.numpy(), data.feature_names)
    assert names == ("cap-shape=b", "cap-shape=x", "odor=a", "odor=n", "odor=p", "stalk-root=?", "stalk-root=b",
                     "stalk-root=c", "stalk-root=e", "stalk-root=r")
    assert np.array_equal(x.sum(axis=1), np.full(len(mushroom_rows), 3.0))  # one value per attribute
    missing = np.array([row[2] == "?" for row in mushroom_rows])
    assert np.array_equal(x[:, names.index("stalk-root=?")], missing.astype(np.float32))


def test_mushroom_rewards_coins_and_regret_follow_the_showdown_code(small_cache, mushroom_rows):
    sim = small("MushroomShowdown-v0", small_cache, horizon=4000).sim
    env = gym.make("MushroomShowdown-v0", cache_dir=str(small_cache), verify_checksums=False, horizon=4000)
    env.reset(seed=1)
    chunk = env.unwrapped.next_rounds(4000)
    x = chunk.contexts[:, 0, 0, : sim.context_dim]  # (n, 10) arm 0's block
    row = (x[:, None, :] == sim.features[None]).all(dim=2).int().argmax(dim=1)  # (n,) the row shown
    edible = torch.tensor([r[-1] == "e" for r in mushroom_rows])[row]  # (n,)
    eat, no_eat = chunk.rewards[:, 0, 1], chunk.rewards[:, 0, 0]  # (n,)
    assert torch.all(no_eat == 0) and torch.all(eat[edible] == 5)
    poisoned = eat[~edible]
    assert set(poisoned.tolist()) == {-35.0, 5.0}
    assert (poisoned == -35).double().mean().item() == pytest.approx(0.5, abs=5 * 0.5 / len(poisoned) ** 0.5)
    assert torch.equal(chunk.optimal_action[:, 0], edible.long())  # eat the edible ones only
    assert torch.equal(chunk.best[:, 0], torch.where(edible, 5.0, 0.0))  # the expected optimum
    eating = torch.ones_like(chunk.optimal_action)
    assert torch.equal(chunk.regret_of(eating)[:, 0], chunk.best[:, 0] - eat)  # 35 or -5 for a poisonous one
    counts = torch.bincount(row, minlength=len(mushroom_rows)).double()  # drawn with replacement, uniformly
    assert counts.min() > 0 and counts.std().item() < 5 * (4000 / len(mushroom_rows)) ** 0.5


def test_mushroom_always_eating_is_optimal_when_poison_pays_on_average(small_cache):
    env = gym.make("MushroomShowdown-v0", cache_dir=str(small_cache), verify_checksums=False, horizon=64,
                   reward_poisonous_bad=-1.0, prob_poisonous_bad=0.25)  # expected poisonous reward 3.5 > 0
    env.reset(seed=0)
    chunk = env.unwrapped.next_rounds(64)
    assert torch.all(chunk.optimal_action == 1)


def test_statlog_showdown_standardises_over_the_episodes_rows(small_cache):
    env = gym.make("StatlogShowdown-v0", cache_dir=str(small_cache), verify_checksums=False, horizon=42)
    env.reset(seed=2)
    sim = env.unwrapped.sim
    chunk = env.unwrapped.next_rounds(42)  # every row of the small Shuttle, once
    d = sim.feature_dim
    x = chunk.contexts[:, 0, 0, :d].double()  # (n, d)
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(d, dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(x.std(dim=0, correction=0), torch.ones(d, dtype=torch.float64), atol=1e-5, rtol=0)
    raw = sim.features[sim.rows[0]].double()  # (n, d) the rows in visiting order
    torch.testing.assert_close(x, (raw - raw.mean(0)) / raw.std(0, correction=0), atol=1e-5, rtol=0)
    assert torch.equal(chunk.rewards[:, 0].argmax(dim=1), sim.labels[sim.rows[0]])  # 1 for the true class
    assert env.observation_space.contains(chunk.contexts[0, 0].numpy())


def test_showdown_loaders_read_the_showdown_files_as_its_code_does(tmp_path):
    rng = np.random.default_rng(0)
    covtype = np.column_stack([rng.integers(0, 9, size=(6, 54)), [1, 2, 3, 7, 2, 1]])
    np.savetxt(tmp_path / "covtype.data", covtype, fmt="%d", delimiter=",")
    x, y = load_covertype_file(tmp_path / "covtype.data")
    assert x.shape == (5, 54) and np.array_equal(x, covtype[1:, :54])  # the first row is read as a header
    assert np.array_equal(y, [1, 2, 3, 1, 0])  # category codes of the sorted values 1, 2, 3, 7

    adult_rows = [[39, " State-gov", 77516, " Bachelors", 13, " Never-married", " Adm-clerical", " Not-in-family",
                   " White", " Male", 2174, 0, 40, " United-States", " <=50K"],
                  [50, " ?", 83311, " Bachelors", 13, " Married", " Exec-managerial", " Husband", " White", " Male",
                   0, 0, 13, " United-States", " <=50K"],
                  [38, " Private", 215646, " HS-grad", 9, " Divorced", " Handlers-cleaners", " Not-in-family",
                   " Black", " Female", 0, 0, 40, " Cuba", " >50K"]]
    (tmp_path / "adult.full").write_text("\n".join(",".join(str(v) for v in r) for r in adult_rows) + "\n")
    x, y = load_adult_file(tmp_path / "adult.full")
    assert np.array_equal(y, [0, 1])  # occupation codes of the rows kept: Adm-clerical, Handlers-cleaners
    assert x.shape == (2, 6 + 2 + 2 + 2 + 1 + 2 + 2 + 2 + 2)  # 6 numeric columns, the values held of 8 others

    (tmp_path / "census.txt").write_text("caseid,dAge,dOccup,iSex\n1,3,2,0\n2,1,?,1\n3,3,5,1\n4,2,2,0\n")
    x, y = load_census_file(tmp_path / "census.txt")
    assert np.array_equal(y, [0, 1, 0]) and x.shape == (3, 2 + 2)  # the values held: dAge 2, 3 and iSex 0, 1

    ratings = rng.uniform(-10, 10, size=(5, 40))
    np.save(tmp_path / "jester.npy", ratings)
    contexts, rewards = load_jester_file(tmp_path / "jester.npy")
    assert np.array_equal(contexts, ratings[:, :32]) and np.array_equal(rewards, ratings[:, 32:])
    with pytest.raises(ValueError, match="context_dim \\+ n_arms must be the file's columns"):
        load_jester_file(tmp_path / "jester.npy", context_dim=30)

    (tmp_path / "stocks").write_text("header line\n" + "\n".join(" ".join(["0.5"] * 21) for _ in range(3)) + "\n")
    assert load_financial_file(tmp_path / "stocks").shape == (3, 21)


@pytest.mark.parametrize(("env_id", "rows", "features", "classes"), [
    ("StatlogShowdown-v0", 42, 9, 7), ("CovertypeShowdown-v0", 35, 54, 7)])
def test_showdown_classification_ids_read_their_openml_preset(small_cache, env_id, rows, features, classes):
    venv = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", cache_dir=str(small_cache),
                        verify_checksums=False, horizon=rows)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (2, classes, classes * features)
    chunk = venv.unwrapped.next_rounds(rows)
    x = chunk.contexts[:, :, 0, :features].double()  # (n, 2, d) every row once per replica
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(2, features, dtype=torch.float64), atol=1e-5, rtol=0)


def test_mushroom_showdown_has_the_codes_117_context_values(real_cache):
    env = gym.make("MushroomShowdown-v0", cache_dir=str(real_cache))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 2 * 117) and env.unwrapped.sim.features.shape == (8124, 117)
    assert env.unwrapped.sim.edible.sum().item() == 4208  # UCI: 4,208 edible, 3,916 poisonous


def test_statlog_showdown_plays_a_loaded_files_x_y(tmp_path):
    rng = np.random.default_rng(1)
    covtype = np.column_stack([rng.integers(0, 9, size=(31, 54)), np.arange(31) % 3 + 1])
    np.savetxt(tmp_path / "covtype.data", covtype, fmt="%d", delimiter=",")
    X, y = load_covertype_file(tmp_path / "covtype.data")
    env = gym.make("StatlogShowdown-v0", dataset=None, X=X, y=y, horizon=30)
    obs, info = env.reset(seed=0)
    assert obs.shape == (3, 3 * 54) and env.unwrapped.sim.n_pool == 30
    chunk = env.unwrapped.next_rounds(30)
    x = chunk.contexts[:, 0, 0, :54].double()  # (n, 54)
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(54, dtype=torch.float64), atol=1e-5, rtol=0)


def test_download_showdown_file_reads_a_file_in_place_and_refuses_unknown_names(tmp_path):
    (tmp_path / "adult.full").write_text("cached\n")
    assert download_showdown_file("adult", tmp_path) == tmp_path / "adult.full"  # there: no download
    with pytest.raises(ValueError, match=r"name must be one of \['covertype', 'adult', 'census', 'jester', "):
        download_showdown_file("statlog", tmp_path)
