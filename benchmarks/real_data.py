"""Every agent at its defaults on the real UCI data (Shuttle, MagicTelescope, Mushroom): regret and time.

Each agent plays ``--seeds`` seeds (0, 1, ...) as one batch of replicas on
``gym.make_vec(ID, num_envs=seeds, vectorization_mode="vector_entry_point")`` for ``--rounds`` rounds,
built with nothing but the env (``LMCTS-glm`` and ``LMCTS-mlp`` are ``LMCTS(env, model="glm")`` and
``model="mlp"``). The last row of each dataset is the reference: the textbook LinUCB of
``benchmarks/numpy_linucb.py`` (``run_env``: plain numpy, alpha = 1, ridge 1), one single env per seed,
reset with the same seed (replica ``s`` of the batch is the single env reset with seed ``s``).

Prints a Markdown table: final cumulative regret, mean +- standard error over the seeds, and the
wall time of the whole run (env included), with the CPU model and load average. ``--out FILE.md``
keeps the table in a file and its figures as a record (``FILE.json``: ``benchmarks/_report.py``'s ``Record``,
one row per dataset and agent with ``regret``, ``se``, ``regrets`` (per seed), ``wall_s`` and ``load``), both
rewritten after every row (an interrupted run leaves whole rows).

``--record-from FILE --section HEADING --record OUT.json`` writes that record from a table printed before (this
script's rows, or one row per agent with a column per dataset, as ``benchmarks/results/real_data.md`` keeps
them), without running anything; ``--rounds``, ``--seeds`` or ``--full`` say the size the table was run at.
``docs/agents.md``'s real-data figures come from ``real_data.json`` and ``real_data_full.json`` made this way::

    python benchmarks/real_data.py --record-from benchmarks/results/real_data.md \
        --section "Now: 5 seeds x 5,000 rounds" --record benchmarks/results/real_data.json
    python benchmarks/real_data.py --full --record-from benchmarks/results/real_data.md \
        --section "Now: the paper's size" --record benchmarks/results/real_data_full.json

The data are read from ``--cache-dir``, else ``OPENML_CACHE_DIR``, else the shared cache
``<clone>/../shared/datasets/openml_cache``, which is copied to a temporary directory first
(it is read-only). Nothing is downloaded.

    python benchmarks/real_data.py                                    # 5 seeds x 5,000 rounds
    python benchmarks/real_data.py --full                             # the paper's 10 seeds x 10,000
    python benchmarks/real_data.py --agents LinUCB LinTS --rounds 1000 --seeds 2 --datasets Mushroom-v0
    python benchmarks/real_data.py --out /tmp/real_data.md            # and its record /tmp/real_data.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import (
    FGLMCTS,
    GLMTSL,
    HMCTS,
    LMCTS,
    MALATS,
    SGDTS,
    UCBGLM,
    ULMCTS,
    EnsembleSampling,
    EpsGreedy,
    LinTS,
    LinUCB,
    NeuralEpsGreedy,
    NeuralLinUCB,
    NeuralTS,
    NeuralUCB,
    UniformRandom,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import GrowingTable, Record, cpu_model, mean_se, stored_lines, write_atomically  # noqa: E402
from numpy_linucb import run_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED_CACHE = ROOT.parent / "shared" / "datasets" / "openml_cache"
DATASETS = ("Shuttle-v0", "MagicTelescope-v0", "Mushroom-v0")
#: Rows of each dataset: a run visits rows without replacement, so a longer --rounds is cut to this (Mushroom's
#: 8,124 is the paper's horizon there too).
ROWS = {"Shuttle-v0": 58_000, "MagicTelescope-v0": 19_020, "Mushroom-v0": 8_124}
#: Row name -> (agent class, constructor keywords besides the env): every agent at its defaults.
AGENTS = {
    "LinUCB": (LinUCB, {}), "LinTS": (LinTS, {}), "EpsGreedy": (EpsGreedy, {}),
    "LMCTS": (LMCTS, {}), "LMCTS-glm": (LMCTS, {"model": "glm"}), "LMCTS-mlp": (LMCTS, {"model": "mlp"}),
    "UCBGLM": (UCBGLM, {}), "GLMTSL": (GLMTSL, {}), "SGDTS": (SGDTS, {}),
    "NeuralUCB": (NeuralUCB, {}), "NeuralTS": (NeuralTS, {}), "NeuralLinUCB": (NeuralLinUCB, {}),
    "NeuralEpsGreedy": (NeuralEpsGreedy, {}),
    "FGLMCTS": (FGLMCTS, {}), "MALATS": (MALATS, {}), "HMCTS": (HMCTS, {}), "ULMCTS": (ULMCTS, {}),
    "EnsembleSampling": (EnsembleSampling, {}), "UniformRandom": (UniformRandom, {}),
}
REFERENCE = "numpy textbook LinUCB"  # alpha = 1, ridge 1


def cache_dir(given: str | None) -> Path:
    """Where the OpenML data are read: ``given``, ``OPENML_CACHE_DIR``, or a temporary copy of the shared cache."""
    if given is not None:
        return Path(given)
    if "OPENML_CACHE_DIR" in os.environ:
        return Path(os.environ["OPENML_CACHE_DIR"])
    if not SHARED_CACHE.is_dir():
        raise SystemExit("no OpenML cache: give --cache-dir or set OPENML_CACHE_DIR "
                         f"(no shared cache at {SHARED_CACHE})")
    copy = Path(tempfile.mkdtemp(prefix="real_data_")) / "openml_cache"
    shutil.copytree(SHARED_CACHE, copy)
    return copy


def run_agent(name: str, env_id: str, rounds: int, seeds: int, cache: Path) -> tuple[np.ndarray, float]:
    """Final cumulative regret per seed ``(seeds,)`` and the wall seconds of construction and ``learn``."""
    cls, kwargs = AGENTS[name]
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", device="cpu",
                       horizon=rounds, cache_dir=cache)
    start = time.perf_counter()
    agent = cls(env, seed=0, device="cpu", **kwargs).learn(env)
    seconds = time.perf_counter() - start
    env.close()
    return agent.history["regret"].sum(axis=0), seconds


def run_reference(env_id: str, rounds: int, seeds: int, cache: Path) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    regret = [run_env(env_id, s, rounds, cache_dir=cache, horizon=rounds) for s in range(seeds)]
    return np.array(regret), time.perf_counter() - start


def standard_error(regret: np.ndarray) -> float | None:
    return float(regret.std(ddof=1) / np.sqrt(len(regret))) if len(regret) > 1 else None


def summary(regret: np.ndarray) -> str:
    se = standard_error(regret)
    return f"{regret.mean():.0f}" if se is None else f"{regret.mean():.0f} +- {se:.0f}"


def agent_name(label: str) -> str | None:
    """The agent (a key of ``AGENTS``, or ``REFERENCE``) that a stored table's first cell names, else None:
    ``"LMCTS (linear model)"`` is ``LMCTS``, ``"numpy textbook LinUCB (...)"`` the reference."""
    label = label.strip().strip("`*")
    if label.startswith("numpy"):
        return REFERENCE
    word = label.split()[0] if label.split() else ""
    return word if word in AGENTS else None


def parse_table(lines: list[str], rounds: int, seeds: int) -> list[dict]:
    """The record's rows of the tables among ``lines``: this script's rows (``| dataset | agent | mean +- se |
    wall | load |``) or a table of one row per agent and one column per dataset (its header names the datasets;
    a last column ``wall time (s), A / B / C`` gives each dataset's time). ``rounds`` and ``seeds`` are the size
    the tables were run at (a dataset's rounds cut to its rows). Rows that are not an agent's figures are left
    out (a header, a rule, a target, a published figure)."""
    rows: list[dict] = []
    columns: list[str | None] = []
    for line in lines:
        if not line.startswith("|"):
            columns = []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        found = [next((d for d in DATASETS if cell.startswith(d)), None) for cell in cells]
        if cells[0] == "agent" and any(found):
            columns = found
            continue
        if cells[0] in DATASETS and len(cells) == 5 and mean_se(cells[2]) is not None:
            entries = [(cells[0], cells[1], mean_se(cells[2]), cells[3], cells[4])]
        elif columns and len(cells) == len(columns):
            walls = cells[-1].split(" / ") if columns[-1] is None else []
            with_data = [(d, cell) for d, cell in zip(columns, cells, strict=True) if d is not None]
            walls = walls if len(walls) == len(with_data) else [None] * len(with_data)
            entries = [(d, cells[0], mean_se(cell), wall, None)
                       for (d, cell), wall in zip(with_data, walls, strict=True)]
        else:
            continue
        for dataset, label, figures, wall, load in entries:
            name = agent_name(label)
            if name is None or figures is None:
                continue
            rows.append({"dataset": dataset, "agent": name, "rounds": min(rounds, ROWS[dataset]), "seeds": seeds,
                         "regret": figures[0], "se": figures[1], "wall_s": None if wall is None else float(wall),
                         "load": None if load is None else float(load)})
    return rows


def record_from(parser: argparse.ArgumentParser, args: argparse.Namespace, rounds: int, seeds: int,
                argv: list[str] | None) -> None:
    """``--record-from``: the record of tables printed before, written to ``--record``."""
    if args.record is None:
        parser.error("argument --record-from: give --record OUT.json, the record to write")
    lines, where = stored_lines(parser, args.record_from, args.section)
    rows = parse_table(lines, rounds, seeds)
    if not rows:
        parser.error(f"argument --record-from: no table of agents' regrets in {where}")
    words = sys.argv[1:] if argv is None else argv
    record = {"name": args.record.stem, "command": shlex.join(["python", "benchmarks/real_data.py", *words]),
              "source": where,
              "settings": {"rounds": rounds, "seeds": seeds}, "rows": rows}
    write_atomically(args.record, json.dumps(record, indent=1) + "\n")
    print(f"{len(rows)} rows: {args.record}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default 5,000; --full: 10,000)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..n-1 as one batch (default 5; --full: 10)")
    parser.add_argument("--full", action="store_true", help="the paper's size: 10,000 rounds, 10 seeds")
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS), metavar="NAME",
                        help=f"agents to run (default: all): {', '.join(AGENTS)}")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS), metavar="ID")
    parser.add_argument("--no-reference", action="store_true", help="leave out the numpy textbook LinUCB row")
    parser.add_argument("--cache-dir", default=None, help="the OpenML cache (default: OPENML_CACHE_DIR, else a "
                                                           "temporary copy of ../shared/datasets/openml_cache)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--out", type=Path, default=None,
                        help="also keep the table in this Markdown file and its record beside it (.json)")
    parser.add_argument("--record-from", type=Path, default=None,
                        help="write --record from the tables of this file and stop (nothing is run)")
    parser.add_argument("--section", default=None, help="with --record-from: the tables after this heading only")
    parser.add_argument("--record", type=Path, default=None, help="with --record-from: the record to write")
    args = parser.parse_args(argv)
    rounds = args.rounds or (10_000 if args.full else 5_000)
    seeds = args.seeds or (10 if args.full else 5)
    if rounds < 1 or seeds < 1:
        parser.error(f"--rounds and --seeds must be >= 1, got {rounds} and {seeds}")
    if args.record_from is not None:
        return record_from(parser, args, rounds, seeds, argv)
    cache = cache_dir(args.cache_dir)
    torch.set_num_threads(args.threads)
    header = [f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
              f"{torch.__version__}, {args.threads} thread(s); {seeds} seeds (0-{seeds - 1}) x {rounds} rounds, "
              "every agent at its defaults", "",
              "| dataset | agent | final cumulative regret (mean +- s.e.) | wall time (s) | load |",
              "|---|---|---|---|---|"]
    table = GrowingTable(header, args.out)
    record = None if args.out is None else Record(
        args.out.stem, {"rounds": rounds, "seeds": seeds, "threads": args.threads}, args.out.parent,
        ["real_data.py", *(sys.argv[1:] if argv is None else argv)])
    names = [*args.agents] + ([] if args.no_reference else [REFERENCE])
    for env_id in args.datasets:
        env_rounds = min(rounds, ROWS[env_id])
        label = env_id if env_rounds == rounds else f"{env_id} ({env_rounds:,} rounds: every row once)"
        for name in names:
            if name == REFERENCE:
                regret, seconds = run_reference(env_id, env_rounds, seeds, cache)
            else:
                regret, seconds = run_agent(name, env_id, env_rounds, seeds, cache)
            load = os.getloadavg()[0]
            table.row(f"| {label} | {name} | {summary(regret)} | {seconds:.1f} | {load:.1f} |")
            if record is not None:
                record.row(dataset=env_id, agent=name, rounds=env_rounds, seeds=seeds, regret=float(regret.mean()),
                           se=standard_error(regret), regrets=[float(r) for r in regret], wall_s=round(seconds, 2),
                           load=round(load, 2))


if __name__ == "__main__":
    main()
