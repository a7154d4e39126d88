"""benchmarks/samplers.py runs configs/samplers_*.yaml end to end at toy sizes: a row per (problem, agent), the
records written, and a rerun reuses them instead of replaying."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

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
    # The record beside the table holds the table's rows as fields (docs/gen_numbers.py reads it).
    rows_json = json.loads((tmp_path / "samplers.json").read_text())["rows"]
    assert rows_json == samplers.with_differences([samplers.parse_row(line) for line in table[2:]])
    assert {(r["problem"], r["agent"]) for r in rows_json} == {(p, a) for p in ("linear_fixed", "quadratic")
                                                               for a in samplers.AGENT_ORDER}
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


def test_a_printed_row_parses_back_to_its_figures():
    samplers = _samplers()
    record = {"problem": "shuttle", "label": "HMCTS", "env": "Shuttle-v0", "horizon": 2000, "seeds": 10,
              "budget": "2 x 5", "replicas": 40, "per_1k": 604.649, "best": 1,
              "points": [{"hyperparameters": {"step_size": 0.02}, "mean": 340.0, "se": 5.0, "acceptance": None},
                         {"hyperparameters": {"step_size": 0.005}, "mean": 326.94, "se": 4.04,
                          "acceptance": [0.8712, 0.863, 0.880]}]}
    assert samplers.parse_row(samplers.row(record)) == {
        "problem": "shuttle", "env": "Shuttle-v0", "T": 2000, "seeds": 10, "agent": "HMCTS", "budget": "2 x 5",
        "regret": 326.9, "se": 4.0, "per_1k": 604.65, "replicas": 40, "acceptance": 0.871, "acceptance_low": 0.863,
        "acceptance_high": 0.88, "best_point": "step_size=0.005"}
    assert samplers.parse_row(samplers.HEADER[0]) is None and samplers.parse_row(samplers.HEADER[1]) is None
    failed = {"problem": "shuttle", "label": "LMCTS", "error": "DatasetNotFoundError: no data"}
    assert samplers.parse_row(samplers.row(failed)) is None  # an error row has no figures


def test_differences_from_lmcts_are_in_standard_errors_of_the_difference():
    samplers = _samplers()
    base = {"problem": "p", "T": 100}
    rows = samplers.with_differences([{**base, "agent": "LMCTS", "regret": 10.0, "se": 3.0},
                                      {**base, "agent": "HMCTS", "regret": 15.0, "se": 4.0},  # (15 - 10) / 5
                                      {**base, "T": 200, "agent": "MALATS", "regret": 1.0, "se": 1.0}])  # no LMC-TS
    assert [r["vs_lmcts"] for r in rows] == [None, 1.0, None]


def test_record_from_a_printed_table_reads_the_named_section_only(tmp_path, capsys):
    samplers = _samplers()
    line = ("| quadratic | QuadraticBandit-v0 | 300 | 10 | {agent} | 10 | {mean} +- 2.0 | 50.00 (40) |  | "
            "step_size=0.02 |")
    text = "\n".join(["# Runs", "## Old", line.format(agent="VITS", mean=1.0), "## The page's tables",
                      "### At 300 rounds", *samplers.HEADER, line.format(agent="LMCTS", mean=30.0),
                      line.format(agent="VITS", mean=20.0), "## Later", line.format(agent="MALATS", mean=5.0)])
    (tmp_path / "runs.md").write_text(text)
    argv = ["--record-from", str(tmp_path / "runs.md"), "--section", "The page's tables", "--out", str(tmp_path)]
    assert samplers.main(argv) == 0
    record = json.loads((tmp_path / "samplers.json").read_text())
    assert [(r["agent"], r["regret"], r["vs_lmcts"]) for r in record["rows"]] == [("LMCTS", 30.0, None),
                                                                                 ("VITS", 20.0, -3.5)]
    assert record["source"] == f"{tmp_path / 'runs.md'}, section \"The page's tables\""
    with pytest.raises(SystemExit):
        samplers.main([*argv[:3], "No such heading", *argv[4:]])
    assert "argument --section: no heading starting with 'No such heading'" in capsys.readouterr().err
