"""Integration on the real UCI data of the shared OpenML cache (a writable copy; skipped when absent)."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents import LinUCB, UniformRandom
from bandit_gym.datasets import DatasetIntegrityError, load_dataset
from bandit_gym.datasets.loaders import SPECS, load_openml

# Class counts from the UCI documentation, in arm order (declared class values: 1..7, g/h, e/p).
KNOWN_COUNTS = {
    "shuttle": [45586, 50, 171, 8903, 3267, 10, 13],
    "magictelescope": [12332, 6688],
    "mushroom": [4208, 3916],
}
SHAPES = {"Shuttle-v0": (7, 7 * 9), "MagicTelescope-v0": (2, 2 * 10), "Mushroom-v0": (2, 2 * 22)}


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_real_class_frequencies_match_uci(real_cache, name):
    data = load_dataset(name, cache_dir=real_cache)
    assert torch.bincount(data.labels).tolist() == KNOWN_COUNTS[name]
    torch.testing.assert_close(data.features.norm(dim=1), torch.ones(data.n_rows))  # L2 rows


def _plain_text_figures(arff: Path) -> tuple[list[str], int, dict[str, int]]:
    """Attribute names, data rows and rows per class of an ARFF file, by splitting its lines (no ARFF parser)."""
    lines = arff.read_text().splitlines()
    names = [line.split()[1].strip("'\"") for line in lines if line.upper().startswith("@ATTRIBUTE")]
    rows = [line for line in lines[[line.upper() for line in lines].index("@DATA") + 1 :] if line.strip()]
    labels = [row.rsplit(",", 1)[1].strip() for row in rows]
    return names, len(rows), {c: labels.count(c) for c in sorted(set(labels))}


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_published_figures_are_those_of_the_real_files(real_cache, name):
    spec = SPECS[name]
    arff = real_cache / "org" / "openml" / "www" / "datasets" / str(spec.openml_id) / "dataset.arff"
    names, n_rows, per_class = _plain_text_figures(arff)
    row_id = ["ID"] if name == "magictelescope" else []
    assert names == [*row_id, *spec.feature_names, spec.target]
    assert n_rows == spec.n_rows and per_class == dict(spec.class_counts)
    assert [n for _, n in spec.class_counts] == KNOWN_COUNTS[name]  # and the UCI documentation's counts
    data = load_dataset(name, cache_dir=real_cache)  # the check passes on the real files
    assert data.n_rows == spec.n_rows and data.feature_names == spec.feature_names


def test_real_magic_telescope_truncated_at_a_row_boundary_is_refused(real_cache, tmp_path):
    # The case: a partial file that ends on a complete row parses without error.
    root = tmp_path / "cache"
    shutil.copytree(real_cache, root)
    arff = root / "org" / "openml" / "www" / "datasets" / "1120" / "dataset.arff"
    lines = arff.read_text().splitlines()
    arff.write_text("\n".join(lines[: lines.index("@DATA") + 1 + 3000]) + "\n")
    with pytest.raises(DatasetIntegrityError, match=r"expected 19,020 rows, found 3,000") as info:
        gym.make("MagicTelescope-v0", cache_dir=root)
    assert str(info.value).startswith(f"{arff} is not the published MagicTelescope dataset (OpenML 1120)")
    # Its first 12,332 rows are class g: a copy cut at 15,000 rows loads on purpose with verify_checksums=False.
    arff.write_text("\n".join(lines[: lines.index("@DATA") + 1 + 15000]) + "\n")
    assert load_dataset("magictelescope", cache_dir=root, verify_checksums=False).n_rows == 15000


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_a_parquet_cache_gives_the_arff_numbers_and_is_checked_too(real_cache, tmp_path, name):
    # Plain openml caches hold parquet files; they keep no declared value order (the reader sorts).
    from bandit_gym.datasets import _openml_files

    spec = SPECS[name]
    source = real_cache / "org" / "openml" / "www" / "datasets" / str(spec.openml_id)
    folder = tmp_path / "pq" / "org" / "openml" / "www" / "datasets" / str(spec.openml_id)
    folder.mkdir(parents=True)
    shutil.copy(source / "description.xml", folder)
    _, _, frame = _openml_files._read_arff(source / "dataset.arff")
    frame.to_parquet(folder / f"dataset_{spec.openml_id}.pq")
    for encoding in ("ordinal", "onehot"):
        arff = load_dataset(name, cache_dir=real_cache, encoding=encoding)
        parquet = load_dataset(name, cache_dir=tmp_path / "pq", encoding=encoding)
        assert parquet.source.suffix == ".pq"
        assert torch.equal(parquet.features, arff.features) and torch.equal(parquet.labels, arff.labels)
        assert parquet.feature_names == arff.feature_names and parquet.class_names == arff.class_names
    frame.iloc[:3000].to_parquet(folder / f"dataset_{spec.openml_id}.pq")  # a partial file
    with pytest.raises(DatasetIntegrityError, match=f"expected {spec.n_rows:,} rows, found 3,000"):
        load_dataset(name, cache_dir=tmp_path / "pq", scaling="none")


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_load_openml_by_id_gives_the_named_datasets_numbers(real_cache, name):
    named = load_dataset(name, cache_dir=real_cache, encoding="onehot")
    by_id = load_openml(SPECS[name].openml_id, cache_dir=real_cache, encoding="onehot")
    assert torch.equal(by_id.features, named.features) and torch.equal(by_id.labels, named.labels)
    assert by_id.class_names == named.class_names and by_id.feature_names == named.feature_names


@pytest.mark.parametrize("env_id", sorted(SHAPES))
def test_real_env_shapes_and_reward_semantics(real_cache, env_id):
    env = gym.make(env_id, cache_dir=real_cache)
    assert env.unwrapped.horizon == min(10_000, env.unwrapped.sim.data.n_rows)
    obs, info = env.reset(seed=0)
    assert obs.shape == SHAPES[env_id] and env.observation_space.shape == SHAPES[env_id]
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = int(rng.integers(env.action_space.n))
        label = info["optimal_action"]
        obs, reward, _, _, info = env.step(action)
        assert reward == float(action == label) and info["regret"] == 1.0 - reward


def test_real_mushroom_full_pass_sees_every_row_once(real_cache):
    venv = gym.make_vec("Mushroom-v0", num_envs=2, vectorization_mode="vector_entry_point", cache_dir=real_cache)
    _, info = venv.reset(seed=4)
    sim = venv.unwrapped.sim
    assert venv.unwrapped.horizon == 8124 and sim.rows.shape == (2, 8124)
    for rows in sim.rows:  # each replica: a permutation of all rows, so the episode's classes are the UCI counts
        assert sorted(rows.tolist()) == list(range(8124))
        assert torch.bincount(sim.labels[rows]).tolist() == KNOWN_COUNTS["mushroom"]
    assert not torch.equal(sim.rows[0], sim.rows[1])
    for t in range(100):  # and the env shows the rows in that order
        assert info["optimal_action"].tolist() == sim.labels[sim.rows[:, t]].tolist()
        _, _, _, _, info = venv.step(torch.zeros(2, dtype=torch.int64))


def _ridge_ucb_rewards(venv, seed: int, rounds: int, alpha: float, lam: float = 1.0) -> torch.Tensor:
    """A small batched ridge-regression UCB (written here so that this test does not depend on agents/).

    Works with numpy or torch observations (the native vector env's default array type is numpy on CPU).
    """
    raw, _ = venv.reset(seed=seed)
    as_numpy = isinstance(raw, np.ndarray)
    obs = torch.as_tensor(raw)
    r, k, d = obs.shape
    v_inv = torch.eye(d).repeat(r, 1, 1) / lam  # (R, d, d)
    b = torch.zeros(r, d, 1)  # (R, d, 1)
    rewards = torch.zeros(rounds, r)
    for t in range(rounds):
        mean = (obs @ (v_inv @ b)).squeeze(-1)  # (R, K)
        width = ((obs @ v_inv) * obs).sum(-1).clamp_min(0).sqrt()  # (R, K)
        actions = (mean + alpha * width).argmax(1)  # (R,)
        x = obs[torch.arange(r), actions][:, :, None]  # (R, d, 1)
        raw, reward, _, _, _ = venv.step(actions.numpy() if as_numpy else actions)
        obs, reward = torch.as_tensor(raw), torch.as_tensor(reward, dtype=torch.float32)
        vx = v_inv @ x  # (R, d, 1), Sherman-Morrison update of V^-1
        v_inv -= (vx @ vx.transpose(1, 2)) / (1 + (x * vx).sum((1, 2)))[:, None, None]
        b += reward[:, None, None] * x
        rewards[t] = reward
    return rewards


def test_real_linear_agent_beats_uniform_random_on_magic_telescope(real_cache):
    rounds = 1000
    venv = gym.make_vec(
        "MagicTelescope-v0", num_envs=4, vectorization_mode="vector_entry_point", cache_dir=real_cache, horizon=rounds
    )
    linear = _ridge_ucb_rewards(venv, seed=0, rounds=rounds, alpha=1.0)
    # Uniform random on the same episodes: its reward is 1 exactly when its guess is the row's class.
    sim = venv.unwrapped.sim
    labels = sim.labels[sim.rows].T  # (T, R) classes in visiting order
    guesses = torch.randint(0, 2, (rounds, 4), generator=torch.Generator().manual_seed(0))
    uniform = (guesses == labels).float()  # (T, R)
    # Uniform guessing is right half the time whatever the data; a per-class linear model does much better.
    # (The majority class alone would give 0.65; measured: 0.74 to 0.77 per replica over the second half.)
    assert abs(uniform.mean().item() - 0.5) < 0.04
    late = linear[rounds // 2 :].mean(0)  # (R,)
    assert late.mean().item() > 0.7 and late.min().item() > 0.68, late


def test_real_agents_linucb_beats_uniform_random_on_magic_telescope(real_cache):
    venv = gym.make_vec(
        "MagicTelescope-v0", num_envs=4, vectorization_mode="vector_entry_point", cache_dir=real_cache, horizon=1000
    )
    linucb = LinUCB(venv, seed=0, device="cpu").learn(venv)
    uniform = UniformRandom(venv, seed=0, device="cpu").learn(venv)
    assert linucb.history["reward"].mean() > uniform.history["reward"].mean() + 0.1
