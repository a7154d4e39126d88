"""Every agent at its defaults on the real UCI data (Shuttle, MagicTelescope, Mushroom): regret and time.

Each agent plays ``--seeds`` seeds (0, 1, ...) as one batch of replicas on
``gym.make_vec(ID, num_envs=seeds, vectorization_mode="vector_entry_point")`` for ``--rounds`` rounds,
built with nothing but the env (``LMCTS-glm`` and ``LMCTS-mlp`` are ``LMCTS(env, model="glm")`` and
``model="mlp"``). The last row of each dataset is the reference: the textbook LinUCB of
``benchmarks/numpy_linucb.py`` (``run_env``: plain numpy, alpha = 1, ridge 1), one single env per seed,
reset with the same seed (replica ``s`` of the batch is the single env reset with seed ``s``).

Prints a Markdown table: final cumulative regret, mean +- standard error over the seeds, and the
wall time of the whole run (env included), with the CPU model and load average; ``--out FILE``
keeps the table in a file, rewritten after every row (an interrupted run leaves whole rows).

The data are read from ``--cache-dir``, else ``OPENML_CACHE_DIR``, else the shared cache
``<clone>/../shared/datasets/openml_cache``, which is copied to a temporary directory first
(it is read-only). Nothing is downloaded.

    python benchmarks/real_data.py                                    # 5 seeds x 5,000 rounds
    python benchmarks/real_data.py --full                             # the paper's 10 seeds x 10,000
    python benchmarks/real_data.py --agents LinUCB LinTS --rounds 1000 --seeds 2 --datasets Mushroom-v0
    python benchmarks/real_data.py --out benchmarks/results/real_data.md
"""

from __future__ import annotations

import argparse
import os
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
from _report import GrowingTable, cpu_model  # noqa: E402
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
REFERENCE = "numpy LinUCB (textbook: alpha = 1, ridge 1)"


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


def summary(regret: np.ndarray) -> str:
    if len(regret) < 2:
        return f"{regret.mean():.0f}"
    return f"{regret.mean():.0f} +- {regret.std(ddof=1) / np.sqrt(len(regret)):.0f}"


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
    parser.add_argument("--out", type=Path, default=None, help="also keep the table in this Markdown file")
    args = parser.parse_args(argv)
    rounds = args.rounds or (10_000 if args.full else 5_000)
    seeds = args.seeds or (10 if args.full else 5)
    if rounds < 1 or seeds < 1:
        parser.error(f"--rounds and --seeds must be >= 1, got {rounds} and {seeds}")
    cache = cache_dir(args.cache_dir)
    torch.set_num_threads(args.threads)
    header = [f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
              f"{torch.__version__}, {args.threads} thread(s); {seeds} seeds (0-{seeds - 1}) x {rounds} rounds, "
              "every agent at its defaults", "",
              "| dataset | agent | final cumulative regret (mean +- s.e.) | wall time (s) | load |",
              "|---|---|---|---|---|"]
    table = GrowingTable(header, args.out)
    names = [*args.agents] + ([] if args.no_reference else [REFERENCE])
    for env_id in args.datasets:
        env_rounds = min(rounds, ROWS[env_id])
        label = env_id if env_rounds == rounds else f"{env_id} ({env_rounds:,} rounds: every row once)"
        for name in names:
            if name == REFERENCE:
                regret, seconds = run_reference(env_id, env_rounds, seeds, cache)
            else:
                regret, seconds = run_agent(name, env_id, env_rounds, seeds, cache)
            table.row(f"| {label} | {name} | {summary(regret)} | {seconds:.1f} | {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
