"""The command line under faults: a closed pipe, Ctrl-C, a read-only directory, a full disk. Each ends in one
line on stderr (no traceback) that names the path and what to do, with the status of its kind.

The faults are injected: the pipe is closed before the command writes, SIGINT is sent to a running
``bandit-gym run``, and a read-only directory or a full disk is an ``OSError`` from ``os.mkdir``/``os.open``
for the paths inside one directory (these tests run as root on CI, where ``chmod`` stops nothing).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bandit_experiments import cli

CONFIG = """\
name: faults
env: LinearBandit-v0
horizon: {horizon}
seeds: 2
agents:
  LinUCB: {{grid: {{exploration_scale: [0.1, 1.0]}}}}
  EpsGreedy: {{}}
"""


@pytest.fixture
def config_file(write_config):
    return write_config(CONFIG.format(horizon=30), "faults.yaml")


def _one_line(capsys, argv: list[str], status: int) -> str:
    try:
        assert cli.main(argv) == status
    except KeyboardInterrupt:  # not re-raised into pytest, which would stop the whole session
        pytest.fail("Ctrl-C escaped bandit-gym as a traceback")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    return err[0]


def _fail_inside(monkeypatch, directory: Path, code: int, below: str = "") -> None:
    """Make creating a directory or a file inside ``directory`` (under ``below`` in it) fail with ``code``."""
    root = os.path.abspath(directory / below) if below else os.path.abspath(directory)
    real_mkdir, real_open = os.mkdir, os.open

    def inside(path) -> bool:
        path = os.path.abspath(os.fspath(path))
        return path == root or path.startswith(root + os.sep)

    def mkdir(path, *args, **kwargs):
        if inside(path):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and inside(path):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)


# -- a closed pipe ----------------------------------------------------------------------------------
def test_output_into_a_closed_pipe_ends_quietly_with_the_sigpipe_status():
    """``bandit-gym envs | head -3`` after head exits: no BrokenPipeError traceback, status 128 + SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes: every write fails with EPIPE
    try:
        out = subprocess.run([sys.executable, "-m", "bandit_experiments", "envs"], stdout=write_end,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert out.stderr == ""
    assert out.returncode == 128 + signal.SIGPIPE


def test_a_closed_pipe_in_a_shell_pipeline_prints_nothing_on_stderr():
    out = subprocess.run(f"{sys.executable} -m bandit_experiments agents | head -1", shell=True, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.startswith("LMCTS: ") and out.stdout.count("\n") == 1
    assert out.stderr == ""


# -- Ctrl-C -----------------------------------------------------------------------------------------
def test_ctrl_c_is_one_line_saying_what_is_kept(capsys, config_file, tmp_path, monkeypatch):
    from bandit_experiments import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    out = tmp_path / "out"
    line = _one_line(capsys, ["run", str(config_file), "--out", str(out)], 130)
    assert line == f"bandit-gym run: interrupted; finished cells are kept in {out}; rerun the same command to continue"


def test_ctrl_c_keeps_the_runners_own_words(capsys, config_file, tmp_path, monkeypatch):
    from bandit_experiments import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt("interrupted: X holds the cell's last checkpoint; the same command continues from it")

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    out = tmp_path / "out"
    line = _one_line(capsys, ["run", str(config_file), "--out", str(out)], 130)
    assert line == (f"bandit-gym run: interrupted: X holds the cell's last checkpoint; the same command continues "
                    f"from it; finished cells are kept in {out}")


def test_ctrl_c_while_the_config_is_checked_says_nothing_was_started(capsys, config_file, tmp_path, monkeypatch):
    from bandit_experiments import config

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(config, "load_config", interrupted)
    line = _one_line(capsys, ["run", str(config_file), "--out", str(tmp_path / "out")], 130)
    assert line == "bandit-gym run: interrupted; nothing was started"


def test_sigint_to_a_running_run_is_one_line_and_status_130(write_config, tmp_path):
    """A real Ctrl-C (SIGINT) once the run has started playing a long cell."""
    path = write_config(CONFIG.format(horizon=10**7), "long.yaml")
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "bandit_experiments", "run", str(path), "--out", str(out),
                                "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()  # printed once the config is checked, before the first cell
        assert f"results in {out}" in first
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130
    (line,) = stderr.splitlines()
    assert line.startswith("bandit-gym run: interrupted") and f"finished cells are kept in {out}" in line


# -- read-only directories, a full disk ---------------------------------------------------------------
def test_a_read_only_out_is_one_line_naming_it(capsys, config_file, tmp_path, monkeypatch):
    out = tmp_path / "readonly" / "out"
    _fail_inside(monkeypatch, tmp_path / "readonly", errno.EROFS)
    line = _one_line(capsys, ["run", str(config_file), "--out", str(out), "--quiet"], 1)
    assert line.startswith("bandit-gym run: error: ") and str(tmp_path / "readonly") in line
    assert "Read-only file system" in line and "--out" in line


def test_a_full_disk_during_a_run_is_one_line_naming_the_file(capsys, config_file, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _fail_inside(monkeypatch, out, errno.ENOSPC, below="cells")  # the run starts; no cell can be written
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) != 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("bandit-gym run: error: ") and "No space left on device" in err[0]
    assert str(out / "cells") in err[0]


def test_table_on_a_read_only_directory_is_one_line_naming_it(capsys, config_file, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    _fail_inside(monkeypatch, out, errno.EACCES)
    line = _one_line(capsys, ["table", str(out)], 1)
    assert line.startswith("bandit-gym table: error: ") and str(out / "summary.csv") in line
    assert "Permission denied" in line


@pytest.mark.parametrize(("code", "advice"), [
    (errno.ENOSPC, "No space left on device: '{file}'; free some space there and rerun the same command to "
                   "continue (finished cells are kept in {out})"),
    (errno.EACCES, "Permission denied: '{file}'; give --out a directory you can write to (finished cells are "
                   "kept in {out})"),
])
def test_an_os_error_names_the_path_and_what_to_do(capsys, config_file, tmp_path, monkeypatch, code, advice):
    from bandit_experiments import runner

    out, file = tmp_path / "out", tmp_path / "out" / "cells" / "LinUCB.npz"

    def fails(*args, **kwargs):
        raise OSError(code, os.strerror(code), str(file))

    monkeypatch.setattr(runner, "run_experiment", fails)
    line = _one_line(capsys, ["run", str(config_file), "--out", str(out)], 1)
    assert line == "bandit-gym run: error: " + advice.format(file=file, out=out)


def test_table_advice_on_a_read_only_directory(capsys, tmp_path, monkeypatch):
    from bandit_experiments import summary

    def fails(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(Path(path) / "summary.csv"))

    monkeypatch.setattr(summary, "write_summary", fails)
    line = _one_line(capsys, ["table", str(tmp_path)], 1)
    assert line == (f"bandit-gym table: error: Read-only file system: '{tmp_path / 'summary.csv'}'; `bandit-gym "
                    f"table` writes summary.csv and summary.md into {tmp_path}: run it on a copy you can write to "
                    f"(cp -r {tmp_path} COPY)")
