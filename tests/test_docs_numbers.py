"""The docs' figures come from the benchmarks' records: ``docs/gen_numbers.py --check`` passes on the repository, and
its renderers and the record writer (``benchmarks/_report.py``'s ``Record``) do what they say on small records."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NUMBERS = _load("docs_numbers", REPO / "docs" / "gen_numbers.py")

RECORD = {"name": "toy", "command": "python benchmarks/toy.py --rounds 5", "cpu": {"model": "Toy CPU", "cores": 2},
          "load_average": [1.25, 2.5, 1.75], "date": "2026-01-01T00:00:00+00:00", "versions": {}, "settings": {},
          "rows": [{"agent": "LinUCB", "R": 1, "speed": 0.456, "met": False},
                   {"agent": "LinUCB", "R": 1000, "speed": 12.34, "met": True},
                   {"agent": "env.step alone", "R": 1000, "speed": 345.6, "met": None}]}


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    """A repository holding the record ``toy`` and an empty ``docs/``."""
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "toy.json").write_text(json.dumps(RECORD))
    (tmp_path / "docs").mkdir()
    return tmp_path


def test_docs_numbers_match_their_records():
    """Fails where someone typed over a generated figure, or a record changed without ``--write``."""
    assert NUMBERS.main(["--check"]) == 0, "run: python docs/gen_numbers.py --write"


def test_docs_numbers_table_renders_the_selected_rows(root):
    marker = '<!-- numbers: toy table columns="agent,R,speed:speed per seed" agent=LinUCB -->'
    text = f"Before.\n{marker}\n<!-- end numbers -->\n"
    filled, stale = NUMBERS.fill(text, root / "benchmarks" / "results", "page.md")
    assert filled == (f"Before.\n{marker}\n| agent | R | speed per seed |\n|---|---|---|\n| LinUCB | 1 | 0.46 |\n"
                      "| LinUCB | 1,000 | 12.3 |\n<!-- end numbers -->\n")
    assert stale == [f"page.md:2: region '{marker[5:-4]}' is out of date with its record"]
    assert NUMBERS.fill(filled, root / "benchmarks" / "results")[1] == []  # filled once, up to date


def test_docs_numbers_value_range_and_machine_render_inline(root):
    text = ('R = 1,000: <!-- numbers: toy value key=speed agent=LinUCB R=1000 -->?<!-- end numbers -->x; '
            'all: <!-- numbers: toy range key=speed format=.1f -->?<!-- end numbers -->; '
            'met: <!-- numbers: toy value key=met R=1 -->?<!-- end numbers -->; '
            '<!-- numbers: toy range key=speed agent="env.step alone" -->?<!-- end numbers -->; '
            '<!-- numbers: toy count met=yes,no -->?<!-- end numbers --> targets; '
            '<!-- numbers: toy machine -->?<!-- end numbers -->')
    filled, _ = NUMBERS.fill(text, root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == (
        "R = 1,000: 12.3x; all: 0.5-345.6; met: no; 346; 2 targets; "
        "`python benchmarks/toy.py --rounds 5` on Toy CPU (2 cores), load average (1 min) 1.2-2.5")


def test_docs_numbers_ratio_divides_one_rows_fields(root):
    """``ratio key=a over=b``: the one row's ``a / b``, as a percentage with ``format=.0%``."""
    text = ('<!-- numbers: toy ratio key=speed over=R format=.1% agent=LinUCB R=1000 -->?<!-- end numbers -->; '
            '<!-- numbers: toy ratio key=R over=speed agent="env.step alone" -->?<!-- end numbers -->')
    filled, _ = NUMBERS.fill(text, root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == "1.2%; 2.89"


def test_docs_numbers_rows_ratio_divides_one_rows_field_by_anothers(root):
    """``rows_ratio key=f by=agent top=a bottom=b``: ``f`` of agent a's row over ``f`` of agent b's, among the
    selected rows (R = 1,000 here: 345.6 / 12.34)."""
    text = ('<!-- numbers: toy rows_ratio key=speed by=agent top="env.step alone" bottom=LinUCB R=1000 format=.1f -->?'
            '<!-- end numbers -->')
    filled, _ = NUMBERS.fill(text, root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == "28.0"


def test_docs_numbers_table_formats_one_column_apart_from_the_rest(root):
    marker = '<!-- numbers: toy table columns="R,speed" format=.1f formats=speed=.3f agent=LinUCB -->'
    filled, _ = NUMBERS.fill(f"{marker}<!-- end numbers -->", root / "benchmarks" / "results")
    assert "| 1 | 0.456 |" in filled and "| 1,000 | 12.340 |" in filled  # .3f on speed, not the .1f of the rest


GRID = {"name": "grid", "rows": [{"agent": "A", "data": "X", "regret": 1250.0, "se": 12.0},
                                 {"agent": "A", "data": "Y", "regret": 30.0, "se": 2.0},
                                 {"agent": "B", "data": "X", "regret": 980.0, "se": 9.5},
                                 {"agent": "B", "data": "Y", "regret": 41.0, "se": None},
                                 {"agent": "C", "data": "Y", "regret": 29.0, "se": 1.0}]}


def test_docs_numbers_grid_pivots_rows_into_a_table_with_each_columns_best_in_bold(root):
    (root / "benchmarks" / "results" / "grid.json").write_text(json.dumps(GRID))
    marker = "<!-- numbers: grid grid row=agent column=data value=regret error=se bold=min format=,.0f -->"
    filled, _ = NUMBERS.fill(f"{marker}<!-- end numbers -->", root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == (
        "\n| agent | X | Y |\n|---|---|---|\n| A | 1,250 +- 12 | 30 +- 2 |\n| B | **980 +- 10** | 41 |\n"
        "| C |  | **29 +- 1** |\n")  # C has no X (an empty cell); B's Y has no s.e.
    text = ("<!-- numbers: grid value key=regret error=se agent=A data=X -->?<!-- end numbers --> and "
            "<!-- numbers: grid grid row=data column=agent value=regret bold=max header=set agent=A,B -->"
            "<!-- end numbers -->")
    filled, _ = NUMBERS.fill(text, root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == (
        "1,250 +- 12.0 and \n| set | A | B |\n|---|---|---|\n| X | **1,250** | **980** |\n| Y | 30.0 | 41.0 |\n")
    for spec, message in [("grid grid row=agent column=agent value=regret", "two rows have agent='A'"),
                          ("grid grid row=agent column=data value=regret bold=median", "bold must be min or max")]:
        with pytest.raises(NUMBERS.NumbersError, match=message):
            NUMBERS.fill(f"<!-- numbers: {spec} -->?<!-- end numbers -->", root / "benchmarks" / "results")


@pytest.mark.parametrize(("spec", "message"), [
    ("toy table columns=R formats=speed=.3f", "formats names fields that are not columns: ['speed']"),
    ("toy value key=speed agent=LinUCB", "value needs exactly one row, the filters select 2"),
    ("toy value key=speed agent=NoSuchAgent", "value needs exactly one row, the filters select 0"),
    ("missing table columns=a", "no record"),
    ("toy plot key=speed", "a marker is 'record renderer key=value ...'"),
    ("toy value speed", "arguments must be key=value, got ['speed']"),
    ("toy ratio key=speed over=R agent=LinUCB", "ratio needs exactly one row, the filters select 2"),
    ("toy ratio key=speed over=agent R=1", "ratio needs numbers 'speed' and 'agent' (nonzero)"),
    ("toy rows_ratio key=speed by=agent top=LinUCB bottom=LinUCB", "rows_ratio needs one row with agent='LinUCB'"),
])
def test_docs_numbers_bad_region_names_the_page_line_and_region(root, spec, message):
    text = f"One.\nTwo <!-- numbers: {spec} -->3<!-- end numbers -->\n"
    with pytest.raises(NUMBERS.NumbersError, match=r"^page\.md:2: region 'numbers: .*': ") as info:
        NUMBERS.fill(text, root / "benchmarks" / "results", "page.md")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_docs_numbers_read_a_bench_report_as_one_row_per_agent_and_problem(root):
    """A ``bandit-gym bench`` report (its ``report.json``) is a record: its table cells are the rows."""
    report = {"suite": "toy", "version": 1, "size": "small", "problems": ["a"], "missing": [],
              "table": {"LinUCB": {"a": {"mean": 0.25, "se": 0.01, "regret": 12.5},
                                   "mean over problems": {"mean": 0.25, "se": None, "regret": None}},
                        "LinTS": {"a": {"mean": 0.5, "se": 0.02, "regret": 25.0},
                                  "mean over problems": {"mean": 0.5, "se": None, "regret": None}}}}
    (root / "benchmarks" / "results" / "bench.json").write_text(json.dumps(report))
    text = ('<!-- numbers: bench value key=mean agent=LinTS problem=a -->?<!-- end numbers --> '
            '<!-- numbers: bench count problem="mean over problems" -->?<!-- end numbers -->')
    filled, _ = NUMBERS.fill(text, root / "benchmarks" / "results")
    assert NUMBERS.REGION.sub(lambda m: m["body"], filled) == "0.50 2"
    (root / "benchmarks" / "results" / "bad.json").write_text(json.dumps({"table": {}}))  # neither form
    with pytest.raises(NUMBERS.NumbersError, match="rows"):
        NUMBERS.fill("<!-- numbers: bad count --><!-- end numbers -->", root / "benchmarks" / "results")


def test_docs_numbers_check_fails_on_a_typed_figure_and_write_fixes_it(root, capsys):
    page = root / "docs" / "page.md"
    page.write_text("Speed <!-- numbers: toy value key=speed R=1 -->0.50<!-- end numbers -->.\n")
    assert NUMBERS.main(["--check", "--root", str(root)]) == 1
    assert "docs/page.md:1: region 'numbers: toy value key=speed R=1' is out of date" in capsys.readouterr().err
    assert page.read_text().count("0.50") == 1  # --check rewrites nothing
    assert NUMBERS.main(["--write", "--root", str(root)]) == 0
    assert page.read_text() == "Speed <!-- numbers: toy value key=speed R=1 -->0.46<!-- end numbers -->.\n"
    assert NUMBERS.main(["--check", "--root", str(root)]) == 0


def test_record_keeps_a_whole_file_after_every_row(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from _report import Record
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    record = Record("toy", {"rounds": 5}, out_dir=tmp_path / "results", argv=["toy.py", "--rounds", "5"])
    path = tmp_path / "results" / "toy.json"
    assert json.loads(path.read_text())["rows"] == []
    record.row(agent="LinUCB", R=1, speed=0.5)
    saved = json.loads(path.read_text())
    assert saved["rows"] == [{"agent": "LinUCB", "R": 1, "speed": 0.5}]
    assert saved["command"] == "python benchmarks/toy.py --rounds 5" and saved["settings"] == {"rounds": 5}
    assert len(saved["load_average"]) == 2 and saved["cpu"]["cores"] >= 1 and "torch" in saved["versions"]
    assert [p.name for p in path.parent.iterdir()] == ["toy.json"]  # no temporary file left behind
