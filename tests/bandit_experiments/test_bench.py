"""``bandit-gym bench``: suites of problems x agents x seeds, resumable, scored against UniformRandom."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bandit_experiments import bench, catalog, cli
from bandit_experiments.config import ConfigError
from bandit_experiments.results import ResultsDir, ResultsMismatchError

TINY = """
name: tiny
version: 1
sizes:
  small: {horizon: 40, seeds: 3}
  full: {horizon: 80, seeds: 4}
agents:
  UniformRandom:
  LinUCB:
  LinUCB-wide: {agent: LinUCB, fixed: {exploration_scale: 2.0}}
problems:
  changing: {env: LinearBandit-v0, env_kwargs: {n_arms: 5, dim: 3}}
  fixed: {env: LinearBanditFixed-v0, env_kwargs: {n_arms: 5, dim: 3}, agents: [UniformRandom, LinUCB]}
"""


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def _finals(folder) -> dict[str, np.ndarray]:
    """Final cumulative regret per seed of each cell, read from the cell files themselves."""
    return {cell.label: cell.regret.sum(axis=0) for cell in ResultsDir(folder).read_cells()}


def test_bench_scores_each_agent_against_uniform_random_on_each_problem(tiny, tmp_path):
    out = tmp_path / "out"
    report = bench.run_suite(bench.load_suite(str(tiny)), out, log=lambda line: None)
    assert report["problems"] == ["changing", "fixed"] and report["missing"] == []
    for problem in ("changing", "fixed"):
        finals = _finals(out / problem)
        reference = finals["UniformRandom"].mean()
        for label, final in finals.items():
            assert len(final) == 3  # the small size's seeds
            entry = report["table"][label][problem]
            assert entry["mean"] == pytest.approx((final / reference).mean(), rel=1e-12)
            assert entry["se"] == pytest.approx((final / reference).std(ddof=1) / np.sqrt(3), rel=1e-12)
        assert report["table"]["UniformRandom"][problem]["mean"] == pytest.approx(1.0, rel=1e-12)
    assert "fixed" not in report["table"]["LinUCB-wide"]  # the problem runs only the agents it names
    overall = report["table"]["LinUCB"]["mean over problems"]["mean"]
    assert overall == pytest.approx(np.mean([report["table"]["LinUCB"][p]["mean"] for p in ("changing", "fixed")]))
    assert json.loads((out / "report.json").read_text()) == json.loads(json.dumps(report))
    assert (out / "report.png").stat().st_size > 0 and (out / "changing" / "regret.png").is_file()
    assert "LinUCB-wide" in (out / "changing" / "summary.md").read_text()
    markdown = (out / "report.md").read_text()
    assert "| LinUCB-wide |" in markdown and "| - |" in markdown  # LinUCB-wide did not run `fixed`
    stored = json.loads((out / "suite.json").read_text())
    assert (stored["suite"], stored["version"], stored["size"]) == ("tiny", 1, "small")


def test_bench_resumes_without_rerunning_finished_cells(tiny, tmp_path):
    out = tmp_path / "out"
    suite = bench.load_suite(str(tiny))
    bench.run_suite(suite, out, log=lambda line: None)
    cell = out / "changing" / "cells" / "LinUCB.npz"
    first = cell.stat().st_mtime_ns
    cell.with_suffix(".json").unlink()  # one cell lost: only it runs again
    (out / "fixed" / "cells" / "LinUCB.json").unlink()
    lines = []
    again = bench.run_suite(suite, out, log=lines.append)
    assert any("2 of 3 cells already finished" in line for line in lines)
    assert any("1 of 2 cells already finished" in line for line in lines)
    assert again["table"]["UniformRandom"]["changing"]["mean"] == pytest.approx(1.0)
    assert cell.stat().st_mtime_ns != first  # rewritten: it ran again


def test_bench_refuses_a_directory_of_another_version_or_size(tiny, tmp_path):
    out = tmp_path / "out"
    bench.run_suite(bench.load_suite(str(tiny)), out, log=lambda line: None)
    with pytest.raises(ResultsMismatchError, match=r"size: stored 'small', asked 'full'\); nothing was run"):
        bench.run_suite(bench.load_suite(str(tiny)), out, "full", log=lambda line: None)
    tiny.write_text(TINY.replace("version: 1", "version: 2"))
    with pytest.raises(ResultsMismatchError, match=r"version: stored 1, asked 2\)"):
        bench.run_suite(bench.load_suite(str(tiny)), out, log=lambda line: None)


@pytest.mark.parametrize(("change", "message"), [
    (("  UniformRandom:\n", ""), r"agents: must include UniformRandom"),
    (("  LinUCB:\n", "  LinUCB: {agent: LinUBC}\n"), r"agents\.LinUCB\.agent: .*LinUBC.*LinUCB"),
    (("version: 1", "version: 0"), r"version: must be an integer >= 1, got 0"),
    (("small: {horizon: 40, seeds: 3}", "small: {horizon: 40}"), r"sizes\.small: must be \{horizon: T, seeds: N\}"),
    (("agents: [UniformRandom, LinUCB]", "agents: [LinUCB]"), r"problems\.fixed\.agents: must include UniformRandom"),
    (("agents: [UniformRandom, LinUCB]", "agents: [UniformRandom, Nope]"), r"problems\.fixed\.agents: .*Nope"),
    (("name: tiny", "name: tiny\ncolour: red"), r"colour: unknown key"),
])
def test_load_suite_names_the_bad_key_and_value(tiny, change, message):
    tiny.write_text(TINY.replace(*change))
    with pytest.raises(ConfigError, match=message) as info:
        bench.load_suite(str(tiny))
    assert str(info.value).startswith(f"{tiny}: ") and "\n" not in str(info.value)


def test_bench_names_an_unregistered_env_before_running(tiny, tmp_path):
    tiny.write_text(TINY.replace("env: LinearBanditFixed-v0", "env: NoSuchBandit-v0"))
    with pytest.raises(ConfigError, match=r"problems\.fixed\.env: .*NoSuchBandit-v0"):
        bench.run_suite(bench.load_suite(str(tiny)), tmp_path / "out", log=lambda line: None)
    assert not (tmp_path / "out").exists()


#: The suites of benchmarks/suites/ (the records the docs quote were run from them), by path.
BENCHMARK_SUITES = sorted(str(path) for path in (Path(__file__).parents[2] / "benchmarks" / "suites").glob("*.yaml"))


@pytest.mark.parametrize("name", bench.suite_names() + BENCHMARK_SUITES)
def test_every_shipped_suite_loads_and_names_registered_envs_and_agents(name):
    suite = bench.load_suite(name)
    bench.check_envs(suite)
    assert {"small", "full"} <= set(suite.sizes)
    for spec in suite.agents.values():
        catalog.check_agent_name(spec.agent)


def test_cli_bench_lists_the_suites_and_runs_one(tiny, tmp_path, capsys):
    assert cli.main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(line.split(" v")[0] in bench.suite_names() for line in listed.splitlines())
    assert len(listed.splitlines()) == len(bench.suite_names())
    assert cli.main(["bench", str(tiny), "--out", str(tmp_path / "o"), "--seeds", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "report: " in out and "| LinUCB |" in out
    assert len(_finals(tmp_path / "o" / "changing")["LinUCB"]) == 2


def test_cli_bench_refuses_an_unknown_size_in_one_line(tiny, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", str(tiny), "--size", "huge"])
    assert info.value.code == 2
    assert "argument --size: must be one of ['full', 'small'] for suite 'tiny', got 'huge'" in capsys.readouterr().err


def test_bench_reports_a_problem_whose_cells_all_failed_as_not_finished_and_goes_on(tiny, tmp_path):
    broken = "env_kwargs: {n_arms: 5, dim: 3, noise_std: -1.0}}"  # every cell of `changing` fails to make its env
    tiny.write_text(TINY.replace("env_kwargs: {n_arms: 5, dim: 3}}", broken, 1))
    lines = []
    report = bench.run_suite(bench.load_suite(str(tiny)), tmp_path / "out", log=lines.append)
    assert report["missing"] == ["changing"] and report["problems"] == ["fixed"]
    assert any("changing: no finished cell" in line for line in lines)
    assert "Not finished (UniformRandom missing): changing." in (tmp_path / "out" / "report.md").read_text()
