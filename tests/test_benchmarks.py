"""The benchmark scripts run end to end at toy sizes and print the table they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_numpy_reference_linucb_learns():
    run = _benchmark_module("numpy_linucb").run
    # Uniform random play loses E[max_k x_k.theta] ~ 0.49 per round here (50 unit arms in d = 20;
    # UniformRandom's 971 over 2,000 rounds in the README's demo), ~245 over 500 rounds. LinUCB must
    # stay below half of that, and a seed must replay exactly.
    regret = run(0, rounds=500)
    assert 0 < regret < 120
    assert run(0, rounds=500) == regret


def test_batched_numpy_floor_learns_on_the_envs_draws():
    run_batched = _benchmark_module("numpy_linucb").run_batched
    regret, seconds, draw_seconds = run_batched(3, rounds=500)
    # Same bound as the single-seed loop above (random: ~245 over 500 rounds).
    assert regret.shape == (3,) and 0 < regret.mean() < 120
    assert 0 < draw_seconds < seconds
    assert np.array_equal(run_batched(3, rounds=500)[0], regret)


def test_single_seed_prints_the_agents_and_both_floors(capsys):
    _benchmark_module("single_seed").main(["--rounds", "20", "--repeats", "1", "--agents", "LinUCB"])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    names = [(row[0].removeprefix("| "), row[1]) for row in rows]
    assert names == [("numpy textbook LinUCB (reference)", "1"),
                     *[(name, r) for r in ("1", "10") for name in ("LinUCB", "env.step alone", "UniformRandom")]]
    cells = [v for row in rows[1:] for cell in row[2:] for v in cell.removesuffix(" |").split(", ")]
    assert all(re.fullmatch(r"\d+(\.\d\d)?", v) for v in cells), rows  # measured values: checked on fixed times below


def test_single_seed_ratios_and_speeds_come_from_the_median_times(monkeypatch, capsys):
    """On fixed times (microseconds per round; each case's warm-up and three repeats at 1.0, then 1.2, 0.9 and 1.0
    of its figure, so that the median is the figure and the mean is not), the printed ratio is ``agent round /
    reference round`` and the speed per seed ``R x reference round / agent round``."""
    single_seed = _benchmark_module("single_seed")
    per_round_us = {"reference": (100, 80), ("LinUCB", 1): (150, 100), ("LinUCB", 10): (250, 400)}
    calls: dict = {}

    def fixed(case, rounds: int) -> tuple[float, float]:
        factor = (1.0, 1.2, 0.9)[calls.get(case, 0) % 3]
        calls[case] = calls.get(case, 0) + 1
        wall_us, cpu_us = per_round_us[case]
        return wall_us * factor * rounds * 1e-6, cpu_us * factor * rounds * 1e-6

    monkeypatch.setattr(single_seed, "reference", lambda rounds: fixed("reference", rounds))
    monkeypatch.setattr(single_seed, "agent_run", lambda name, replicas, rounds: fixed((name, replicas), rounds))
    single_seed.main(["--rounds", "20", "--repeats", "3", "--agents", "LinUCB", "--no-floors"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert rows == ["| numpy textbook LinUCB (reference) | 1 | 100 | 80 | 1 | 1 |",
                    "| LinUCB | 1 | 150 | 100 | 1.50, 1.25 | 0.67, 0.80 |",
                    "| LinUCB | 10 | 250 | 400 | 2.50, 5.00 | 4.00, 2.00 |"]


@pytest.mark.slow  # a subprocess that imports and compiles everything (about 30 s)
def test_linear_paper_prints_every_row():
    out = subprocess.run(
        [sys.executable, "benchmarks/linear_paper.py", "--rounds", "30", "--seeds", "2", "--agents", "LinUCB", "LinTS",
         "--repeats", "2"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| changing") or line.startswith("| fixed")]
    assert len(rows) == 6, out  # 2 settings x (2 agents + the numpy reference)
    assert all(" +- " in row for row in rows)
    for row in rows:  # the wall time: the fastest run, then every run's time in order
        fastest, every = re.fullmatch(r"(\d+\.\d) \((\d+\.\d, \d+\.\d)\)", row.split(" | ")[2]).groups()
        assert float(fastest) == min(float(t) for t in every.split(", "))


def test_growing_table_keeps_the_file_whole(tmp_path, capsys):
    GrowingTable = _benchmark_module("_report").GrowingTable
    out = tmp_path / "results" / "grid.md"
    table = GrowingTable(["| a | b |", "|---|---|"], out)
    assert out.read_text() == "| a | b |\n|---|---|\n"
    table.row("| 1 | 2 |")
    assert out.read_text().splitlines()[-1] == "| 1 | 2 |"
    assert [p.name for p in out.parent.iterdir()] == ["grid.md"]  # no temporary file left behind
    assert "| 1 | 2 |" in capsys.readouterr().out


@pytest.mark.slow  # CIFAR10-sized networks (3 million parameters per replica): about a minute on 2 cores
def test_cifar_size_prints_every_row():
    out = subprocess.run(
        [sys.executable, "benchmarks/cifar_size.py", "--selections", "1", "--rounds", "1", "--steps", "1",
         "--seeds", "1", "2", "--agents", "LMCTS", "NeuralTS"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith(("| LMCTS", "| NeuralTS"))]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        (f"| {agent}", seeds, layer) for agent in ("LMCTS", "NeuralTS") for seeds in ("1", "2")
        for layer in ("dense", "block")], out
    for row in rows:  # positive times; the extrapolated total includes 1,000 selections
        selection, round_seconds, total = float(row[3]), float(row[4]), float(row[5])
        assert 0 < selection and 0 < round_seconds and total >= selection


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


def test_code_size_counts_a_toy_file_and_a_named_function():
    """benchmarks/code_size.py's counting: blank lines, comments and blank docstring lines are left out, a '#'
    inside a string is code, and a qualified name's span covers its decorators and body only."""
    code_size = _benchmark_module("code_size")
    toy = '''"""Module docstring,

two lines of text."""
# a comment

import os  # code with a comment


class A:
    """One line."""

    @staticmethod
    def f():
        # inside
        return "# not a comment"


x = 1
'''
    # code lines: 1, 3 (docstring), 6, 9, 10, 12, 13, 15, 18; docstrings are lines 1-3 and 10
    assert sorted(code_size.code_lines(toy)) == [1, 3, 6, 9, 10, 12, 13, 15, 18]
    assert code_size.count_lines(toy) == 9
    assert code_size.count_lines(toy, docstrings=False) == 6  # less lines 1, 3 and 10
    assert code_size.span(toy, "A.f") == (12, 15)
    assert code_size.count_lines(toy, *code_size.span(toy, "A.f")) == 3
    with pytest.raises(ValueError, match="'A.g'"):
        code_size.span(toy, "A.g")


@pytest.mark.slow  # a subprocess; each cell runs 4 conditions, two with a spinning process beside them (~10 s)
def test_threads_benchmark_covers_digits_and_the_neural_agents_on_the_quadratic_bandit():
    out = subprocess.run(
        [sys.executable, "benchmarks/threads.py", "--agents", "LinUCB", "NeuralTS", "--envs", "ClassificationBandit-v0",
         "QuadraticBandit-v0", "--rounds", "3", "--repeats", "1", "--replicas", "1"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rows = [line.split(" | ")[:3] for line in out.splitlines() if line.startswith("| ") and "Bandit" in line]
    # LinUCB on digits; NeuralTS on digits and on the quadratic bandit (the linear agents are left out there).
    assert rows == [["| ClassificationBandit-v0", "1", "LinUCB"], ["| ClassificationBandit-v0", "1", "NeuralTS"],
                    ["| QuadraticBandit-v0", "1", "NeuralTS"]], out
