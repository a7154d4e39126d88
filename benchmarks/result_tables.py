"""The record of the regret tables in a results page: every ``| agent | final regret | ...`` table, row by row.

The experiment runs (``bandit-gym run CONFIG``, ``bandit-gym report``) are kept in ``benchmarks/results/*.md`` as
tables of one row per agent: a column ``final regret`` (``mean +- s.e.``) and, where the run had a grid, a column
``chosen ...`` (the point the protocol picked). This script reads those tables back, without running anything,
into a record that ``docs/gen_numbers.py`` renders (``benchmarks/_report.py``'s format: ``rows`` and how they were
made). Each row has:

- ``section``: the heading above the table, cut at its first ``": "`` or ``" ("`` (``"Figure 1(a)"``,
  ``"Quickstart"``, ``"Mushroom-v0"``);
- ``table``: which table of that section it is (1, 2, ...);
- ``agent``: the first cell, cut at its first ``" ("`` (``"LMCTS (linear model)"`` is ``LMCTS``);
- ``regret`` and ``se``: the final regret's mean and standard error;
- ``chosen``: the chosen point's text, or None.

Rows whose regret is not ``mean +- s.e.`` are left out.

With ``--every-table`` it reads every table of the lines instead, whatever its columns (the measurements kept as
one row per setting, a column per env or per timing): one row per table row, with ``section`` and ``table`` as
above and one field per column, named by its header (cut at its first ``" ("``, lower case, every run of other
characters than letters and digits an ``_``: ``"`LinearBandit-v0` (new arms each round)"`` is
``linearbandit_v0``, ``"wall time (s)"`` is ``wall_time``). A cell, its Markdown emphasis and code marks removed,
is read as ``mean +- s.e.`` (the field the mean, ``<field>_se`` the standard error and, where a ``" (...)"``
follows, ``<field>_note`` its text), a number (an int, or a float where it has a decimal point; thousands
separators allowed), or else text (None where empty). ``docs/reproducing.md``'s figures come from::

    python benchmarks/result_tables.py benchmarks/results/paper_figures.md --section "The runs" \\
        --record benchmarks/results/paper_figures.json
    python benchmarks/result_tables.py benchmarks/results/fig2_grid.md --section "Rerun after 3f5a294" \\
        --record benchmarks/results/fig2_grid.json
    python benchmarks/result_tables.py benchmarks/results/paper_figures.md --section "Figure 3" --every-table \\
        --record benchmarks/results/fig3_standin.json
    python benchmarks/result_tables.py benchmarks/results/paper_figures.md --section "Table 2" --every-table \\
        --record benchmarks/results/table2_standin.json

and ``docs/agents.md``'s from::

    python benchmarks/result_tables.py benchmarks/results/real_data.md --section "The baselines' defaults" \\
        --every-table --record benchmarks/results/baseline_defaults.json
    python benchmarks/result_tables.py benchmarks/results/linear_paper.md --section "Run 23" --every-table \\
        --record benchmarks/results/linear_paper_run23.json
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import mean_se, stored_lines, write_atomically  # noqa: E402

_CUT = re.compile(r": | \(")


def short(text: str) -> str:
    """A heading or an agent's cell up to its first ``": "`` or ``" ("``, without Markdown emphasis or code."""
    text = text.strip().strip("#").strip().replace("`", "").replace("**", "")
    return _CUT.split(text, maxsplit=1)[0].strip()


def table_rows(lines: list[str]) -> list[dict]:
    """The record's rows of every regret table among ``lines`` (module docstring)."""
    rows: list[dict] = []
    section, tables = "", 0
    columns: list[str] = []
    for line in lines:
        if line.startswith("#"):
            section, tables, columns = short(line), 0, []
            continue
        if not line.startswith("|"):
            columns = []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not columns:
            heads = [cell.lower() for cell in cells]
            if heads[0] == "agent" and any(head.startswith("final regret") for head in heads):
                columns, tables = heads, tables + 1
            continue
        if len(cells) != len(columns):
            continue
        by_head = dict(zip(columns, cells, strict=True))
        figures = next((mean_se(value) for head, value in by_head.items() if head.startswith("final regret")), None)
        if figures is None:
            continue
        chosen = next((value for head, value in by_head.items() if head.startswith("chosen")), None)
        rows.append({"section": section, "table": tables, "agent": short(cells[0]), "regret": figures[0],
                     "se": figures[1], "chosen": chosen})
    return rows


_CELL_MEAN_SE = re.compile(r"(?P<mean>[\d,]*\.?\d+)\s*\+-\s*(?P<se>[\d,]*\.?\d+)(?:\s+\((?P<note>.*)\))?")
_NUMBER = re.compile(r"-?[\d,]*\.?\d+")
_SEPARATOR = re.compile(r":?-+:?")


def field_name(header: str) -> str:
    """A column's header as a record's field (module docstring): ``"wall time (s)"`` is ``wall_time``."""
    text = header.replace("`", "").replace("**", "").strip()
    return re.sub(r"[^a-z0-9]+", "_", text.split(" (", 1)[0].strip().lower()).strip("_")


def number(text: str) -> int | float:
    """``"10,000"`` as 10000, ``"1,081.6"`` as 1081.6."""
    text = text.replace(",", "")
    return float(text) if "." in text else int(text)


def cell_fields(name: str, cell: str) -> dict:
    """The fields of one cell under the column ``name`` (module docstring)."""
    text = cell.replace("`", "").replace("**", "").strip()
    match = _CELL_MEAN_SE.fullmatch(text)
    if match is not None:
        fields = {name: float(number(match["mean"])), f"{name}_se": float(number(match["se"]))}
        return fields if match["note"] is None else {**fields, f"{name}_note": match["note"]}
    if _NUMBER.fullmatch(text):
        return {name: number(text)}
    return {name: text or None}


def every_table_rows(lines: list[str]) -> list[dict]:
    """The record's rows of every table among ``lines``, one per table row (``--every-table``: module docstring)."""
    rows: list[dict] = []
    section, tables = "", 0
    names: list[str] = []
    for line in lines:
        if line.startswith("#"):
            section, tables, names = short(line), 0, []
            continue
        if not line.startswith("|"):
            names = []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not names:
            names, tables = [field_name(cell) or f"column{i + 1}" for i, cell in enumerate(cells)], tables + 1
            continue
        if len(cells) != len(names) or all(_SEPARATOR.fullmatch(cell) for cell in cells):
            continue
        row = {"section": section, "table": tables}
        for name, cell in zip(names, cells, strict=True):
            row.update(cell_fields(name, cell))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a results page (Markdown)")
    parser.add_argument("--section", default=None, help="the tables after this heading only (to the next heading "
                                                        "of its level or above)")
    parser.add_argument("--every-table", action="store_true", help="every table, one row per table row, one "
                                                                    "field per column (module docstring)")
    parser.add_argument("--record", type=Path, required=True, help="the record to write (JSON)")
    args = parser.parse_args(argv)
    lines, where = stored_lines(parser, args.file, args.section, "file")
    rows = every_table_rows(lines) if args.every_table else table_rows(lines)
    if not rows:
        wanted = "table" if args.every_table else "'| agent | final regret |' table"
        parser.error(f"argument file: no {wanted} in {where}")
    words = sys.argv[1:] if argv is None else argv
    record = {"name": args.record.stem, "command": shlex.join(["python", "benchmarks/result_tables.py", *words]),
              "source": where, "rows": rows}
    write_atomically(args.record, json.dumps(record, indent=1) + "\n")
    print(f"{len(rows)} rows: {args.record}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
