"""Report cards: a named, versioned suite of problems x agents x seeds, scored as the Showdown scores them.

    bandit-gym bench SUITE [--size small|full] [--out DIR] [--seeds N] [--horizon T] [--jobs N] [--device D]

``SUITE`` is a suite shipped with the package (``bandit-gym bench --list``: ``showdown``, ``paper``, ``uci``) or
the path of a suite file of your own (YAML, the format of ``bandit_experiments/suites/*.yaml``). Each problem of
the suite is one experiment (its env, the suite's agents at their defaults, the size's horizon and seeds), run by
the runner into ``DIR/<problem>/``: a finished agent is skipped when the same command runs again, so an
interrupted suite resumes. ``DIR/suite.json`` records the suite's name, version and size; a directory holding
another version or size is refused.

At the end it writes, in ``DIR``:

- ``report.md``, ``report.csv`` and ``report.json``: agents x problems, each agent's final cumulative regret
  divided by UniformRandom's mean final cumulative regret on the same problem (Riquelme, Tucker and Snoek 2018,
  "Deep Bayesian Bandits Showdown", score their tables so), mean and standard error over the seeds, and each
  agent's mean over the problems;
- ``report.png`` and ``.pdf``: the same table as a picture (lower is better; 1 is UniformRandom);
- ``<problem>/regret.png`` and ``.pdf``, ``<problem>/summary.md``: each problem's regret curves and table.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from bandit_experiments import catalog
from bandit_experiments.config import LABEL_PATTERN, AgentSpec, ConfigError, ExperimentConfig, _parse
from bandit_experiments.results import ResultsDir, ResultsMismatchError, package_versions
from bandit_experiments.storage import read_json, write_atomic

#: The agent every problem must run: the score's denominator.
REFERENCE = "UniformRandom"
SUITE_KEYS = ("name", "version", "description", "sizes", "agents", "problems", "seed")
PROBLEM_KEYS = ("env", "env_kwargs", "agents", "horizon")


@dataclass(frozen=True)
class Problem:
    """One problem of a suite: a label, an env id with its keywords, and the labels of the agents it runs."""

    label: str
    env: str
    env_kwargs: dict[str, Any]
    agents: tuple[str, ...]
    horizon: int | None = None  # a problem's own horizon (a dataset with fewer rows than the size's), or None


@dataclass(frozen=True)
class Suite:
    """A checked suite (the module docstring; the files in ``bandit_experiments/suites/``)."""

    name: str
    version: int
    sizes: dict[str, dict[str, int]]
    agents: dict[str, AgentSpec]
    problems: tuple[Problem, ...]
    description: str = ""
    seed: int = 0
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def experiment(self, problem: Problem, size: str, seeds: int | None = None,
                   horizon: int | None = None) -> ExperimentConfig:
        """The experiment of ``problem`` at ``size`` (``seeds``/``horizon`` override the size's)."""
        chosen = self.sizes[size]
        rounds = horizon or min(chosen["horizon"], problem.horizon or chosen["horizon"])
        return ExperimentConfig(
            name=f"{self.name}-v{self.version}-{problem.label}", env=problem.env, horizon=rounds,
            seeds=seeds or chosen["seeds"], agents=tuple(self.agents[label] for label in problem.agents),
            env_kwargs=dict(problem.env_kwargs), seed=self.seed, description=self.description, source=self.source)


def suite_names() -> list[str]:
    """The suites shipped with the package."""
    return sorted(path.name.removesuffix(".yaml") for path in resources.files("bandit_experiments.suites").iterdir()
                  if path.name.endswith(".yaml"))


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name, or a suite file by path.

    Raises:
        ConfigError: The first problem in the file, naming the key, the value and what is accepted.
        FileNotFoundError: Neither a shipped suite nor a file.
    """
    if name_or_path in suite_names():
        source = f"bandit_experiments/suites/{name_or_path}.yaml"
        text = resources.files("bandit_experiments.suites").joinpath(f"{name_or_path}.yaml").read_text()
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"suite {name_or_path!r} is neither a suite of the package "
                                    f"({', '.join(suite_names())}) nor a file")
        source, text = str(path), path.read_text()
    return _check_suite(_parse(text, source)[0], source)


def _check_suite(data: Any, source: str) -> Suite:
    def fail(where: str, message: str) -> ConfigError:
        return ConfigError(f"{source}: {where}: {message}")

    if not isinstance(data, dict):
        raise fail("suite", f"a suite is a mapping with the keys {', '.join(SUITE_KEYS)}, got {type(data).__name__}")
    for key in data:
        if key not in SUITE_KEYS:
            raise fail(str(key), catalog.unknown_name_message("key", str(key), SUITE_KEYS))
    for key in ("name", "version", "sizes", "agents", "problems"):
        if key not in data:
            raise fail("suite", f"the key {key!r} is missing")
    name, version = data["name"], data["version"]
    if not isinstance(name, str) or not LABEL_PATTERN.fullmatch(name):
        raise fail("name", f"must be letters, digits, '_', '.', '+' or '-', got {name!r}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail("version", f"must be an integer >= 1, got {version!r}")
    sizes = {}
    if not isinstance(data["sizes"], dict) or not data["sizes"]:
        raise fail("sizes", f"must map size names to {{horizon: T, seeds: N}}, got {data['sizes']!r}")
    for size, value in data["sizes"].items():
        if not isinstance(value, dict) or set(value) != {"horizon", "seeds"} or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value.values()):
            raise fail(f"sizes.{size}", f"must be {{horizon: T, seeds: N}} with integers >= 1, got {value!r}")
        sizes[str(size)] = dict(value)
    agents = {}
    if not isinstance(data["agents"], dict):
        raise fail("agents", f"must map labels to {{agent: Class, fixed: {{...}}}}, got {data['agents']!r}")
    for label, entry in data["agents"].items():
        entry = {} if entry is None else entry
        if not isinstance(label, str) or not LABEL_PATTERN.fullmatch(label):
            raise fail("agents", f"a label must be letters, digits, '_', '.', '+' or '-', got {label!r}")
        if not isinstance(entry, dict) or set(entry) - {"agent", "fixed"}:
            raise fail(f"agents.{label}", f"must be a mapping with the keys agent and fixed, got {entry!r}")
        agent = entry.get("agent", label)
        try:
            catalog.check_agent_name(agent)
        except ValueError as exc:
            raise fail(f"agents.{label}.agent", str(exc)) from None
        fixed = entry.get("fixed") or {}
        if not isinstance(fixed, dict):
            raise fail(f"agents.{label}.fixed", f"must be a mapping of hyperparameters, got {fixed!r}")
        agents[label] = AgentSpec(label=label, agent=agent, fixed=dict(fixed))
    if REFERENCE not in agents:
        raise fail("agents", f"must include {REFERENCE} (the score divides by its regret)")
    if not isinstance(data["problems"], dict) or not data["problems"]:
        raise fail("problems", f"must map problem labels to {{env: ID, env_kwargs: {{...}}}}, got {data['problems']!r}")
    problems = []
    for label, entry in data["problems"].items():
        where = f"problems.{label}"
        if not isinstance(label, str) or not LABEL_PATTERN.fullmatch(label):
            raise fail("problems", f"a label must be letters, digits, '_', '.', '+' or '-', got {label!r}")
        if not isinstance(entry, dict) or "env" not in entry or set(entry) - set(PROBLEM_KEYS):
            raise fail(where, f"must be a mapping with env (and env_kwargs, agents, horizon), got {entry!r}")
        kwargs = entry.get("env_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise fail(f"{where}.env_kwargs", f"must be a mapping, got {kwargs!r}")
        chosen = entry.get("agents", list(agents))
        if not isinstance(chosen, list) or not all(a in agents for a in chosen):
            raise fail(f"{where}.agents", f"must be a list of the suite's agent labels {list(agents)}, got {chosen!r}")
        if REFERENCE not in chosen:
            raise fail(f"{where}.agents", f"must include {REFERENCE} (the score divides by its regret)")
        horizon = entry.get("horizon")
        if horizon is not None and (not isinstance(horizon, int) or isinstance(horizon, bool) or horizon < 1):
            raise fail(f"{where}.horizon", f"must be an integer >= 1, got {horizon!r}")
        problems.append(Problem(label, str(entry["env"]), dict(kwargs), tuple(chosen), horizon))
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise fail("seed", f"must be an integer >= 0, got {seed!r}")
    return Suite(name=name, version=version, sizes=sizes, agents=agents, problems=tuple(problems),
                 description=str(data.get("description", "")).strip(), seed=seed, source=source)


def check_envs(suite: Suite) -> None:
    """Every problem's env id is registered (one line naming the problem otherwise)."""
    for problem in suite.problems:
        try:
            catalog.check_env_id(problem.env)
        except ValueError as exc:
            raise ConfigError(f"{suite.source}: problems.{problem.label}.env: {exc}") from None


def _suite_record(suite: Suite, size: str, seeds: int | None, horizon: int | None) -> dict[str, Any]:
    configs = {p.label: suite.experiment(p, size, seeds, horizon).to_dict() for p in suite.problems}
    return {"suite": suite.name, "version": suite.version, "size": size, "problems": configs}


def prepare(out: Path, suite: Suite, size: str, seeds: int | None, horizon: int | None) -> None:
    """Write ``out/suite.json``, or check that the one there is this suite at this size.

    Raises:
        ResultsMismatchError: ``out`` holds another suite, version or size (names what differs).
    """
    wanted = _suite_record(suite, size, seeds, horizon)
    file = out / "suite.json"
    if file.is_file():
        stored = read_json(file)
        stored = stored if isinstance(stored, dict) else {}
        different = [f"{key}: stored {stored.get(key)!r}, asked {wanted[key]!r}" for key in ("suite", "version", "size")
                     if stored.get(key) != wanted[key]]
        if not different and stored.get("problems") != wanted["problems"]:
            different = ["the problems' experiments (env, keywords, agents, horizon or seeds) differ"]
        if different:
            raise ResultsMismatchError(f"{out} holds results of another suite run ({'; '.join(different)}); nothing "
                                       "was run: give another --out DIR")
        return
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps({**wanted, "versions": package_versions()}, indent=2).encode())


def run_suite(suite: Suite, out: str | Path, size: str = "small", *, seeds: int | None = None,
              horizon: int | None = None, device: str = "cpu", jobs: int = 1, progress: bool = False,
              log=print) -> dict[str, Any]:
    """Run every unfinished cell of every problem of ``suite`` into ``out``; write and return the report."""
    from bandit_experiments.plots import plot_experiment
    from bandit_experiments.runner import run_experiment
    from bandit_experiments.summary import write_summary

    if size not in suite.sizes:
        raise ValueError(f"size must be one of {sorted(suite.sizes)}, got {size!r}")
    check_envs(suite)
    out = Path(out)
    prepare(out, suite, size, seeds, horizon)
    for problem in suite.problems:
        config = suite.experiment(problem, size, seeds, horizon)
        keywords = "".join(f" {k}={v!r}" for k, v in problem.env_kwargs.items())
        log(f"== {problem.label}: {problem.env}{keywords}, {config.horizon} rounds x "
            f"{config.seeds} seeds, {len(config.agents)} agents")
        results = run_experiment(config, str(out / problem.label), device=device, jobs=jobs, progress=progress,
                                 log=log)
        if not results.read_cells():  # every cell failed: the report names the problem as not finished
            log(f"{problem.label}: no finished cell (the same command runs the failed ones again)")
            continue
        write_summary(out / problem.label)
        plot_experiment(out / problem.label)
    report = score(suite, out)
    write_report(report, out)
    return report


def _final_regrets(folder: Path) -> dict[str, np.ndarray]:
    """Each finished agent's final cumulative regret per seed (its first grid point: suites have no grids)."""
    finals = {}
    for cell in ResultsDir(folder).read_cells():
        finals[cell.label] = cell.point_regret(0).sum(axis=0)  # (S,)
    return finals


def score(suite: Suite, out: str | Path) -> dict[str, Any]:
    """The report of the results in ``out``: per problem and agent, the final cumulative regret over
    UniformRandom's mean on that problem, mean and standard error over the seeds; per agent, the mean over the
    problems it ran. A problem whose UniformRandom cell is not finished is left out (named in ``missing``)."""
    out = Path(out)
    stored = read_json(out / "suite.json")
    table: dict[str, dict[str, dict[str, float | None]]] = {label: {} for label in suite.agents}
    missing = []
    for problem in suite.problems:
        folder = out / problem.label
        finals = _final_regrets(folder) if (folder / "experiment.json").is_file() else {}
        if REFERENCE not in finals:
            missing.append(problem.label)
            continue
        reference = float(np.mean(finals[REFERENCE]))
        for label, final in finals.items():
            if not np.all(np.isfinite(final)):
                table[label][problem.label] = {"mean": None, "se": None, "regret": None}
                continue
            normalised = final / reference
            se = float(normalised.std(ddof=1) / math.sqrt(len(normalised))) if len(normalised) > 1 else None
            table[label][problem.label] = {"mean": float(normalised.mean()), "se": se,
                                           "regret": float(final.mean())}
    for row in table.values():
        means = [v["mean"] for v in row.values() if v["mean"] is not None]
        row["mean over problems"] = {"mean": float(np.mean(means)) if means else None, "se": None, "regret": None}
    return {"suite": suite.name, "version": suite.version, "size": stored["size"],
            "problems": [p.label for p in suite.problems if p.label not in missing], "missing": missing,
            "table": table}


def _cell(value: dict[str, float | None] | None) -> str:
    if value is None or value["mean"] is None:
        return "-" if value is None else "diverged"
    return f"{value['mean']:.3f}" + (f" ± {value['se']:.3f}" if value["se"] is not None else "")


def markdown(report: dict[str, Any]) -> str:
    columns = [*report["problems"], "mean over problems"]
    lines = [f"# {report['suite']} v{report['version']} ({report['size']}): final cumulative regret / "
             f"{REFERENCE}'s (mean ± s.e. over the seeds; lower is better)", "",
             "| agent | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label, row in report["table"].items():
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    if report["missing"]:
        lines += ["", f"Not finished ({REFERENCE} missing): {', '.join(report['missing'])}."]
    return "\n".join(lines) + "\n"


def csv_text(report: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["agent", "problem", "normalised_mean", "normalised_se", "regret_mean"])
    for label, row in report["table"].items():
        for problem, value in row.items():
            writer.writerow([label, problem, value["mean"], value["se"], value["regret"]])
    return buffer.getvalue()


def write_report(report: dict[str, Any], out: Path) -> list[Path]:
    """``report.md``, ``.csv``, ``.json``, ``.png`` and ``.pdf`` in ``out``, each whole or not at all."""
    out = Path(out)
    paths = [out / "report.md", out / "report.csv", out / "report.json"]
    for path, text in zip(paths, (markdown(report), csv_text(report), json.dumps(report, indent=2)), strict=True):
        write_atomic(path, text.encode())
    return paths + _picture(report, out / "report")


def _picture(report: dict[str, Any], stem: Path) -> list[Path]:
    from bandit_experiments.plots import _pyplot, _save

    plt = _pyplot()
    columns = [*report["problems"], "mean over problems"]
    labels = list(report["table"])
    values = np.array([[np.nan if report["table"][a].get(c) is None or report["table"][a][c]["mean"] is None
                        else report["table"][a][c]["mean"] for c in columns] for a in labels])
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(columns), 0.9 + 0.45 * len(labels)))
    image = ax.imshow(values, cmap="viridis_r", aspect="auto", vmin=0, vmax=max(1.0, np.nanmax(values, initial=1)))
    for i in range(len(labels)):
        for j in range(len(columns)):
            text = "-" if np.isnan(values[i, j]) else f"{values[i, j]:.2f}"
            dark = values[i, j] > 0.6 * image.norm.vmax  # the dark end of viridis_r: white text
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_title(f"{report['suite']} v{report['version']} ({report['size']}): regret / {REFERENCE}'s", fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.04)
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)
