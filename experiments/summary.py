"""The summary table of an experiment: per agent, its chosen grid point's final cumulative regret.

    bandit-gym table DIR     prints the table and writes DIR/summary.csv and DIR/summary.md

Final cumulative regret is the sum of the per-round regret over the horizon; mean +- standard
error (``std(ddof=1) / sqrt(S)``) over the ``S`` seeds of the chosen point (the grid point with
the lowest mean). With one seed there is no standard error: the column is left empty.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from experiments.results import Cell, ResultsDir, write_atomic


@dataclass(frozen=True)
class Row:
    """One agent's line of the summary."""

    label: str
    agent: str
    mean: float | None  # None: every grid point diverged
    se: float | None  # None: one seed, or diverged
    seeds: int
    chosen: str  # "step_size=0.3, inverse_temperature=10", "" without a grid
    grid_points: int
    diverged_points: int
    wall_time_s: float


def rows(cells: list[Cell]) -> list[Row]:
    """One row per finished cell, in the config's order."""
    table = []
    for cell in cells:
        record = cell.record
        chosen = record["chosen"]
        stats = record["final_regret"][chosen] if chosen is not None else {"mean": None, "se": None}
        point = record["grid_points"][chosen] if chosen is not None else {}
        table.append(Row(
            label=record["label"], agent=record["agent"], mean=stats["mean"], se=stats["se"],
            seeds=len(record["seeds"]), chosen=", ".join(f"{k}={v}" for k, v in point.items()),
            grid_points=len(record["grid_points"]), diverged_points=sum(record["diverged"]),
            wall_time_s=record["wall_time_s"]))
    return table


def _regret_text(row: Row) -> str:
    if row.mean is None:
        return "diverged"
    return f"{row.mean:.1f} +- {row.se:.1f}" if row.se is not None else f"{row.mean:.1f}"


def title(record: dict) -> str:
    """``LinearBandit-v0, 5,000 rounds, 10 seeds`` for an experiment record."""
    config = record["config"]
    return f"{config['env']}, {config['horizon']:,} rounds, {config['seeds']} seed{'s' if config['seeds'] > 1 else ''}"


def markdown(table: list[Row], heading: str) -> str:
    """The table in Markdown (GitHub pipes), with a line that says what the numbers are."""
    spread = "mean +- s.e. over the seeds" if any(r.se is not None for r in table) else "one seed: no s.e."
    lines = [f"{heading}. Final cumulative regret ({spread}; lower is better) of each agent's chosen "
             "grid point (lowest mean).", "",
             "| agent | final regret | chosen hyperparameters | grid points | wall time (s) |",
             "|---|---:|---|---:|---:|"]
    for row in table:
        points = f"{row.grid_points}" + (f" ({row.diverged_points} diverged)" if row.diverged_points else "")
        lines.append(f"| {row.label} | {_regret_text(row)} | {row.chosen or '-'} | {points} | {row.wall_time_s:.1f} |")
    return "\n".join(lines) + "\n"


def csv_text(table: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["agent", "class", "final_regret_mean", "final_regret_se", "seeds", "chosen_hyperparameters",
                     "grid_points", "diverged_points", "wall_time_s"])
    for row in table:
        writer.writerow([row.label, row.agent, "" if row.mean is None else f"{row.mean:.6g}",
                         "" if row.se is None else f"{row.se:.6g}", row.seeds, row.chosen, row.grid_points,
                         row.diverged_points, f"{row.wall_time_s:.3f}"])
    return buffer.getvalue()


#: How to read the printed table (its last line).
EXPLANATION = ("final regret: cumulative regret at the last round, the mean over the seeds and its standard "
               "error; lower is better. chosen: the grid point with the lowest mean.")


def plain(table: list[Row], heading: str) -> str:
    """The table for a terminal."""
    width = max([len(r.label) for r in table] + [5]) + 2
    lines = [heading, f"{'agent':<{width}}{'final regret':>20}   {'wall time':>9}   chosen"]
    for row in table:
        lines.append(f"{row.label:<{width}}{_regret_text(row):>20}   {row.wall_time_s:>7.1f} s   {row.chosen or '-'}")
    lines.append(EXPLANATION)
    return "\n".join(lines)


def write_summary(path: str | Path) -> tuple[str, Path, Path]:
    """Read the results in ``path``; write summary.csv and summary.md there; return the printable table."""
    results = ResultsDir(path)
    record = results.load_config_record()
    cells = results.read_cells()
    if not cells:
        raise FileNotFoundError(f"{results.path} has no finished cells yet; run `bandit-gym run CONFIG --out DIR`")
    table = rows(cells)
    heading = f"{record['config']['name']}: {title(record)}"
    missing = len(record["config"]["agents"]) - len(cells)
    if missing:
        heading += f" ({missing} agent{'s' if missing > 1 else ''} not finished yet)"
    csv_path, md_path = results.path / "summary.csv", results.path / "summary.md"
    write_atomic(csv_path, csv_text(table).encode())
    write_atomic(md_path, markdown(table, heading).encode())
    return plain(table, heading), csv_path, md_path
