"""Results on disk: finished cells are skipped, a changed config is refused, a killed run resumes intact."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bandit_experiments.config import load_config
from bandit_experiments.results import ResultsDamagedError, ResultsDir, ResultsMismatchError
from bandit_experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
name: results-test
env: LinearBandit-v0
horizon: 30
seeds: 2
agents:
  LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
  LinTS: {}
"""


def _config(tmp_path: Path, text: str = CONFIG):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def test_a_cell_record_holds_config_seeds_hyperparameters_versions_device_and_time(tmp_path):
    results = run_experiment(_config(tmp_path), tmp_path / "out", log=lambda line: None)
    record = json.loads((results.cells_dir / "LinUCB.json").read_text())
    assert record["seeds"] == [0, 1]
    assert record["grid_points"] == [{"exploration_scale": 0.1}, {"exploration_scale": 1.0}]
    assert record["hyperparameters"][1]["exploration_scale"] == 1.0 and "lambda_reg" in record["hyperparameters"][1]
    assert record["cell_config"]["agent"]["grid"] == {"exploration_scale": [0.1, 1.0]}
    assert record["device"] == "cpu" and record["wall_time_s"] > 0
    assert {"torch", "numpy", "gymnasium", "python"} <= set(record["versions"])
    with np.load(results.cells_dir / "LinUCB.npz") as data:
        assert data["regret"].shape == (30, 4)
    assert not list(results.cells_dir.glob(".*"))  # no temporary file left


def test_rerun_skips_finished_cells(tmp_path):
    config = _config(tmp_path)
    run_experiment(config, tmp_path / "out", log=lambda line: None)
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "cells").iterdir()}
    lines = []
    run_experiment(config, tmp_path / "out", log=lines.append)
    assert lines == [f"2 of 2 cells already finished in {tmp_path / 'out'}: skipped"]
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "cells").iterdir()}


def test_a_changed_config_is_refused_and_nothing_is_written(tmp_path):
    run_experiment(_config(tmp_path), tmp_path / "out", log=lambda line: None)
    before = sorted((tmp_path / "out").rglob("*"))
    changed = _config(tmp_path, CONFIG.replace("horizon: 30", "horizon: 31"))
    with pytest.raises(ResultsMismatchError, match=r"different config \(horizon was 30, now 31\)"):
        run_experiment(changed, tmp_path / "out", log=lambda line: None)
    assert sorted((tmp_path / "out").rglob("*")) == before


def test_an_added_agent_runs_alone_and_a_changed_or_removed_one_is_refused(tmp_path):
    run_experiment(_config(tmp_path), tmp_path / "out", log=lambda line: None)
    lines = []
    added = _config(tmp_path, CONFIG + "  EpsGreedy: {}\n")
    run_experiment(added, tmp_path / "out", log=lines.append)
    assert lines[0] == f"2 of 3 cells already finished in {tmp_path / 'out'}: skipped"
    assert [line.split(":")[0].strip() for line in lines[1:]] == ["EpsGreedy"]
    assert [c.label for c in ResultsDir(tmp_path / "out").read_cells()] == ["LinUCB", "LinTS", "EpsGreedy"]
    changed = _config(tmp_path, CONFIG.replace("[0.1, 1.0]", "[0.1, 2.0]") + "  EpsGreedy: {}\n")
    with pytest.raises(ResultsMismatchError, match=r"agents\[0\]\.grid\.exploration_scale\[1\] was 1\.0, now 2\.0"):
        run_experiment(changed, tmp_path / "out", log=lambda line: None)
    with pytest.raises(ResultsMismatchError, match="different config"):
        run_experiment(_config(tmp_path), tmp_path / "out", log=lambda line: None)  # EpsGreedy removed


def test_a_cell_with_a_damaged_regret_file_runs_again(tmp_path):
    config = _config(tmp_path)
    results = run_experiment(config, tmp_path / "out", log=lambda line: None)
    good = (results.cells_dir / "LinTS.npz").read_bytes()
    (results.cells_dir / "LinTS.npz").write_bytes(good[:-10])  # e.g. a disk that lost the end of the file
    lines = []
    run_experiment(config, tmp_path / "out", log=lines.append)
    assert lines[0] == (f"  LinTS: {results.cells_dir / 'LinTS.npz'} does not match the sha256 recorded in LinTS.json "
                        "(truncated, edited or damaged since it was written): moved aside as LinTS.npz.damaged and "
                        "LinTS.json.damaged; the cell runs again")  # said, not silent
    assert lines[1] == f"1 of 2 cells already finished in {tmp_path / 'out'}: skipped"
    assert (results.cells_dir / "LinTS.npz").read_bytes() == good
    assert (results.cells_dir / "LinTS.npz.damaged").read_bytes() == good[:-10]


class _TouchesAFile:
    """Unpickling it creates ``path``: a stand-in for code that a pickled object array would run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return Path.touch, (self.path,)


def _plant_object_array(results, label: str, marker: Path) -> Path:
    """Replace ``label``'s npz with an object array, its record's checksums updated to match (a planted file)."""
    from bandit_experiments.results import _record_sha256, _sha256

    npz, record_file = results.cell_paths(label)
    buffer = io.BytesIO()
    np.savez(buffer, regret=np.array([_TouchesAFile(marker)], dtype=object))
    npz.write_bytes(buffer.getvalue())
    record = json.loads(record_file.read_text())
    record["regret_sha256"] = _sha256(buffer.getvalue())
    record["record_sha256"] = _record_sha256(record)
    record_file.write_text(json.dumps(record))
    return npz


def test_read_cells_refuses_an_object_array_naming_the_file_and_runs_no_code(tmp_path):
    config = _config(tmp_path)
    results = run_experiment(config, tmp_path / "out", log=lambda line: None)
    marker = tmp_path / "code-ran"
    npz = _plant_object_array(results, "LinTS", marker)
    damaged = []
    assert [cell.label for cell in ResultsDir(results.path).read_cells(damaged)] == ["LinUCB"]
    assert len(damaged) == 1 and "\n" not in damaged[0]
    assert damaged[0].startswith(f"LinTS: NOT SHOWN: {npz} is refused: Object arrays cannot be loaded when "
                                 "allow_pickle=False")
    with pytest.raises(ResultsDamagedError, match=f"^{re.escape(str(npz))} is refused: "):
        ResultsDir(results.path).check_cell("LinTS")
    lines = []
    run_experiment(config, results.path, log=lines.append)  # the run moves it aside and plays the cell again
    assert lines[0].startswith(f"  LinTS: {npz} is refused: ") and "moved aside as LinTS.npz.damaged" in lines[0]
    assert [cell.label for cell in ResultsDir(results.path).read_cells()] == ["LinUCB", "LinTS"]
    assert not marker.exists()  # nothing was unpickled


def test_plot_on_a_full_disk_names_the_file_and_leaves_the_old_plot(capsys, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from bandit_experiments import cli

    results = run_experiment(_config(tmp_path), tmp_path / "out", log=lambda line: None)
    assert cli.main(["plot", str(results.path)]) == 0
    old = (results.path / "regret.png").read_bytes()
    capsys.readouterr()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    assert cli.main(["plot", str(results.path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"bandit-gym plot: error: cannot write {results.path / 'regret.png'}: No space left on device "
                   "(free some space, then run the same command again); the files written before it are kept"]
    assert (results.path / "regret.png").read_bytes() == old  # whole, as it was
    assert not [p for p in results.path.iterdir() if p.name.endswith(".tmp")]  # no half-written file left


KILLED = """\
name: killed
env: LinearBandit-v0
horizon: 1500
seeds: 2
agents:
  A: {agent: LinUCB, fixed: {exploration_scale: 0.1}}
  B: {agent: LinUCB, fixed: {exploration_scale: 0.2}}
  C: {agent: LinTS}
  D: {agent: EpsGreedy}
  E: {agent: LinUCB, fixed: {exploration_scale: 0.4}}
  F: {agent: LinTS, fixed: {exploration_scale: 0.05}}
"""

SCRIPT = """\
import sys
from bandit_experiments.config import load_config
from bandit_experiments.runner import run_experiment
run_experiment(load_config(sys.argv[1]), sys.argv[2], log=lambda line: None)
"""


def test_a_run_killed_midway_resumes_with_nothing_lost_or_duplicated(tmp_path):
    config_path = tmp_path / "killed.yaml"
    config_path.write_text(KILLED)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(config_path), str(out)], env=env, cwd=REPO)
    deadline = time.monotonic() + 120
    while not list(out.glob("cells/*.json")):
        assert process.poll() is None, "the run ended before the first cell was written"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    config = load_config(config_path)
    labels = [spec.label for spec in config.agents]
    finished_before = {p.stem: p.read_bytes() for p in (out / "cells").glob("*.json")}
    assert 1 <= len(finished_before) < len(labels), "the kill must land mid-way for this test to mean anything"

    lines = []
    run_experiment(config, out, log=lines.append)
    ran_after = [line.split(":")[0].strip() for line in lines[1:]]
    assert sorted(ran_after) == sorted(set(labels) - set(finished_before))  # each unfinished cell once
    for label, data in finished_before.items():  # the finished ones untouched
        assert (out / "cells" / f"{label}.json").read_bytes() == data
    assert sorted(p.name for p in (out / "cells").iterdir()) == sorted(
        [f"{label}.json" for label in labels] + [f"{label}.npz" for label in labels])  # no leftovers, no extras

    reference = run_experiment(config, tmp_path / "reference", log=lambda line: None).read_cells()
    resumed = ResultsDir(out).read_cells()
    assert [c.label for c in resumed] == labels
    for a, b in zip(resumed, reference, strict=True):  # the same numbers as a run that was never killed
        np.testing.assert_array_equal(a.regret, b.regret)
