"""Results on disk under faults, each injected: damaged files are named and dealt with, checksums are verified
before a number is shown, a write that fails names its file and loses nothing, and one run at a time writes."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bandit_experiments import summary
from bandit_experiments.config import load_config
from bandit_experiments.results import (
    ResultsDamagedError,
    ResultsDir,
    ResultsLockedError,
    ResultsWriteError,
    write_atomic,
)
from bandit_experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
name: faults
env: LinearBandit-v0
horizon: 20
seeds: 2
env_kwargs: {n_arms: 4, dim: 3}
agents:
  LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
  LinTS: {}
  EpsGreedy: {}
"""


@pytest.fixture
def finished(write_config, tmp_path):
    """A config and a results directory where every cell is finished."""
    config = load_config(write_config(CONFIG, "c.yaml"))
    return config, run_experiment(config, tmp_path / "out", log=lambda line: None)


def _run(config, results, lines=None):
    return run_experiment(config, results.path, log=(lambda line: None) if lines is None else lines.append)


@pytest.mark.parametrize("damage, reason", [
    (lambda data: data[: len(data) // 2], "not valid JSON"),  # truncated
    (lambda data: data.replace(b'"label"', b'"lab\xff\xfeel"', 1), "not UTF-8 text"),
], ids=["truncated", "invalid-utf8"])
def test_a_damaged_cell_record_is_named_moved_aside_and_recomputed(finished, damage, reason):
    config, results = finished
    record_file = results.cells_dir / "LinTS.json"
    good = ResultsDir(results.path).read_cells()[1]
    broken = damage(record_file.read_bytes())
    record_file.write_bytes(broken)
    lines = []
    _run(config, results, lines)  # before: "error: Expecting property name ..." naming no file
    assert lines[0].startswith(f"  LinTS: {record_file} is damaged: {reason}")
    assert lines[0].endswith("moved aside as LinTS.npz.damaged and LinTS.json.damaged; the cell runs again")
    assert lines[1] == f"2 of 3 cells already finished in {results.path}: skipped"
    assert (results.cells_dir / "LinTS.json.damaged").read_bytes() == broken
    again = ResultsDir(results.path).read_cells()[1]
    np.testing.assert_array_equal(again.regret, good.regret)


@pytest.mark.parametrize("damage", [lambda data: data[:-40], lambda data: data.replace(b'"config"', b'"c\xffnfig"')],
                         ids=["truncated", "invalid-utf8"])
def test_a_damaged_experiment_json_is_an_error_naming_it_for_run_and_table(finished, damage):
    config, results = finished
    file = results.path / "experiment.json"
    file.write_bytes(damage(file.read_bytes()))
    def files():  # every result file; not .lock, which each run rewrites with its pid and start time
        return {p: p.read_bytes() for p in results.path.rglob("*") if p.is_file() and p.name != ".lock"}

    before = files()
    for action in (lambda: _run(config, results), lambda: summary.write_summary(results.path)):
        with pytest.raises(ResultsDamagedError) as caught:
            action()
        message = str(caught.value)
        assert message.startswith(f"{file} is damaged: ") and "\n" not in message
        assert "restore it from a copy, or give another --out DIR" in message
    assert files() == before  # nothing touched


def _flip_a_byte(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x01
    file.write_bytes(bytes(data))


def test_table_verifies_checksums_before_showing_a_number(finished):
    _, results = finished
    _flip_a_byte(results.cells_dir / "LinTS.npz")  # before: a BadZipFile traceback, or the changed numbers shown
    record_file = results.cells_dir / "EpsGreedy.json"
    record = json.loads(record_file.read_text())
    record["final_regret"][0]["mean"] = 123456.0  # an edited number
    record_file.write_text(json.dumps(record, indent=2))
    text, _, md_path = summary.write_summary(results.path)
    lines = text.splitlines()
    assert "(2 agents damaged, not shown)" in lines[0]
    assert [line.split()[0] for line in lines[2:3]] == ["LinUCB"]  # the one intact cell is the only row
    assert not any(line.startswith(("LinTS ", "EpsGreedy ")) for line in lines)
    assert "123456" not in text
    assert (f"LinTS: NOT SHOWN: {results.cells_dir / 'LinTS.npz'} does not match the sha256 recorded in LinTS.json"
            in text)
    assert f"EpsGreedy: NOT SHOWN: {record_file} does not match its recorded sha256" in text
    assert "| LinTS |" not in md_path.read_text() and "LinTS: NOT SHOWN" in md_path.read_text()
    for label in ("LinTS.npz", "EpsGreedy.json"):  # the evidence is left as it is for the user to look at
        assert (results.cells_dir / label).is_file()


def test_a_full_disk_loses_nothing_finished_and_names_the_file(write_config, tmp_path, monkeypatch):
    config = load_config(write_config(CONFIG, "c.yaml"))
    out = tmp_path / "out"
    real_fsync, writes = os.fsync, []

    def fsync(fd):
        writes.append(fd)
        if len(writes) == 4:  # experiment.json, LinUCB.npz, LinUCB.json, then LinTS.npz: the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(ResultsWriteError) as caught:
        run_experiment(config, out, log=lambda line: None)
    message = str(caught.value)
    assert message.startswith(f"cannot write {out / 'cells' / 'LinTS.npz'}: No space left on device (free some "
                              "space, then run the same command again)")
    assert caught.value.errno == errno.ENOSPC and "\n" not in message
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [".lock", "LinUCB.json", "LinUCB.npz",
                                                                      "experiment.json"]  # no temporary file
    monkeypatch.setattr(os, "fsync", real_fsync)
    lines = []
    run_experiment(config, out, log=lines.append)  # space again: the finished cell is kept, the others run
    assert lines[0] == f"1 of 3 cells already finished in {out}: skipped"
    assert [c.label for c in ResultsDir(out).read_cells()] == ["LinUCB", "LinTS", "EpsGreedy"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_out_is_one_error_naming_it(write_config, finished, tmp_path):
    config, results = finished
    locked_out = tmp_path / "ro"
    locked_out.mkdir()
    locked_out.chmod(0o555)
    try:
        with pytest.raises(ResultsWriteError, match=f"^cannot write {locked_out / '.lock'}: Permission denied"):
            run_experiment(config, locked_out, log=lambda line: None)
        results.path.chmod(0o555)
        with pytest.raises(ResultsWriteError, match=f"^cannot write {results.path / 'summary.csv'}: "):
            summary.write_summary(results.path)
        assert "LinUCB" in summary.summarize(results.path).text  # the table itself needs no write
    finally:
        locked_out.chmod(0o755)
        results.path.chmod(0o755)


def test_a_read_only_out_as_root_is_simulated_by_the_write_error(finished, monkeypatch):
    # Tests may run as root (in containers), where chmod does not stop a write: the same fault, injected.
    config, results = finished

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    before = {p: p.read_bytes() for p in results.path.rglob("*") if p.is_file()}
    with pytest.raises(ResultsWriteError, match=f"^cannot write {results.path / 'summary.csv'}: Permission denied "
                       r"\(make the directory writable, or give another --out DIR\)"):
        summary.write_summary(results.path)
    assert {p: p.read_bytes() for p in results.path.rglob("*") if p.is_file()} == before


def test_write_atomic_leaves_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    target.write_bytes(b"old")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error")))
    with pytest.raises(ResultsWriteError, match=f"cannot write {target}: Input/output error"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


HOLD = """\
import sys, time
from bandit_experiments.results import ResultsDir
with ResultsDir(sys.argv[1]).locked():
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_second_run_into_the_same_out_fails_at_once_naming_the_holder(finished):
    config, results = finished
    stale = results.cells_dir / ".LinTS.npz.abc.tmp"  # a live run's temporary file
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(results.path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    try:
        assert holder.stdout.readline() == "locked\n"
        stale.write_bytes(b"being written")
        with pytest.raises(ResultsLockedError) as caught:
            _run(config, results)
        assert str(caught.value).startswith(f"{results.path} is in use by another run (pid {holder.pid} on ")
        assert "wait for it to finish, or give another --out DIR" in str(caught.value)
        assert stale.read_bytes() == b"being written"  # the other run's temporary file is left alone
    finally:
        holder.kill()
        holder.wait()
    stale.unlink()
    lines = []
    _run(config, results, lines)  # the holder is gone: its lock went with it
    assert lines == [f"3 of 3 cells already finished in {results.path}: skipped"]
