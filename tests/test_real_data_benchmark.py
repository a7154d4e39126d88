"""benchmarks/real_data.py runs end to end at a toy size on the real UCI data and prints its table."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_real_data_prints_a_row_per_agent_and_the_textbook_reference(real_openml_cache, tmp_path, capsys,
                                                                      one_torch_thread):
    real_data = _benchmark_module("real_data")
    out = tmp_path / "real_data.md"
    real_data.main(["--rounds", "300", "--seeds", "2", "--agents", "LinUCB", "UniformRandom", "--datasets",
                    "Mushroom-v0", "--cache-dir", str(real_openml_cache), "--out", str(out)])
    printed = capsys.readouterr().out
    rows = [line.split(" | ") for line in printed.splitlines() if line.startswith("| Mushroom-v0")]
    assert [row[1] for row in rows] == ["LinUCB", "UniformRandom", real_data.REFERENCE], printed
    assert out.read_text().splitlines()[-3:] == printed.splitlines()[-3:]  # the file keeps the same table
    means = {row[1]: float(row[2].split(" +- ")[0]) for row in rows}
    # Uniform guessing between Mushroom's 2 classes loses 1/2 per round (150 +- about 9 over 300 rounds);
    # both LinUCBs learn the classes within ~100 rounds (measured: 34 and 69), far below 100.
    assert means["UniformRandom"] > 120 and means["LinUCB"] < 100 and means[real_data.REFERENCE] < 100, means
    # The reference row is the numpy textbook LinUCB, one single env per seed reset with that seed.
    regret = [_benchmark_module("numpy_linucb").run_env("Mushroom-v0", s, 300, cache_dir=real_openml_cache,
                                                        horizon=300) for s in range(2)]
    assert float(rows[2][2].split(" +- ")[0]) == round(float(np.mean(regret)))
