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

Rows whose regret is not ``mean +- s.e.`` are left out. ``docs/reproducing.md``'s figures come from::

    python benchmarks/result_tables.py benchmarks/results/paper_figures.md --section "The runs" \\
        --record benchmarks/results/paper_figures.json
    python benchmarks/result_tables.py benchmarks/results/fig2_grid.md --section "Rerun after 3f5a294" \\
        --record benchmarks/results/fig2_grid.json
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a results page (Markdown)")
    parser.add_argument("--section", default=None, help="the tables after this heading only (to the next heading "
                                                        "of its level or above)")
    parser.add_argument("--record", type=Path, required=True, help="the record to write (JSON)")
    args = parser.parse_args(argv)
    lines, where = stored_lines(parser, args.file, args.section, "file")
    rows = table_rows(lines)
    if not rows:
        parser.error(f"argument file: no '| agent | final regret |' table in {where}")
    words = sys.argv[1:] if argv is None else argv
    record = {"name": args.record.stem, "command": shlex.join(["python", "benchmarks/result_tables.py", *words]),
              "source": where, "rows": rows}
    write_atomically(args.record, json.dumps(record, indent=1) + "\n")
    print(f"{len(rows)} rows: {args.record}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
