"""Ctrl-C in the middle of a cell: the cell checkpoints, and the same command continues it with the numbers of
a run that was never interrupted, bit for bit (same seeds, batch and device)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bandit_experiments import catalog, runner
from bandit_experiments.config import load_config
from bandit_experiments.results import ResultsDir

REPO = Path(__file__).resolve().parents[2]

AGENTS = {
    "LinUCB": "{grid: {exploration_scale: [0.1, 1.0]}}",
    "LinTS": "{}",
    "EpsGreedy": "{}",
    "UniformRandom": "{}",
    "LMCTS": "{fixed: {n_inner_steps: 5}, grid: {step_size: [0.01, 0.05]}}",
    "UCBGLM": "{}",
    "GLMTSL": "{}",
    "SGDTS": "{}",
    "NeuralUCB": "{fixed: {model_kwargs: {hidden: [8]}}}",
    "NeuralTS": "{fixed: {model_kwargs: {hidden: [8]}}}",
    "NeuralLinUCB": "{fixed: {model_kwargs: {hidden: [8]}}}",
    "NeuralEpsGreedy": "{fixed: {model_kwargs: {hidden: [8]}}}",
    "FGLMCTS": "{fixed: {n_inner_steps: 5}}", "MALATS": "{fixed: {n_inner_steps: 5}}",
    "HMCTS": "{fixed: {n_inner_steps: 3, n_leapfrog: 2}}", "ULMCTS": "{fixed: {n_inner_steps: 5}}",
    "EnsembleSampling": "{fixed: {n_members: 3}}", "VITS": "{fixed: {n_inner_steps: 3}}",
    "DiscountedLinUCB": "{}", "SlidingWindowLinUCB": "{fixed: {window: 5}}",
    "LinFullPost": "{}", "NeuralLinear": "{fixed: {model_kwargs: {hidden: [8]}, n_inner_steps: 3, train_every: 5}}",
}
CONFIG = "name: interrupt\nenv: LinearBandit-v0\nhorizon: 24\nseeds: 2\nenv_kwargs: {n_arms: 4, dim: 3}\nagents:\n" + \
    "".join(f"  {name}: {entry}\n" for name, entry in AGENTS.items())
STOP_AT = 13  # the round that is interrupted


@pytest.fixture
def config(write_config):
    return load_config(write_config(CONFIG, "c.yaml"))


def test_every_agent_class_is_covered():
    assert set(AGENTS) == set(catalog.agent_classes())


def _interrupt_in_predict(monkeypatch, cls, at: int) -> None:
    predict = cls.predict

    def stopped(agent, *args, **kwargs):
        if agent.t == at:
            raise KeyboardInterrupt  # as if Ctrl-C landed while the arms were chosen
        return predict(agent, *args, **kwargs)

    monkeypatch.setattr(cls, "predict", stopped)


@pytest.mark.parametrize("label", list(AGENTS))
def test_an_interrupted_cell_continues_with_the_numbers_of_an_uninterrupted_one(config, label, tmp_path,
                                                                                 monkeypatch):
    uninterrupted = runner.run_cell(config, label)
    assert not uninterrupted.failed, uninterrupted.record.get("failed")
    folder = tmp_path / "checkpoints" / label
    with monkeypatch.context() as patch:
        _interrupt_in_predict(patch, catalog.agent_classes()[label], STOP_AT)
        with pytest.raises(KeyboardInterrupt, match=f"{folder / 'batch.pt'} holds the cell's last checkpoint"):
            runner.run_cell(config, label, checkpoint_dir=folder, checkpoint_every_s=1e9)
    saved = torch.load(folder / "batch.pt", weights_only=True)
    assert saved["rounds"] == STOP_AT - 1 and saved["t"] == STOP_AT  # the rounds played before Ctrl-C
    resumed = runner.run_cell(config, label, checkpoint_dir=folder)
    assert resumed.record["notes"] == [f"continues from its checkpoint batch.pt at round {STOP_AT}"]
    np.testing.assert_array_equal(resumed.regret, uninterrupted.regret)
    assert resumed.record["final_regret"] == uninterrupted.record["final_regret"]
    # the times count the interrupted run's rounds too: selection and updates stay parts of the wall time
    assert saved["wall_s"] > saved["select_s"] + saved["update_s"]
    times = resumed.record
    assert times["wall_time_s"] > times["select_time_s"] + times["update_time_s"] > saved["select_s"]


def test_ctrl_c_during_an_update_ends_the_round_then_checkpoints(config, tmp_path, monkeypatch):
    cls = catalog.agent_classes()["LMCTS"]
    update, rounds_updated = cls.update, []

    def update_then_ctrl_c(agent, *args, **kwargs):
        if agent.t == STOP_AT:
            os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, in the middle of the update
        update(agent, *args, **kwargs)
        rounds_updated.append(agent.t - 1)

    uninterrupted = runner.run_cell(config, "LMCTS")
    folder = tmp_path / "LMCTS"
    with monkeypatch.context() as patch:
        patch.setattr(cls, "update", update_then_ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            runner.run_cell(config, "LMCTS", checkpoint_dir=folder, checkpoint_every_s=1e9)
    assert rounds_updated[-1] == STOP_AT  # the update was not cut short: the round was finished
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back
    assert torch.load(folder / "batch.pt", weights_only=True)["rounds"] == STOP_AT
    resumed = runner.run_cell(config, "LMCTS", checkpoint_dir=folder)
    np.testing.assert_array_equal(resumed.regret, uninterrupted.regret)


def test_a_cell_that_fails_mid_way_continues_from_its_last_periodic_checkpoint(config, tmp_path, monkeypatch):
    cls = catalog.agent_classes()["LinTS"]
    update = cls.update

    def fails(agent, *args, **kwargs):
        if agent.t == STOP_AT:
            raise RuntimeError("the machine ran out of memory (simulated)")
        update(agent, *args, **kwargs)

    uninterrupted = runner.run_cell(config, "LinTS")
    folder = tmp_path / "LinTS"
    with monkeypatch.context() as patch:
        patch.setattr(cls, "update", fails)
        failed = runner.run_cell(config, "LinTS", checkpoint_dir=folder, checkpoint_every_s=0.0)  # every round
    assert failed.failed
    # every_s = 0: the first round's checkpoint at least (later ones wait ten times a save's duration)
    rounds = torch.load(folder / "batch.pt", weights_only=True)["rounds"]
    assert 1 <= rounds <= STOP_AT - 1
    resumed = runner.run_cell(config, "LinTS", checkpoint_dir=folder)
    assert resumed.record["notes"] == [f"continues from its checkpoint batch.pt at round {rounds + 1}"]
    np.testing.assert_array_equal(resumed.regret, uninterrupted.regret)


def test_a_checkpoint_of_another_config_is_not_used(config, write_config, tmp_path, monkeypatch):
    folder = tmp_path / "LinUCB"
    with monkeypatch.context() as patch:
        _interrupt_in_predict(patch, catalog.agent_classes()["LinUCB"], STOP_AT)
        with pytest.raises(KeyboardInterrupt):
            runner.run_cell(config, "LinUCB", checkpoint_dir=folder, checkpoint_every_s=1e9)
    other = load_config(write_config(CONFIG.replace("seeds: 2", "seeds: 2\nseed: 7"), "other.yaml"))
    result = runner.run_cell(other, "LinUCB", checkpoint_dir=folder)
    assert result.record["notes"] == [f"checkpoint {folder / 'batch.pt'} not used (made with another config, "
                                      "device or version): removed, the cell starts at round 1"]
    np.testing.assert_array_equal(result.regret, runner.run_cell(other, "LinUCB").regret)


def test_the_same_command_continues_an_interrupted_experiment(config, tmp_path, monkeypatch):
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        _interrupt_in_predict(patch, catalog.agent_classes()["EpsGreedy"], STOP_AT)
        with pytest.raises(KeyboardInterrupt):
            runner.run_experiment(config, out, log=lambda line: None)
    results = ResultsDir(out)
    assert [c.label for c in results.read_cells()] == ["LinUCB", "LinTS"]  # finished before Ctrl-C: kept
    assert (out / "checkpoints" / "EpsGreedy" / "batch.pt").is_file()
    lines = []
    runner.run_experiment(config, out, log=lines.append)
    assert lines[0] == f"2 of {len(AGENTS)} cells already finished in {out}: skipped"
    assert lines[1].startswith("  EpsGreedy: final regret ")
    assert lines[1].endswith(f"; continues from its checkpoint batch.pt at round {STOP_AT})")
    assert not (out / "checkpoints" / "EpsGreedy").exists()  # removed once the cell is written
    reference = runner.run_experiment(config, tmp_path / "reference", log=lambda line: None).read_cells()
    for a, b in zip(results.read_cells(), reference, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)


def test_a_damaged_checkpoint_is_named_and_the_cell_starts_again(config, tmp_path, monkeypatch):
    folder = tmp_path / "LinTS"
    with monkeypatch.context() as patch:
        _interrupt_in_predict(patch, catalog.agent_classes()["LinTS"], STOP_AT)
        with pytest.raises(KeyboardInterrupt):
            runner.run_cell(config, "LinTS", checkpoint_dir=folder, checkpoint_every_s=1e9)
    file = folder / "batch.pt"
    file.write_bytes(file.read_bytes()[:100])  # truncated
    result = runner.run_cell(config, "LinTS", checkpoint_dir=folder)
    (note,) = result.record["notes"]
    assert note.startswith(f"checkpoint {file} not used (unreadable (") and note.endswith("the cell starts at round 1")
    np.testing.assert_array_equal(result.regret, runner.run_cell(config, "LinTS").regret)


SLOW = """\
name: sigint
env: LinearBandit-v0
horizon: 300
seeds: 2
env_kwargs: {n_arms: 4, dim: 3}
agents:
  Quick: {agent: LinUCB}
  Slow: {agent: NeuralTS, fixed: {model_kwargs: {hidden: [32]}}}
"""

RUN = """\
import sys
from bandit_experiments.config import load_config
from bandit_experiments.runner import run_experiment
try:
    run_experiment(load_config(sys.argv[1]), sys.argv[2], log=print, checkpoint_every_s=0.2)
except KeyboardInterrupt as exc:
    print(f"KeyboardInterrupt: {exc}")
    sys.exit(130)
"""


def test_sigint_to_a_run_checkpoints_and_the_same_command_continues_bit_for_bit(write_config, tmp_path):
    config_path = write_config(SLOW, "slow.yaml")
    out = tmp_path / "out"
    checkpoint = out / "checkpoints" / "Slow" / "batch.pt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-c", RUN, str(config_path), str(out)], env=env, cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not checkpoint.is_file():  # the slow cell is under way
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)  # Ctrl-C
    printed, _ = process.communicate(timeout=120)
    assert process.returncode == 130, printed
    assert printed.splitlines()[-1] == (f"KeyboardInterrupt: interrupted: {checkpoint} holds the cell's last "
                                        "checkpoint; the same command continues from it")
    rounds = torch.load(checkpoint, weights_only=True)["rounds"]
    assert 0 < rounds < 300, "the interrupt must land mid-cell for this test to mean anything"

    config = load_config(config_path)
    lines = []
    runner.run_experiment(config, out, log=lines.append)  # the same command
    assert lines == [f"1 of 2 cells already finished in {out}: skipped", lines[1]]
    assert lines[1].endswith(f"; continues from its checkpoint batch.pt at round {rounds + 1})")
    reference = runner.run_experiment(config, tmp_path / "reference", log=lambda line: None).read_cells()
    for a, b in zip(ResultsDir(out).read_cells(), reference, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)


def test_a_point_played_alone_after_the_batch_diverged_continues_from_its_own_checkpoint(write_config, tmp_path,
                                                                                         monkeypatch):
    text = CONFIG.split("agents:")[0] + "agents:\n  LMCTS: {fixed: {n_inner_steps: 5}, grid: {step_size: [0.01, 50]}}\n"
    config = load_config(write_config(text, "diverging.yaml"))
    uninterrupted = runner.run_cell(config, "LMCTS")
    assert uninterrupted.record["diverged"] == [False, True]
    cls, folder = catalog.agent_classes()["LMCTS"], tmp_path / "LMCTS"
    predict = cls.predict

    def stopped_alone(agent, *args, **kwargs):  # Ctrl-C while grid point 0 is played alone
        if agent.num_replicas == config.seeds and agent.t == STOP_AT:
            raise KeyboardInterrupt
        return predict(agent, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(cls, "predict", stopped_alone)
        with pytest.raises(KeyboardInterrupt, match="point0.pt holds the cell's last checkpoint"):
            runner.run_cell(config, "LMCTS", checkpoint_dir=folder, checkpoint_every_s=1e9)
    resumed = runner.run_cell(config, "LMCTS", checkpoint_dir=folder)
    assert f"continues from its checkpoint point0.pt at round {STOP_AT}" in resumed.record["notes"]
    assert resumed.record["diverged"] == [False, True] and resumed.record["errors"] == uninterrupted.record["errors"]
    np.testing.assert_array_equal(resumed.regret, uninterrupted.regret)


def test_an_env_that_hands_out_tensors_continues_bit_for_bit(tmp_path, monkeypatch):
    # The env of a CUDA run hands out torch tensors; on resume the restored rows are numpy, the new ones tensors.
    import gymnasium as gym

    from bandit_experiments.checkpoint import Checkpoint

    def env():
        return gym.make_vec("LinearBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", horizon=20,
                            n_arms=4, dim=3, array_type="torch")

    def agent():
        return catalog.agent_classes()["LinTS"](env(), seed=3, device="cpu")

    uninterrupted = runner.play_rounds(agent(), env(), 20)
    checkpoint = Checkpoint(tmp_path / "batch.pt", {"test": 1}, every_s=1e9)
    with monkeypatch.context() as patch:
        _interrupt_in_predict(patch, catalog.agent_classes()["LinTS"], STOP_AT)
        with pytest.raises(KeyboardInterrupt):
            runner.play_rounds(agent(), env(), 20, checkpoint=checkpoint)
    resumed = runner.play_rounds(agent(), env(), 20, checkpoint=Checkpoint(tmp_path / "batch.pt", {"test": 1}))
    assert resumed.notes == (f"continues from its checkpoint batch.pt at round {STOP_AT}",)
    np.testing.assert_array_equal(resumed.regret, uninterrupted.regret)
