"""benchmarks/speed_devices.py (what each speed device earns) and benchmarks/code_size.py's listing of the devices."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_scripts import benchmark_module  # tests/integration is on pytest's pythonpath

ROOT = Path(__file__).resolve().parents[1]




def test_speed_devices_benchmark_writes_a_row_per_device_with_its_gain(tmp_path, capsys):
    speed_devices = benchmark_module("speed_devices")
    out = tmp_path / "speed_devices.md"
    speed_devices.main(["--seconds", "0.001", "--repeats", "1", "--only", "best_arms-single", "chunk_draws",
                        "--out", str(out)])
    text = out.read_text()
    assert text == capsys.readouterr().out  # the file is the table printed
    rows = [line for line in text.splitlines() if line.startswith("| best_arms-single") or
            line.startswith("| chunk_draws")]
    assert len(rows) == 2 and "load average" in text and speed_devices.cpu_model() in text
    record = json.loads((tmp_path / "speed_devices.json").read_text())  # the same rows, as numbers
    assert sorted(row["row"] for row in record["rows"]) == ["best_arms-single", "chunk_draws"]
    assert all(row["gain"] == round(row["without_us"] / row["with_us"], 3) or abs(
        row["gain"] - row["without_us"] / row["with_us"]) < 0.01 for row in record["rows"])
    gains = benchmark_module("code_size").recorded_gains(out)
    assert set(gains) == {"best_arms-single", "chunk_draws"} and all(g.endswith("x") for g in gains.values())


def test_code_size_reads_each_rows_gain_from_the_record(tmp_path):
    code_size = benchmark_module("code_size")
    record = tmp_path / "speed_devices.md"
    record.write_text("# title\n\n"
                      "| row | device | definition | timed | with (us) | without (us) | gain | bit | load |\n"
                      "|---|---|---|---|---:|---:|---:|---|---:|\n"
                      "| a | `f` | `g` | R = 1 | 2.0 | 5.0 | 2.50x | yes | 1.0 |\n"
                      "| b | `f` | `g` | R = 9 | 2.0 | 2.0 | 1.00x | no | 1.0 |\n")
    gains = code_size.recorded_gains(record)
    assert gains == {"a": "2.50x", "b": "1.00x"}
    assert code_size.gain_text("rows: a b c", gains).startswith("a 2.50x, b 1.00x, c not run")
    assert code_size.gain_text("3x (benchmarks/results/gpu.md)", gains) == "3x (benchmarks/results/gpu.md)"
    assert code_size.recorded_gains(tmp_path / "missing.md") == {}


def test_code_size_span_finds_a_module_level_name():
    code_size = benchmark_module("code_size")
    toy = "import os\n\n_CACHE: dict = {}\nTABLE = (\n    1,\n)\n\ndef f():\n    return _CACHE\n"
    assert code_size.span(toy, "_CACHE") == (3, 3)
    assert code_size.span(toy, "TABLE") == (4, 6)
    assert code_size.span(toy, "f") == (8, 9)


def test_code_size_lists_every_device_the_benchmark_times_and_no_row_it_lacks():
    # Each row of speed_devices.py (but the whole switch's) belongs to a device listed in code_size.py's SPEED_ONLY,
    # and each row a SPEED_ONLY entry names is one the benchmark times.
    code_size, speed_devices = benchmark_module("code_size"), benchmark_module("speed_devices")
    timed = {case.name for case in speed_devices.CASES}
    listed = {row for *_, measured in code_size.SPEED_ONLY if measured.startswith("rows: ")
              for row in measured.removeprefix("rows: ").split()}
    assert listed <= timed
    assert timed - listed == {"switch-single", "switch-vector"}


def test_code_size_every_listed_device_is_found_and_counts_lines():
    # A renamed or deleted function would raise ValueError here; an entry whose lines another entry already
    # counted would count 0.
    code_size = benchmark_module("code_size")
    counts = code_size.measure()["speed_only"]
    assert [key for key, lines in counts.items() if lines == 0] == []


def test_code_size_verdict_compares_the_best_recorded_row_with_the_threshold():
    code_size = benchmark_module("code_size")
    gains = {"a": "1.20x", "b": "1.60x", "c": "1.49x"}
    assert code_size.verdict("rows: a b", gains) == "earns"  # the best row decides
    assert code_size.verdict("rows: a c", gains) == "under 1.5x"
    assert code_size.verdict("rows: z", gains) == "not run"
    assert code_size.verdict("helper", gains) == "helper"
    assert code_size.verdict("not measured", gains) == "not measured"
    assert code_size.verdict("3x (benchmarks/results/gpu.md)", gains) == "see gain"


def test_code_size_page_is_the_scripts_output_for_every_device():
    # The committed page is generated: each SPEED_ONLY entry is a row with its switch state and its verdict from the
    # committed gains record (line counts are left out: they move with every edit of the library). A device kept
    # under the threshold has its reason (a device that straddles it may keep one), and every reason names a device.
    code_size = benchmark_module("code_size")
    gains = code_size.recorded_gains()
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ") for line in code_size.PAGE.read_text().splitlines()
            if line.startswith("| `")}
    expected = {(path if name is None else f"{path}:{name}"): (path, name, switched, measured)
                for path, name, switched, _, measured in code_size.SPEED_ONLY}
    hint = "rerun python benchmarks/code_size.py --write"
    assert set(rows) == set(expected), hint
    for device, (path, name, switched, measured) in expected.items():
        cells = rows[device]
        assert cells[2] == ("on" if switched else "**not on**"), (device, hint)
        assert cells[5].rstrip(" |") == code_size._verdict_text((path, name), measured, gains), (device, hint)
    assert set(code_size.KEPT_UNDER_THRESHOLD) <= {(p, n) for p, n, *_ in code_size.SPEED_ONLY}
