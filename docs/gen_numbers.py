"""Fill the figures of the Markdown docs from the benchmarks' JSON records: no number in a page is typed in.

A region of a page (``README.md``, ``docs/**/*.md``) is everything between a start marker and the next end
marker, on one line or over several::

    <!-- numbers: single_seed table columns=env,agent,R,per_seed_speed agent=LinUCB,LinTS -->
    <!-- end numbers -->

The start marker names a record (``benchmarks/results/<record>.json``, written by a benchmark script through
``benchmarks/_report.py``'s ``Record``, or a ``bandit-gym bench`` run's ``report.json``: :func:`record_rows`), a
renderer and its arguments (``key=value``; quote a value with spaces, as in a shell). Every other ``key=value``
selects rows: the rows whose field ``key`` is one of the comma-separated values (``R=1,10``,
``agent="env.step alone"``, ``met=no``). The renderers:

- ``table columns=a,b:Header b``: the selected rows as a Markdown table of those fields (``:`` gives a header;
  the field's name otherwise; ``format=`` applies to its floats, ``formats=field=spec,...`` to one column's);
- ``grid row=a column=b value=c``: one table row per value of field ``a``, one column per value of ``b`` (in
  the order the rows come), each cell the field ``c`` of the row with those two (``error=e`` adds ``+- e``;
  ``bold=min`` or ``bold=max`` sets each column's lowest or highest ``c`` in bold; ``header=`` names the first
  column, ``format=`` as for ``table``);
- ``value key=field``: the field of the one selected row (``error=e`` adds ``+- e``);
- ``ratio key=field over=other``: the one selected row's ``field`` divided by its ``other`` (``format=.0%``
  writes it as a percentage);
- ``rows_ratio key=field by=name top=a bottom=b``: among the selected rows, ``field`` of the row whose ``name`` is
  ``a`` divided by ``field`` of the row whose ``name`` is ``b`` (one agent's time over another's);
- ``range key=field``: ``low-high`` of the field over the selected rows (one value where they agree);
- ``count``: how many rows the filters select;
- ``machine``: how the record was measured: the command, the CPU model, its cores and the load average.

Numbers are written as the docs write them: integers with thousands separators, floats with two decimals
below 10, one below 100 and none above (``format=.3f`` or any format spec overrides it), booleans as yes/no.

    python docs/gen_numbers.py --write   # rewrite every region from the records
    python docs/gen_numbers.py --check   # exit 1, naming the file, line and region, where a page is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REGION = re.compile(r"<!-- numbers: (?P<spec>.*?) -->(?P<body>.*?)<!-- end numbers -->", re.DOTALL)


class NumbersError(ValueError):
    """A region that cannot be rendered: its message names the file, the line and the region."""


def pages(root: Path) -> list[Path]:
    """The Markdown pages that may hold regions: ``README.md`` and ``docs/**/*.md``, in a fixed order."""
    return sorted([*(root / "docs").rglob("*.md"), *([root / "README.md"] if (root / "README.md").exists() else [])])


def as_docs(value, spec: str | None = None) -> str:
    """A record's value as the docs write it (see the module docstring)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return ""
    if spec is not None:
        return format(value, spec)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def selected(rows: list[dict], filters: dict[str, str]) -> list[dict]:
    """The rows whose every filtered field is one of the filter's comma-separated values (written as Python
    writes it, ``R=1000``, or as the docs do, ``met=no``)."""
    def keeps(row: dict) -> bool:
        return all(key in row and {str(row[key]), as_docs(row[key])} & set(value.split(","))
                   for key, value in filters.items())
    return [row for row in rows if keeps(row)]


def table(record: dict, rows: list[dict], columns: str, format: str | None = None,  # noqa: A002
          formats: str | None = None) -> str:
    fields = [column.partition(":") for column in columns.split(",")]
    specs = dict(pair.split("=", 1) for pair in formats.split(",")) if formats else {}
    unknown = set(specs) - {key for key, _, _ in fields}
    if unknown:
        raise NumbersError(f"formats names fields that are not columns: {sorted(unknown)}")
    lines = ["| " + " | ".join(header or key for key, _, header in fields) + " |",
             "|" + "---|" * len(fields)]
    lines += ["| " + " | ".join(as_docs(v := row.get(key), specs.get(key, format) if isinstance(v, float) else None)
                                for key, _, _ in fields) + " |" for row in rows]
    return "\n" + "\n".join(lines) + "\n"


def grid(record: dict, rows: list[dict], row: str, column: str, value: str, error: str | None = None,
         bold: str | None = None, header: str | None = None, format: str | None = None) -> str:  # noqa: A002
    if bold not in (None, "min", "max"):
        raise NumbersError(f"bold must be min or max, got {bold!r}")
    cells: dict[tuple, dict] = {}
    for r in rows:
        if (r.get(row), r.get(column)) in cells:
            raise NumbersError(f"two rows have {row}={r.get(row)!r} and {column}={r.get(column)!r}")
        cells[r.get(row), r.get(column)] = r
    names, heads = list(dict.fromkeys(r.get(row) for r in rows)), list(dict.fromkeys(r.get(column) for r in rows))
    best = {}
    if bold is not None:
        for head in heads:
            values = [r[value] for (_, h), r in cells.items() if h == head and r.get(value) is not None]
            best[head] = (min if bold == "min" else max)(values) if values else None

    def cell(name, head) -> str:
        r = cells.get((name, head))
        if r is None or r.get(value) is None:
            return ""
        text = as_docs(r[value], format)
        if error is not None and r.get(error) is not None:
            text += f" +- {as_docs(r[error], format)}"
        return f"**{text}**" if r[value] == best.get(head) else text

    lines = ["| " + " | ".join([header or row, *map(as_docs, heads)]) + " |", "|" + "---|" * (len(heads) + 1)]
    lines += ["| " + " | ".join([as_docs(name), *(cell(name, head) for head in heads)]) + " |" for name in names]
    return "\n" + "\n".join(lines) + "\n"


def value(record: dict, rows: list[dict], key: str, error: str | None = None,
          format: str | None = None) -> str:  # noqa: A002
    if len(rows) != 1:
        raise NumbersError(f"value needs exactly one row, the filters select {len(rows)}")
    text = as_docs(rows[0].get(key), format)
    return text if error is None else f"{text} +- {as_docs(rows[0].get(error), format)}"


def ratio(record: dict, rows: list[dict], key: str, over: str, format: str | None = None) -> str:  # noqa: A002
    if len(rows) != 1:
        raise NumbersError(f"ratio needs exactly one row, the filters select {len(rows)}")
    top, bottom = rows[0].get(key), rows[0].get(over)
    if not isinstance(top, (int, float)) or not isinstance(bottom, (int, float)) or not bottom:
        raise NumbersError(f"ratio needs numbers {key!r} and {over!r} (nonzero), the row has {top!r} and {bottom!r}")
    return as_docs(top / bottom, format)


def rows_ratio(record: dict, rows: list[dict], key: str, by: str, top: str, bottom: str,
               format: str | None = None) -> str:  # noqa: A002
    def one(name: str) -> float:
        found = [row.get(key) for row in rows if str(row.get(by)) == name]
        if len(found) != 1 or not isinstance(found[0], (int, float)):
            raise NumbersError(f"rows_ratio needs one row with {by}={name!r} and a number {key!r}, found {found!r}")
        return found[0]

    numerator, denominator = one(top), one(bottom)
    if not denominator:
        raise NumbersError(f"rows_ratio: {key!r} of {by}={bottom!r} is 0")
    return as_docs(numerator / denominator, format)


def value_range(record: dict, rows: list[dict], key: str, format: str | None = None) -> str:  # noqa: A002
    values = [row[key] for row in rows if row.get(key) is not None]
    if not values:
        raise NumbersError(f"range needs at least one row with {key!r}, the filters select none")
    low, high = as_docs(min(values), format), as_docs(max(values), format)
    return low if low == high else f"{low}-{high}"


def count(record: dict, rows: list[dict]) -> str:
    return as_docs(len(rows))


def machine(record: dict, rows: list[dict]) -> str:
    loads = record["load_average"]
    return (f"`{record['command']}` on {record['cpu']['model']} ({record['cpu']['cores']} cores), load average "
            f"(1 min) {min(loads):.1f}-{max(loads):.1f}")


RENDERERS = {"table": table, "grid": grid, "value": value, "ratio": ratio, "rows_ratio": rows_ratio,
             "range": value_range, "count": count,
             "machine": machine}
#: The arguments of each renderer; every other ``key=value`` of a marker selects rows.
ARGUMENTS = {"table": {"columns", "format", "formats"},
             "grid": {"row", "column", "value", "error", "bold", "header", "format"},
             "value": {"key", "error", "format"}, "ratio": {"key", "over", "format"},
             "rows_ratio": {"key", "by", "top", "bottom", "format"}, "range": {"key", "format"},
             "count": set(), "machine": set()}


def record_rows(record: dict) -> list[dict]:
    """A record's rows: a benchmark's (``Record``: its ``rows``), or a ``bandit-gym bench`` report's table (its
    ``report.json``, copied to ``benchmarks/results/``) as one row per agent and problem, with the fields
    ``agent``, ``problem`` (``"mean over problems"`` included), ``mean`` and ``se`` (regret over
    UniformRandom's) and ``regret`` (the agent's mean final regret)."""
    if "rows" in record:
        return record["rows"]
    if "table" in record and "suite" in record:
        return [{"agent": agent, "problem": problem, **cell}
                for agent, problems in record["table"].items() for problem, cell in problems.items()]
    raise NumbersError("a record holds 'rows' (benchmarks/_report.py) or a bench report's 'suite' and 'table'")


def render(spec: str, records: Path) -> str:
    """The text of the region whose start marker holds ``spec`` (``record renderer key=value ...``)."""
    words = shlex.split(spec)
    if len(words) < 2 or words[1] not in RENDERERS:
        raise NumbersError(f"a marker is 'record renderer key=value ...' with a renderer of {sorted(RENDERERS)}")
    name, renderer, pairs = words[0], words[1], words[2:]
    if not all("=" in pair for pair in pairs):
        raise NumbersError(f"arguments must be key=value, got {[p for p in pairs if '=' not in p]}")
    options = dict(pair.split("=", 1) for pair in pairs)
    path = records / f"{name}.json"
    if not path.is_file():
        raise NumbersError(f"no record {path} (run the benchmark that writes it)")
    record = json.loads(path.read_text())
    arguments = {k: v for k, v in options.items() if k in ARGUMENTS[renderer]}
    rows = selected(record_rows(record), {k: v for k, v in options.items() if k not in ARGUMENTS[renderer]})
    try:
        return RENDERERS[renderer](record, rows, **arguments)
    except TypeError as exc:
        raise NumbersError(f"{renderer}: {exc}") from None


def fill(text: str, records: Path, where: str = "<text>") -> tuple[str, list[str]]:
    """``text`` with every region rendered, and one line per region whose text changed (``where:line: ...``)."""
    stale: list[str] = []

    def replace(match: re.Match) -> str:
        line = text.count("\n", 0, match.start()) + 1
        try:
            body = render(match["spec"], records)
        except NumbersError as exc:
            raise NumbersError(f"{where}:{line}: region 'numbers: {match['spec']}': {exc}") from None
        if body != match["body"]:
            stale.append(f"{where}:{line}: region 'numbers: {match['spec']}' is out of date with its record")
        return f"<!-- numbers: {match['spec']} -->{body}<!-- end numbers -->"

    return REGION.sub(replace, text), stale


def write(page: Path, text: str) -> None:
    """Replace ``page`` by ``text`` atomically (the package's writer: never a half-written page)."""
    from bandit_gym.atomic import atomic_write

    with atomic_write(page) as f:
        f.write(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite every region from the records")
    mode.add_argument("--check", action="store_true", help="exit 1 where a region differs from its record")
    parser.add_argument("--root", type=Path, default=REPO, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    records = args.root / "benchmarks" / "results"
    stale: list[str] = []
    try:
        for page in pages(args.root):
            text = page.read_text()
            filled, changed = fill(text, records, str(page.relative_to(args.root)))
            stale += changed
            if args.write and changed:
                write(page, filled)
    except NumbersError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.write:
        print(f"rewrote {len(stale)} region(s)" + "".join(f"\n  {line}" for line in stale))
        return 0
    for line in stale:
        print(f"{line}; run python docs/gen_numbers.py --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
