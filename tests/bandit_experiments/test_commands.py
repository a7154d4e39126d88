"""``bandit-gym run``, ``table`` and ``plot``: what they print and write, and one line for each bad input."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from bandit_experiments import cli
from bandit_experiments.results import ResultsDir

CONFIG = """\
name: cli-test
env: LinearBandit-v0
horizon: 40
seeds: 3
agents:
  LinUCB: {grid: {exploration_scale: [0.05, 1.0]}}
  EpsGreedy: {}
"""


@pytest.fixture
def config_file(write_config):
    return write_config(CONFIG, "cli.yaml")


def _one_line_error(capsys, argv: list[str], status: int) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == status
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    return err[0]


def test_run_prints_the_table_and_writes_results_table_and_plots(capsys, config_file, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"results in {out}" in printed and f"plot: {out / 'regret.png'}" in printed
    cells = {cell.label: cell for cell in ResultsDir(out).read_cells()}
    linucb = cells["LinUCB"]
    final = linucb.point_regret(linucb.record["chosen"]).sum(axis=0)  # (3,)
    mean, se = final.mean(), final.std(ddof=1) / math.sqrt(3)
    assert f"{mean:.1f} +- {se:.1f}" in printed
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["agent"] for r in rows] == ["LinUCB", "EpsGreedy"]
    assert float(rows[0]["final_regret_mean"]) == pytest.approx(mean, rel=1e-5)
    assert float(rows[0]["final_regret_se"]) == pytest.approx(se, rel=1e-5)
    assert rows[0]["chosen_hyperparameters"] == f"exploration_scale={[0.05, 1.0][linucb.record['chosen']]}"
    assert f"| LinUCB | {mean:.1f} +- {se:.1f} |" in (out / "summary.md").read_text()
    for name in ("regret", "grid_LinUCB"):
        for suffix in (".png", ".pdf"):
            assert (out / f"{name}{suffix}").stat().st_size > 1000
    assert not (out / "grid_EpsGreedy.png").exists()  # no grid, no grid plot


def test_table_with_one_seed_prints_no_nan(capsys, config_file, tmp_path):
    out = tmp_path / "one"
    assert cli.main(["run", str(config_file), "--out", str(out), "--seeds", "1", "--horizon", "20", "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["table", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "nan" not in printed.lower() and "+-" not in printed
    assert "1 seed" in printed
    assert "nan" not in (out / "summary.md").read_text().lower()
    with open(out / "summary.csv") as f:
        assert next(csv.DictReader(f))["final_regret_se"] == ""


def test_plot_writes_png_and_pdf_and_prints_their_paths(capsys, config_file, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    for name in ("regret.png", "grid_LinUCB.pdf"):
        (out / name).unlink()
    capsys.readouterr()
    assert cli.main(["plot", str(out)]) == 0
    printed = capsys.readouterr().out.split()
    assert str(out / "regret.png") in printed and str(out / "grid_LinUCB.pdf") in printed
    assert (out / "regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "grid_LinUCB.pdf").read_bytes()[:5] == b"%PDF-"


def test_regret_plot_draws_the_mean_and_a_standard_error_band(config_file, tmp_path, monkeypatch):
    import matplotlib.figure

    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    from bandit_experiments import plots

    drawn = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, path, **kw: drawn.setdefault("fig", fig))
    results = ResultsDir(out)
    plots.plot_regret(results.read_cells(), results.load_config_record(), out / "x")
    ax = drawn["fig"].axes[0]
    assert ax.get_xlabel() == "round t" and ax.get_ylabel() == "cumulative regret"
    assert "LinearBandit-v0" in ax.get_title() and "3 seeds" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["LinUCB", "EpsGreedy"]
    eps = ResultsDir(out).read_cells()[1]
    cumulative = np.cumsum(eps.point_regret(0), axis=0)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), cumulative.mean(axis=1))
    band = ax.collections[1].get_paths()[0].vertices[:, 1]
    se = cumulative.std(axis=1, ddof=1) / math.sqrt(3)
    assert band.max() == pytest.approx((cumulative.mean(axis=1) + se).max())


@pytest.mark.parametrize(("argv", "status", "expected"), [
    (["run", "{config}", "--seeds", "0"], 2, "bandit-gym run: error: argument --seeds: must be an integer >= 1, got 0"),
    (["run", "{config}", "--horizon", "x"], 2, "argument --horizon: must be an integer >= 1, got 'x'"),
    (["run", "{config}", "--backend", "dask"], 2, "argument --backend: invalid choice: 'dask'"),
    (["run", "{config}", "--device", "tpu"], 2, "argument --device: device must be 'auto', 'cpu', 'cuda'"),
    (["run", "{config}", "--address", "x:1"], 2, "argument --address: only with --backend ray"),
    (["run", "{config}", "--backend", "ray", "--jobs", "2"], 2, "argument --jobs: only with --backend local"),
    (["run", "missing.yaml"], 1, "bandit-gym run: error: config 'missing.yaml' does not exist"),
    (["table", "{tmp}/nothing"], 1, "is not a results directory (no experiment.json)"),
    (["plot", "{tmp}/nothing"], 1, "is not a results directory (no experiment.json)"),
])
def test_bad_input_is_one_line(capsys, config_file, tmp_path, argv, status, expected):
    argv = [a.format(config=config_file, tmp=tmp_path) for a in argv]
    assert expected in _one_line_error(capsys, argv, status)


def test_a_bad_config_is_one_line_naming_the_file_and_line(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.replace("EpsGreedy: {}", "EpsGreedy: {fixed: {exploration_scal: 1}}"))
    line = _one_line_error(capsys, ["run", str(path), "--out", str(tmp_path / "o")], 1)
    assert line.startswith(f"bandit-gym run: error: {path}:7: agents.EpsGreedy.fixed.exploration_scal: unknown ")
    assert "did you mean 'exploration_scale'?" in line
    assert not (tmp_path / "o").exists()  # nothing was started


def test_a_changed_config_is_refused_in_one_line(capsys, config_file, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    line = _one_line_error(capsys, ["run", str(config_file), "--out", str(out), "--horizon", "41"], 1)
    assert "holds results of a different config (horizon was 40, now 41)" in line


def test_progress_bars_are_off_when_output_is_not_a_terminal(capsys, config_file, tmp_path):
    assert cli.main(["run", str(config_file), "--out", str(tmp_path / "out")]) == 0  # pytest's stderr is no tty
    assert capsys.readouterr().err == ""


def test_progress_bars_on_a_terminal_unless_quiet(capsys, config_file, tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert cli.main(["run", str(config_file), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "cells" in err and "LinUCB" in err and "regret" in err
    assert cli.main(["run", str(config_file), "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def _tick_labels(ax, minor: bool) -> list[str]:
    """The x tick labels drawn inside the axis's view (matplotlib also formats ticks just outside it)."""
    low, high = ax.get_xlim()
    ticks = ax.xaxis.get_minor_ticks() if minor else ax.xaxis.get_major_ticks()
    return [tick.label1.get_text() for tick in ticks if low <= tick.get_loc() <= high and tick.label1.get_text()]


def test_grid_plot_labels_a_log_axis_at_the_grid_values_only(config_file, tmp_path, monkeypatch):
    """LinUCB's grid [0.05, 1.0] spans about one decade, where matplotlib labels minor ticks too
    (``6x10^-2 2x10^-1 3x10^-1 ...``, overlapping): only the grid's values are labelled."""
    import matplotlib.figure

    from bandit_experiments import plots

    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    drawn = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, path, **kw: drawn.setdefault("fig", fig))
    results = ResultsDir(out)
    plots.plot_grid(results.read_cells()[0], results.load_config_record(), out / "g")
    drawn["fig"].canvas.draw()
    ax = drawn["fig"].axes[0]
    assert ax.get_xscale() == "log"
    assert _tick_labels(ax, minor=False) == ["0.05", "1"]
    assert _tick_labels(ax, minor=True) == []


def test_a_crowded_log_grid_is_labelled_at_the_decades():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bandit_experiments import plots

    values = [0.03, 0.04, 0.06, 0.1, 0.3]  # 0.03, 0.04 and 0.06 would overlap
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.plot(values, [1.0] * len(values), "o")
    plots._log_axis(ax, values)
    fig.canvas.draw()
    assert _tick_labels(ax, minor=False) == ["$\\mathdefault{10^{-1}}$"]
    assert _tick_labels(ax, minor=True) == []
    plt.close(fig)
