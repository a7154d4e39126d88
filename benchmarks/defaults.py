"""Agents at their defaults (or at named settings) on named envs: final regret per seed, its mean and the worst seed.

Each agent plays ``--seeds`` seeds (0, 1, ...) as one batch of replicas on
``gym.make_vec(ID, num_envs=seeds, vectorization_mode="vector_entry_point")`` for ``--rounds`` rounds (an env's
registered horizon where it is shorter). An agent is its class name (``agents.NAME``), optionally with settings
after a colon: ``EnsembleSampling:inverse_temperature=10,scale_features=False`` (values as Python literals). This is
how a default is checked on the problems it was chosen on and on problems nobody tuned it on.

Prints a Markdown table (env, agent, rounds, seeds, regret mean +- s.e., worst seed, wall seconds, load) and, with
``--out FILE.md``, keeps it there with its record ``FILE.json`` (``benchmarks/_report.py``'s ``Record``: one row per
env and agent with ``regret``, ``se``, ``worst`` and ``regrets`` per seed), both rewritten after every row.

The data envs read ``--cache-dir`` (else ``OPENML_CACHE_DIR``, else a temporary copy of the shared cache:
``benchmarks/real_data.py``'s :func:`cache_dir`). Nothing is downloaded.

    python benchmarks/defaults.py --envs LinearBanditFixed-v0 --agents EnsembleSampling LinTS
    python benchmarks/defaults.py --envs Shuttle-v0 --rounds 5000 --seeds 5 \\
        --agents EnsembleSampling "EnsembleSampling:inverse_temperature=10" --out /tmp/defaults.md
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import agents
import bandit_gym  # noqa: F401  (registers the envs)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import GrowingTable, Record, cpu_model  # noqa: E402
from real_data import cache_dir, standard_error  # noqa: E402


def parse_agent(text: str) -> tuple[type, dict]:
    """``"NAME"`` or ``"NAME:key=value,..."`` as the agent class and its settings (ValueError naming the text)."""
    name, _, settings = text.partition(":")
    cls = getattr(agents, name, None)
    if not (isinstance(cls, type) and issubclass(cls, agents.BanditAgent)):
        raise ValueError(f"agent {text!r}: {name!r} is not an agent of the agents package")
    kwargs = {}
    for pair in filter(None, settings.split(",")):
        key, equals, value = pair.partition("=")
        if not equals:
            raise ValueError(f"agent {text!r}: settings are key=value, got {pair!r}")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"agent {text!r}: {value!r} is not a Python literal") from None
    return cls, kwargs


def needs_data(env_id: str) -> bool:
    """Whether the registered env reads a data set (an env of ``bandit_gym.datasets``, which takes ``cache_dir``)."""
    return str(gym.spec(env_id).entry_point).startswith("bandit_gym.datasets.")


def run(env_id: str, text: str, rounds: int, seeds: int, cache: Path | None) -> tuple[np.ndarray, int, float]:
    """Final cumulative regret per seed, the rounds played and the wall seconds of construction and ``learn``."""
    cls, kwargs = parse_agent(text)
    extra = {} if cache is None else {"cache_dir": cache}
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", device="cpu", **extra)
    horizon = gym.spec(env_id).kwargs.get("horizon")
    rounds = rounds if horizon is None else min(rounds, horizon)
    start = time.perf_counter()
    agent = cls(env, seed=0, device="cpu", **kwargs).learn(rounds)
    seconds = time.perf_counter() - start
    env.close()
    return agent.history["regret"].sum(axis=0), rounds, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", required=True, metavar="ID", help="registered env ids")
    parser.add_argument("--agents", nargs="+", required=True, metavar="AGENT",
                        help="NAME or NAME:key=value,... (an agents class and settings)")
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds per run (default 10,000; an env's "
                                                                   "registered horizon where shorter)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..n-1 as one batch (default 10)")
    parser.add_argument("--cache-dir", default=None, help="the OpenML cache of the data envs")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--out", type=Path, default=None, help="keep the table in this Markdown file and its record "
                                                              "beside it (.json)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seeds < 2:
        parser.error(f"--rounds must be >= 1 and --seeds >= 2, got {args.rounds} and {args.seeds}")
    for env_id in args.envs:
        if env_id not in gym.registry:
            parser.error(f"argument --envs: {env_id!r} is not a registered env id")
    for text in args.agents:
        try:
            parse_agent(text)
        except ValueError as error:
            parser.error(f"argument --agents: {error}")
    cache = cache_dir(args.cache_dir) if any(needs_data(e) for e in args.envs) else None
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    header = [f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
              f"{torch.__version__}, {args.threads} thread(s); seeds 0-{args.seeds - 1} as one batch", "",
              "| env | agent | rounds | seeds | final regret (mean +- s.e.) | worst seed | wall time (s) | load |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    table = GrowingTable(header, args.out)
    record = None if args.out is None else Record(
        args.out.stem, {"rounds": args.rounds, "seeds": args.seeds, "threads": args.threads}, args.out.parent,
        ["defaults.py", *(sys.argv[1:] if argv is None else argv)])
    try:
        for env_id in args.envs:
            for text in args.agents:
                regret, rounds, seconds = run(env_id, text, args.rounds, args.seeds, cache if needs_data(env_id)
                                              else None)
                load, se = os.getloadavg()[0], standard_error(regret)
                table.row(f"| {env_id} | {text} | {rounds} | {args.seeds} | {regret.mean():.1f} +- {se:.1f} | "
                          f"{regret.max():.0f} | {seconds:.1f} | {load:.1f} |")
                if record is not None:
                    record.row(env=env_id, agent=text, rounds=rounds, seeds=args.seeds, regret=float(regret.mean()),
                               se=se, worst=float(regret.max()), regrets=[float(r) for r in regret],
                               wall_s=round(seconds, 2), load=round(load, 2))
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
