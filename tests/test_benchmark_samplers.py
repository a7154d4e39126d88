"""benchmarks/samplers.py runs end to end at toy sizes and prints the row it promises for every agent."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_samplers_benchmark_prints_every_agent(capsys, tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        samplers = __import__("samplers")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = tmp_path / "samplers.md"
    samplers.main(["--rounds", "6", "--seeds", "2", "--linear-budget", "5", "--neural-budget", "2", "--out", str(out)])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 2 * 7 and out.read_text().count("\n") == 2 + 2 * 7
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert re.fullmatch(r"\d+\.\d \+- \d+\.\d", cells[5]), row  # regret mean +- s.e.
        assert float(cells[6]) > 0
        if cells[4] in ("MALATS", "HMCTS"):
            assert 0 < float(cells[7].split()[0]) <= 1, row
