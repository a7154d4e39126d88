"""The summary table of an experiment: per agent, its chosen grid point's final cumulative regret.

    bandit-gym table DIR     prints the table and writes DIR/summary.csv and DIR/summary.md

Final cumulative regret is the sum of the per-round regret over the horizon; mean +- standard
error (``std(ddof=1) / sqrt(S)``) over the ``S`` seeds of the chosen point (the grid point with
the lowest mean). With one seed there is no standard error: the column is left empty.

Times are the cell's (all its grid points x seeds as one batch): the wall time, and of it the time spent
choosing arms (``select``, the agents' ``predict``) and learning (``update``); the rest is the env. A
grid point that diverged, and a cell that failed, are named under the table with the error.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from bandit_experiments.results import Cell, ResultsDamagedError, ResultsDir, write_atomic


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
    select_time_s: float | None = None  # None: a record written before the times were split
    update_time_s: float | None = None
    failed: str | None = None  # the error of a cell that could not be played


def rows(cells: list[Cell], failures: list[dict] = ()) -> list[Row]:
    """One row per finished cell, in the config's order, then one per failed cell."""
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
            wall_time_s=record["wall_time_s"], select_time_s=record.get("select_time_s"),
            update_time_s=record.get("update_time_s")))
    for record in failures:
        table.append(Row(label=record["label"], agent=record["agent"], mean=None, se=None, seeds=len(record["seeds"]),
                         chosen="", grid_points=len(record["grid_points"]), diverged_points=0,
                         wall_time_s=record["wall_time_s"], failed=record["failed"]))
    return table


def notes(cells: list[Cell], failures: list[dict] = ()) -> list[str]:
    """One line per grid point that diverged and per failed cell, with the agent's error message."""
    lines = []
    for cell in cells:
        errors = cell.record.get("errors") or [None] * len(cell.record["diverged"])
        for point, diverged, error in zip(cell.record["grid_points"], cell.record["diverged"], errors, strict=True):
            if diverged:
                where = ", ".join(f"{k}={v}" for k, v in point.items()) or "its only point"
                lines.append(f"{cell.label}: {where} diverged: {error or 'NaN or Inf parameters'}")
    for record in failures:
        lines.append(f"{record['label']}: FAILED ({record['failed']}); run the same command again to retry it")
    return lines


def seconds_text(seconds: float | None) -> str:
    """A time of the table's split: one decimal from 1 s up, two significant digits below (0.031), "-" if unknown."""
    if seconds is None:
        return "-"
    return f"{seconds:.1f}" if seconds >= 0.95 else f"{seconds:.2g}"


def _regret_text(row: Row) -> str:
    if row.failed is not None:
        return "FAILED"
    if row.mean is None:
        return "diverged"
    return f"{row.mean:.1f} +- {row.se:.1f}" if row.se is not None else f"{row.mean:.1f}"


def title(record: dict) -> str:
    """``LinearBandit-v0, 5,000 rounds, 10 seeds`` for an experiment record."""
    config = record["config"]
    return f"{config['env']}, {config['horizon']:,} rounds, {config['seeds']} seed{'s' if config['seeds'] > 1 else ''}"


def markdown(table: list[Row], heading: str, remarks: list[str] = ()) -> str:
    """The table in Markdown (GitHub pipes), with a line that says what the numbers are, then ``remarks``."""
    spread = "mean +- s.e. over the seeds" if any(r.se is not None for r in table) else "one seed: no s.e."
    lines = [f"{heading}. Final cumulative regret ({spread}; lower is better) of each agent's chosen "
             "grid point (lowest mean); times of the whole cell (all grid points x seeds as one batch), of which "
             "arm selection and updates.", "",
             "| agent | final regret | chosen hyperparameters | grid points | wall time (s) | arm selection (s) "
             "| updates (s) |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for row in table:
        points = f"{row.grid_points}" + (f" ({row.diverged_points} diverged)" if row.diverged_points else "")
        lines.append(f"| {row.label} | {_regret_text(row)} | {row.chosen or '-'} | {points} | {row.wall_time_s:.1f} "
                     f"| {seconds_text(row.select_time_s)} | {seconds_text(row.update_time_s)} |")
    if remarks:
        lines += [""] + [f"- {remark}" for remark in remarks]
    return "\n".join(lines) + "\n"


def csv_text(table: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["agent", "class", "final_regret_mean", "final_regret_se", "seeds", "chosen_hyperparameters",
                     "grid_points", "diverged_points", "wall_time_s", "select_time_s", "update_time_s", "failed"])
    for row in table:
        writer.writerow([row.label, row.agent, "" if row.mean is None else f"{row.mean:.6g}",
                         "" if row.se is None else f"{row.se:.6g}", row.seeds, row.chosen, row.grid_points,
                         row.diverged_points, f"{row.wall_time_s:.3f}",
                         *("" if t is None else f"{t:.3f}" for t in (row.select_time_s, row.update_time_s)),
                         row.failed or ""])
    return buffer.getvalue()


#: How to read the printed table (its last line).
EXPLANATION = ("final regret: cumulative regret at the last round, the mean over the seeds and its standard "
               "error; lower is better. chosen: the grid point with the lowest mean. wall time: the whole cell "
               "(every grid point x seed as one batch); select: of it, the time spent choosing arms.")


def plain(table: list[Row], heading: str, remarks: list[str] = ()) -> str:
    """The table for a terminal, then ``remarks`` (diverged points, failed cells)."""
    width = max([len(r.label) for r in table] + [5]) + 2
    lines = [heading, f"{'agent':<{width}}{'final regret':>20}   {'wall time':>9}   {'select':>9}   chosen"]
    for row in table:
        select = "-" if row.select_time_s is None else f"{seconds_text(row.select_time_s)} s"
        lines.append(f"{row.label:<{width}}{_regret_text(row):>20}   {row.wall_time_s:>7.1f} s   {select:>9}   "
                     f"{row.chosen or '-'}")
    lines += remarks
    lines.append(EXPLANATION)
    return "\n".join(lines)


@dataclass(frozen=True)
class Summary:
    """The summary of a results directory: the printable table and the texts of summary.csv and summary.md."""

    text: str
    csv: str
    markdown: str
    damaged: int  # cells left out because their files fail their checks (named in the remarks)


def summarize(path: str | Path) -> Summary:
    """Read and check the results in ``path`` (writes nothing: works on a read-only directory).

    A cell whose files fail their checks (:meth:`ResultsDir.check_cell`: checksums, an npz that holds an object
    array) is not shown: it is named under the table with what is wrong.

    Raises:
        FileNotFoundError: ``path`` is not a results directory, or has no finished cell yet.
        ResultsDamagedError: its experiment.json cannot be read, or every cell is damaged.
    """
    results = ResultsDir(path)
    record = results.load_config_record()
    damaged: list[str] = []
    cells, failures = results.read_cells(damaged), results.read_failures()
    if not cells and not failures:
        if damaged:
            raise ResultsDamagedError("; ".join(damaged))
        raise FileNotFoundError(f"{results.path} has no finished cells yet; run `bandit-gym run CONFIG --out DIR`")
    table, remarks = rows(cells, failures), notes(cells, failures) + damaged
    heading = f"{record['config']['name']}: {title(record)}"
    missing = len(record["config"]["agents"]) - len(cells) - len(failures) - len(damaged)
    left_out = [f"{n} agent{'s' if n > 1 else ''} {what}" for n, what in
                ((missing, "not finished yet"), (len(damaged), "damaged, not shown")) if n]
    if left_out:
        heading += f" ({', '.join(left_out)})"
    return Summary(plain(table, heading, remarks), csv_text(table), markdown(table, heading, remarks), len(damaged))


def write_summary(path: str | Path) -> tuple[str, Path, Path]:
    """Read the results in ``path``; write summary.csv and summary.md there; return the printable table.

    Raises:
        ResultsWriteError: summary.csv or summary.md cannot be written (read-only directory, full disk): the
            message names the file; the results are untouched. :func:`summarize` makes the table alone.
    """
    summary = summarize(path)
    csv_path, md_path = Path(path) / "summary.csv", Path(path) / "summary.md"
    write_atomic(csv_path, summary.csv.encode())
    write_atomic(md_path, summary.markdown.encode())
    return summary.text, csv_path, md_path
