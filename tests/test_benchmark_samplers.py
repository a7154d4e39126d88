"""benchmarks/samplers.py runs configs/samplers_*.yaml end to end at toy sizes: a row per (problem, agent), the
records written, and a rerun reuses them instead of replaying."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _samplers():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__("samplers")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_samplers_benchmark_prints_and_keeps_every_job(capsys, tmp_path):
    samplers = _samplers()
    argv = ["--problems", "linear_fixed", "quadratic", "--horizon", "5", "--seeds", "2", "--out", str(tmp_path)]
    assert samplers.main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 2 * 7, rows
    table = (tmp_path / "samplers.md").read_text().splitlines()
    assert sorted(table[2:]) == sorted(rows[1:])
    for line in rows[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert re.fullmatch(r"\d+\.\d \+- \d+\.\d", cells[6]), line  # regret mean +- s.e.
        per_1k, replicas = cells[7].split()
        assert float(per_1k) > 0 and replicas == "(8)"  # 4 grid points x 2 seeds in one batch
        if cells[4] in ("MALATS", "HMCTS"):
            mean, low_high = cells[8].split()
            low, high = map(float, low_high.strip("()").split("-"))
            assert 0 < low <= float(mean) <= high <= 1, line
        else:
            assert cells[8] == "", line
    record = json.loads((tmp_path / "quadratic__HMCTS.json").read_text())
    assert record["horizon"] == 5 and len(record["points"]) == 4 and record["budget"] == "2 x 5"
    assert record["points"][record["best"]]["mean"] == min(p["mean"] for p in record["points"])
    # A rerun at the same size reuses the records (the file is not rewritten) and prints the same rows.
    stamp = (tmp_path / "quadratic__HMCTS.json").stat().st_mtime_ns
    assert samplers.main(argv) == 0
    assert (tmp_path / "quadratic__HMCTS.json").stat().st_mtime_ns == stamp
    again = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert sorted(again) == sorted(rows)


def test_a_job_that_cannot_run_is_a_row_with_its_error(capsys, tmp_path):
    samplers = _samplers()
    argv = ["--problems", "shuttle", "--agents", "LMCTS", "--horizon", "3", "--seeds", "2", "--out", str(tmp_path),
            "--env-kwargs", f"{{cache_dir: {tmp_path / 'empty'}, download: false}}"]
    assert samplers.main(argv) == 0
    line = (tmp_path / "samplers.md").read_text().splitlines()[2]
    assert line.startswith("| shuttle | Shuttle-v0 |") or line.startswith("| shuttle |"), line
    assert "Error" in line, line
