"""The posterior samplers of agents/samplers.py against LMC-TS: every configs/samplers_*.yaml, in parallel.

Each config (issue 22) is one problem of the LMC-TS paper (Figure 1 a-d, the UCI sets of Figure 2) with LMC-TS,
FG-LMC-TS, MALA, HMC, underdamped LMC, ensemble sampling and VITS at ONE budget of gradient evaluations per round
(the config's header says how each agent spends it) and a grid of the same size per agent. A job is one
(problem, agent): all its grid points x seeds as one batch, in its own worker process (``--jobs N`` at a time)
on ONE torch thread, after a 3-round warm-up that compiles the kernels. Each finished job is written at once
to ``OUT/<problem>__<agent>.json`` and the table ``OUT/samplers.md`` is rewritten, both atomically (a temporary
file renamed over the old one): an interrupted run keeps every finished job, and a rerun with the same
horizon and seeds reuses them (``--fresh`` to replay).

Prints per job the best grid point's final cumulative regret (mean +- standard error over the seeds), the
seconds per 1,000 rounds of the whole batch (grid points x seeds replicas), the mean acceptance rate of MALA
and HMC at that point (min-max over its seeds) and the chosen hyperparameters. A grid point whose chain diverges
is replayed alone and left out (the row says how many); a job that fails (a missing dataset) is a row with its
error, not a stop.

    python benchmarks/samplers.py --jobs 16                    # everything at the configs' sizes (16 cores)
    nice python benchmarks/samplers.py --quick --jobs 2        # 300 rounds, 3 seeds: a shared 2-core machine
    python benchmarks/samplers.py --problems linear_fixed quadratic --agents LMCTS MALATS --horizon 500
    python benchmarks/samplers.py --env-kwargs '{cache_dir: /data/openml}'   # where the UCI data is cached

Beside the table, ``OUT/samplers.json`` holds the same rows as a record for ``docs/gen_numbers.py`` (the fields
of :func:`parse_row`, and ``vs_lmcts``: :func:`with_differences`). ``--record-from FILE`` writes that record
from a table already printed (every row of ``FILE`` in this script's format, after the heading ``--section``),
without running anything: ``docs/samplers.md``'s figures come from the tables of ``benchmarks/results/samplers.md``
this way::

    python benchmarks/samplers.py --record-from benchmarks/results/samplers.md \
        --section "The page's tables, as measured" --out benchmarks/results
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import stored_lines  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {path.stem.removeprefix("samplers_"): path for path in sorted((ROOT / "configs").glob("samplers_*.yaml"))}
AGENT_ORDER = ["LMCTS", "FGLMCTS", "MALATS", "HMCTS", "ULMCTS", "EnsembleSampling", "VITS"]
QUICK = {"horizon": 300, "seeds": 3}
HEADER = ["| problem | env | T | seeds | agent | grads / round | regret mean +- s.e. | s / 1k rounds (replicas) | "
          "acceptance mean (min-max) | best point |", "|---|---|---:|---:|---|---|---:|---:|---:|---|"]


def gradient_budget(agent: str, fixed: dict[str, Any]) -> str:
    """Gradient evaluations per round and replica that ``fixed`` gives ``agent`` (as the configs spend it)."""
    if agent == "EnsembleSampling":
        if fixed.get("model", "linear") == "linear":
            return "exact"
        return f"{fixed['n_members']} x {fixed['n_inner_steps']}"
    if agent == "HMCTS":
        return f"{fixed['n_inner_steps']} x {fixed.get('n_leapfrog', 5)}"
    if agent == "VITS":
        return f"{fixed['n_inner_steps']} x 2"
    return str(fixed["n_inner_steps"])


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _play(spec, config, points: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray | None]:
    """Final cumulative regret ``(P, S)`` of ``points`` x seeds as one batch, and MALA's / HMC's acceptance rates
    ``(P, S)`` (None for the other agents)."""
    from bandit_experiments.runner import build_agent, make_env, play_rounds

    env = make_env(config, len(points) * config.seeds, "cpu")
    try:
        agent = build_agent(spec, config, env, "cpu", points)
        played = play_rounds(agent, env, config.horizon)
    finally:
        env.close()
    final = np.asarray(played.regret).sum(axis=0).reshape(len(points), config.seeds)
    rate = getattr(agent, "acceptance_rate", None)
    return final, None if rate is None else rate.cpu().numpy().reshape(len(points), config.seeds)


def run_job(problem: str, label: str, horizon: int | None, seeds: int | None, env_kwargs: dict) -> dict[str, Any]:
    """Play one (problem, agent): every grid point x seed as one batch; the record of :func:`main`'s table."""
    import torch

    torch.set_num_threads(1)  # this worker process is the benchmark's own: one thread, as the issue asks
    from agents.base import DivergenceError
    from bandit_experiments.config import load_config

    record: dict[str, Any] = {"problem": problem, "label": label}
    try:
        config = load_config(CONFIGS[problem], horizon=horizon, seeds=seeds, env_kwargs=env_kwargs,
                             check_agents=False)
        spec = config.agent(label)
        points = spec.points()
        record.update(env=config.env, horizon=config.horizon, seeds=config.seeds, agent=spec.agent,
                      budget=gradient_budget(spec.agent, spec.fixed), replicas=len(points) * config.seeds)
        try:  # warm-up: compiles the kernels
            _play(spec, dataclasses.replace(config, horizon=3, seeds=1), points[:1])
        except DivergenceError:
            pass
        start = time.perf_counter()
        try:  # every point x seed as one batch
            final, rate = _play(spec, config, points)
        except DivergenceError:  # replay point by point: a diverged point is left out, not the others
            parts = []
            for point in points:
                try:
                    parts.append(_play(spec, config, [point]))
                except DivergenceError:
                    parts.append((np.full((1, config.seeds), np.nan), None))
            final = np.concatenate([part[0] for part in parts])
            rates = [part[1] for part in parts]
            rate = None if all(r is None for r in rates) else np.concatenate(
                [np.full((1, config.seeds), np.nan) if r is None else r for r in rates])
            record["diverged_points"] = int(np.isnan(final).any(axis=1).sum())  # the time includes the replay
        seconds = time.perf_counter() - start
    except Exception as error:  # noqa: BLE001  (a job that cannot run is a row, not a stop)
        record["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}" if str(error) else repr(error)
        record["traceback"] = traceback.format_exc()
        return record
    record["points"] = []
    for p, point in enumerate(points):
        regret = final[p]
        finite = bool(np.isfinite(regret).all())
        record["points"].append({
            "hyperparameters": point, "mean": float(regret.mean()) if finite else None,
            "se": float(regret.std(ddof=1) / np.sqrt(len(regret))) if finite and len(regret) > 1 else None,
            "acceptance": None if rate is None else [float(rate[p].mean()), float(rate[p].min()),
                                                     float(rate[p].max())]})
    means = [(point["mean"], p) for p, point in enumerate(record["points"]) if point["mean"] is not None]
    record["best"] = min(means)[1] if means else None
    record["seconds"] = seconds
    record["per_1k"] = 1000 * seconds / config.horizon
    return record


def row(record: dict[str, Any]) -> str:
    """The Markdown row of a job's record."""
    head = (f"| {record['problem']} | {record.get('env', '')} | {record.get('horizon', '')} "
            f"| {record.get('seeds', '')} "
            f"| {record['label']} | {record.get('budget', '')} |")
    if "error" in record:
        return f"{head} {record['error']} | | | |"
    if record["best"] is None:
        return f"{head} diverged at every point | {record['per_1k']:.2f} ({record['replicas']}) | | |"
    best = record["points"][record["best"]]
    se = "nan" if best["se"] is None else f"{best['se']:.1f}"
    rate = best["acceptance"]
    accept = "" if rate is None else f"{rate[0]:.3f} ({rate[1]:.3f}-{rate[2]:.3f})"
    point = ", ".join(f"{name}={value}" for name, value in best["hyperparameters"].items())
    if record.get("diverged_points"):
        point += f" ({record['diverged_points']} of {len(record['points'])} points diverged)"
    return (f"{head} {best['mean']:.1f} +- {se} | {record['per_1k']:.2f} ({record['replicas']}) | {accept} | "
            f"{point} |")


#: A printed row's regret cell, its time cell and its acceptance cell (:func:`row`).
_REGRET = re.compile(r"(?P<mean>[\d.]+) \+- (?P<se>[\d.]+|nan)")
_TIME = re.compile(r"(?P<per_1k>[\d.]+) \((?P<replicas>\d+)\)")
_ACCEPTANCE = re.compile(r"(?P<mean>[\d.]+) \((?P<low>[\d.]+)-(?P<high>[\d.]+)\)")


def parse_row(line: str) -> dict[str, Any] | None:
    """The figures of one row that :func:`row` printed, as the record's fields: ``problem``, ``env``, ``T``,
    ``seeds``, ``agent``, ``budget``, ``regret`` and ``se`` (the best point's final regret, mean and standard
    error), ``per_1k`` (seconds per 1,000 rounds), ``replicas``, ``acceptance``, ``acceptance_low`` and
    ``acceptance_high`` (None but for MALA and HMC) and ``best_point`` (its text). None for any other line (the
    header, the rule, a job's error, a point that diverged everywhere)."""
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    if len(cells) != 10 or not cells[2].isdigit():
        return None
    problem, env, horizon, seeds, agent, budget, regret, timing, acceptance, point = cells
    regret_match, time_match = _REGRET.fullmatch(regret), _TIME.fullmatch(timing)
    if regret_match is None or time_match is None:
        return None
    accept = _ACCEPTANCE.fullmatch(acceptance)
    se = regret_match["se"]
    return {"problem": problem, "env": env, "T": int(horizon), "seeds": int(seeds), "agent": agent, "budget": budget,
            "regret": float(regret_match["mean"]), "se": None if se == "nan" else float(se),
            "per_1k": float(time_match["per_1k"]), "replicas": int(time_match["replicas"]),
            "acceptance": None if accept is None else float(accept["mean"]),
            "acceptance_low": None if accept is None else float(accept["low"]),
            "acceptance_high": None if accept is None else float(accept["high"]), "best_point": point}


def with_differences(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with ``vs_lmcts``: the difference from LMC-TS's regret on the same problem and horizon, in standard
    errors of the difference, ``(regret - regret_LMCTS) / sqrt(se^2 + se_LMCTS^2)`` (the two means taken as
    independent; they share the seeds, so this is approximate). None for LMC-TS itself or without a standard
    error."""
    reference = {(r["problem"], r["T"]): r for r in rows if r["agent"] == "LMCTS"}
    out = []
    for r in rows:
        ref = reference.get((r["problem"], r["T"]))
        usable = ref is not None and r is not ref and r["se"] is not None and ref["se"] is not None
        spread = (r["se"] ** 2 + ref["se"] ** 2) ** 0.5 if usable else 0.0
        out.append({**r, "vs_lmcts": round((r["regret"] - ref["regret"]) / spread, 1) if spread > 0 else None})
    return out


def table_record(lines: list[str], command: str, source: str) -> dict[str, Any]:
    """The record (``docs/gen_numbers.py``'s format: ``rows`` and how they were made) of the rows among ``lines``."""
    rows = [parsed for line in lines if (parsed := parse_row(line)) is not None]
    return {"name": "samplers", "command": command, "source": source, "rows": with_differences(rows)}


def _order(record: dict[str, Any]) -> tuple:
    label = record["label"]
    return (list(CONFIGS).index(record["problem"]), AGENT_ORDER.index(label) if label in AGENT_ORDER else 99, label)


def main(argv: list[str] | None = None) -> int:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(CONFIGS), choices=list(CONFIGS),
                        help="configs/samplers_<problem>.yaml to run (default: all)")
    parser.add_argument("--agents", nargs="+", default=None, help="agent labels to run (default: every config's)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (one (problem, agent) each)")
    parser.add_argument("--horizon", type=int, default=None, help="rounds (default: each config's)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds (default: each config's, 10)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK['horizon']} rounds and {QUICK['seeds']} seeds unless --horizon / --seeds say")
    parser.add_argument("--env-kwargs", default="{}", help="YAML mapping of env keywords, e.g. '{cache_dir: DIR}'")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "samplers_run",
                        help="folder of the per-job records and samplers.md")
    parser.add_argument("--fresh", action="store_true", help="replay jobs whose record is already in --out")
    parser.add_argument("--record-from", type=Path, default=None,
                        help="write --out/samplers.json from this printed table and stop (nothing is run)")
    parser.add_argument("--section", default=None, help="with --record-from: the rows after this heading only")
    args = parser.parse_args(argv)
    if args.record_from is not None:
        return record_from(parser, args, argv)
    for name in ("jobs", "horizon", "seeds"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"argument --{name}: must be an integer >= 1, got {value}")
    env_kwargs = yaml.safe_load(args.env_kwargs) or {}
    if not isinstance(env_kwargs, dict):
        parser.error(f"argument --env-kwargs: must be a YAML mapping, got {args.env_kwargs!r}")
    horizon = args.horizon or (QUICK["horizon"] if args.quick else None)
    seeds = args.seeds or (QUICK["seeds"] if args.quick else None)

    from bandit_experiments.config import load_config

    jobs, done = [], []
    for problem in args.problems:
        config = load_config(CONFIGS[problem], horizon=horizon, seeds=seeds, check_agents=False)
        for spec in config.agents:
            if args.agents and spec.label not in args.agents:
                continue
            path = args.out / f"{problem}__{spec.label}.json"
            if not args.fresh and path.is_file():
                old = json.loads(path.read_text())
                if (old.get("horizon"), old.get("seeds")) == (config.horizon, config.seeds) and "error" not in old:
                    done.append(old)
                    continue
            jobs.append((problem, spec.label))
    table = args.out / "samplers.md"

    def keep(record: dict[str, Any]) -> None:
        _write_atomically(args.out / f"{record['problem']}__{record['label']}.json", json.dumps(record, indent=1))
        done.append(record)
        print(row(record), flush=True)
        write_tables(args.out, done)

    print("\n".join(HEADER), flush=True)
    for record in sorted(done, key=_order):
        print(row(record), flush=True)
    if args.jobs == 1:
        for problem, label in jobs:
            keep(run_job(problem, label, horizon, seeds, env_kwargs))
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(run_job, problem, label, horizon, seeds, env_kwargs) for problem, label in jobs]
            for future in as_completed(futures):
                keep(future.result())
    if not jobs:
        write_tables(args.out, done)
    print(f"table: {table}", flush=True)
    return 0


def write_tables(out: Path, done: list[dict[str, Any]]) -> None:
    """``out/samplers.md`` (the printed table) and ``out/samplers.json`` (its rows as a record), atomically."""
    lines = HEADER + [row(r) for r in sorted(done, key=_order)]
    _write_atomically(out / "samplers.md", "\n".join(lines) + "\n")
    record = table_record(lines, shlex.join(["python", "benchmarks/samplers.py", *sys.argv[1:]]), "this run")
    _write_atomically(out / "samplers.json", json.dumps(record, indent=1) + "\n")


def record_from(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--record-from``: the record of a table already printed, written to ``--out/samplers.json``."""
    lines, where = stored_lines(parser, args.record_from, args.section)
    words = sys.argv[1:] if argv is None else argv
    record = table_record(lines, shlex.join(["python", "benchmarks/samplers.py", *words]), where)
    if not record["rows"]:
        parser.error(f"argument --record-from: no row of this script's table in {args.record_from}")
    _write_atomically(args.out / "samplers.json", json.dumps(record, indent=1) + "\n")
    print(f"{len(record['rows'])} rows: {args.out / 'samplers.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
