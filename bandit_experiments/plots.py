"""Figures of an experiment (matplotlib, Agg backend: no display needed).

    bandit-gym plot DIR

- ``DIR/regret.png`` and ``.pdf``: cumulative regret against the round, one line per agent (its chosen
  grid point), the mean over the seeds with a band of +- one standard error.
- ``DIR/grid_<label>.png`` and ``.pdf`` for each agent with a grid: final cumulative regret (mean +-
  s.e.) against each grid hyperparameter, one line per combination of the others; the chosen point
  is ringed.

Each file is drawn in memory and written atomically (:func:`bandit_experiments.storage.write_atomic`): a file
that cannot be written (full disk, read-only directory) is one error naming it, and is left as it was.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from bandit_experiments.results import Cell, ResultsDir
from bandit_experiments.storage import write_atomic
from bandit_experiments.summary import title

#: Rounds drawn per curve (evenly spaced, the last included): cumulative regret is smooth at this scale.
MAX_POINTS = 1000
#: A grid plot's log axis is labelled at the grid's values if there are at most this many, each at least
#: 1/this of the axis from the next (they fit side by side in a 4.2-inch panel); else at the decades.
MAX_LABELLED_VALUES = 8


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; works without a display
    import matplotlib.pyplot as plt

    return plt


def _save(fig, stem: Path) -> list[Path]:
    """Write ``fig`` to ``stem``.png and .pdf, each whole or not at all (drawn in memory, then
    :func:`bandit_experiments.storage.write_atomic`).

    Raises:
        ResultsWriteError: A file could not be written (full disk, read-only directory): names it and the
            reason; that file is as it was, the ones written before it are kept.
    """
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        buffer = io.BytesIO()
        fig.savefig(buffer, format=path.suffix[1:], dpi=150, bbox_inches="tight")
        write_atomic(path, buffer.getvalue())
    return paths


def plot_regret(cells: list[Cell], record: dict, stem: Path, failures: list[dict] = ()) -> list[Path]:
    """Cumulative regret vs round of every agent's chosen point (mean +- s.e.); PNG and PDF.

    The legend says how many of an agent's grid points diverged; an agent with no curve (every point
    diverged, or a failed cell) is named in the legend without a line.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for cell in cells:
        chosen = cell.record["chosen"]
        diverged = sum(cell.record["diverged"])
        if chosen is None:
            ax.plot([], [], " ", label=f"{cell.label}: diverged (no curve)")
            continue
        cumulative = np.cumsum(cell.point_regret(chosen), axis=0)  # (T, S)
        drawn = np.unique(np.linspace(0, len(cumulative) - 1, min(len(cumulative), MAX_POINTS)).astype(int))
        cumulative = cumulative[drawn]  # (at most MAX_POINTS, S): a smooth curve, a small PDF
        seeds = cumulative.shape[1]
        mean = cumulative.mean(axis=1)
        rounds = drawn + 1
        note = f" ({diverged} of {len(cell.record['diverged'])} points diverged)" if diverged else ""
        (line,) = ax.plot(rounds, mean, label=cell.label + note, linewidth=1.6)
        if seeds > 1:
            se = cumulative.std(axis=1, ddof=1) / math.sqrt(seeds)
            ax.fill_between(rounds, mean - se, mean + se, color=line.get_color(), alpha=0.2, linewidth=0)
    for failure in failures:
        ax.plot([], [], " ", label=f"{failure['label']}: failed (no curve)")
    seeds = record["config"]["seeds"]
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    band = ", mean \u00b1 s.e." if seeds > 1 else ""
    ax.set_title(f"{record['config']['name']}: {title(record)}{band}", fontsize=10)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)


def plot_grid(cell: Cell, record: dict, stem: Path) -> list[Path]:
    """Final cumulative regret (mean +- s.e.) against each grid hyperparameter of one agent; PNG and PDF."""
    plt = _pyplot()
    points = cell.record["grid_points"]
    names = list(points[0])
    stats = cell.record["final_regret"]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        others = [n for n in names if n != name]
        groups: dict[tuple, list[int]] = {}
        for p, point in enumerate(points):
            groups.setdefault(tuple(point[n] for n in others), []).append(p)
        for key, members in groups.items():
            members = [p for p in members if stats[p]["mean"] is not None]
            if not members:
                continue
            x = [points[p][name] for p in members]
            y = [stats[p]["mean"] for p in members]
            err = [stats[p]["se"] or 0.0 for p in members]
            label = ", ".join(f"{n}={v}" for n, v in zip(others, key, strict=True)) or None
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
        chosen = cell.record["chosen"]
        if chosen is not None:
            ax.plot([points[chosen][name]], [stats[chosen]["mean"]], "o", markersize=14, markerfacecolor="none",
                    markeredgecolor="black", label="chosen")
        values = [point[name] for point in points]
        if all(isinstance(v, int | float) and v > 0 for v in values) and max(values) / min(values) >= 10:
            _log_axis(ax, values)
        ax.set_xlabel(name)
        ax.set_ylabel("final cumulative regret")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, frameon=False)
    diverged = sum(cell.record["diverged"])
    note = f"; {diverged} point{'s' if diverged > 1 else ''} diverged (not shown)" if diverged else ""
    fig.suptitle(f"{cell.label} grid on {title(record)}: mean \u00b1 s.e.{note}", fontsize=10)
    fig.tight_layout()
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)


def _log_axis(ax, values: list[float]) -> None:
    """A log x axis labelled at the grid's values (``0.03 0.1 0.3``), or at the decades where the values are
    many or crowded; the minor ticks are never labelled (matplotlib labels them when an axis spans about one
    decade, and ``3x10^-2 4x10^-2 6x10^-2`` overlap)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ticks = sorted(set(values))
    logs = np.log10(ticks)
    if len(ticks) <= MAX_LABELLED_VALUES and np.diff(logs).min() >= (logs[-1] - logs[0]) / MAX_LABELLED_VALUES:
        ax.set_xticks(ticks, [f"{value:g}" for value in ticks])


def plot_experiment(path: str | Path) -> list[Path]:
    """Draw every figure of the results in ``path`` into it; returns the files written."""
    results = ResultsDir(path)
    record = results.load_config_record()
    cells = results.read_cells()
    if not cells:
        raise FileNotFoundError(f"{results.path} has no finished cells yet; run `bandit-gym run CONFIG --out DIR`")
    written = plot_regret(cells, record, results.path / "regret", results.read_failures())
    for cell in cells:
        if cell.record["grid_points"][0] and cell.record["chosen"] is not None:  # a grid, not all diverged
            written += plot_grid(cell, record, results.path / f"grid_{cell.label}")
    return written
