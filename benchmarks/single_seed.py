"""One seed against a batch: the batched agents per seed against the numpy textbook LinUCB loop (issue 39, item 4).

The reference is ``benchmarks/numpy_linucb.py``'s ``textbook_linucb``: the 30-line numpy LinUCB (float64, one
seed) stepping ``gym.make(env_id)``. Against it, ``agent.learn(rounds)`` of LinUCB, LinTS and LMC-TS (linear model;
library defaults, kernels on) at R = 1 (``gym.make``) and R = 10, 100 and 1,000 (the native batched env), on
``LinearBandit-v0``, ``Shuttle-v0`` and ``ClassificationBandit-v0`` on scikit-learn's digits. The reference and the
agents run alternately, ``--repeats`` times, in this one process; each figure is the median over the repeats, so
every ratio compares runs seconds apart under the same load. The speed per seed is ``R x reference round / agent
round``; the targets (issue 39) are at least 0.5 at R = 1 (at most 2x slower), 3 at R = 10, 5 at R = 100 and 6 at
R = 1,000.

Three floors are timed beside them: ``env.step alone`` (a bare loop playing arm 0, no agent), ``UniformRandom``
through ``learn`` (the loop with an agent that draws one uniform a round) and the compute floor: the round's
normals and matrix products alone, in plain torch on one thread (the env's arm features where it draws them, one
``(R, D)`` posterior sample, LinUCB's scores, widths and Sherman-Morrison update on the env's ``(R, K, D)`` arms).
Each agent's round is also given as a multiple of the compute floor's.

The agents' rounds shrink as R grows: ``max(--min-rounds, --rounds / sqrt(R))`` at R (the reference, one seed
at every R, plays ``--rounds``); digits stops at R = 10
(``LARGEST_REPLICAS``). Every run is timed after its env's reset. ``--busy`` runs all of it with a
second process spinning on one core. The figures are printed as a Markdown table and written, with the CPU
model, the load average, the date, the versions and the command, to ``benchmarks/results/single_seed.json``
(``single_seed_busy.json`` with ``--busy``; ``--record``), the record ``docs/gen_numbers.py`` renders in the docs.

    python benchmarks/single_seed.py                          # 1,000 rounds at R = 1, 3 repeats, every env
    python benchmarks/single_seed.py --busy --envs LinearBandit-v0 --replicas 1 10
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS, LinUCB, UniformRandom
from bandit_gym.threads import policy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, GrowingTable, Record, cpu_model  # noqa: E402
from numpy_linucb import textbook_linucb  # noqa: E402
from threads import DEFAULT_CACHE, busy_core, copied_cache, make_env  # noqa: E402

AGENTS = {"LinUCB": LinUCB, "LinTS": LinTS, "LMCTS": LMCTS}
#: The floors: no agent (``env.step`` alone), an agent that learns nothing, and the round's arithmetic alone.
FLOORS = {"env.step alone": None, "UniformRandom": UniformRandom, "compute floor": None}
REFERENCE = "numpy textbook LinUCB"
ENVS = ["LinearBandit-v0", "Shuttle-v0", "ClassificationBandit-v0"]
#: Issue 39, item 4: the least speed per seed against the reference, by R.
TARGETS = {1: 0.5, 10: 3, 100: 5, 1000: 6}
#: The largest R timed per env where it is less than ``--replicas``': on digits (K = 10 arms of d = 640 pixels, one
#: ``(D, D)`` matrix per replica, D = 650) a LinUCB round at R = 100 takes tens of seconds on a shared 2-core CPU.
LARGEST_REPLICAS = {"ClassificationBandit-v0": 10}


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def timed(play) -> tuple[float, float]:
    """Wall and CPU seconds of ``play()``."""
    wall, cpu = clocks()
    play()
    end_wall, end_cpu = clocks()
    return end_wall - wall, end_cpu - cpu


def reference(env_id: str, rounds: int, cache: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of the numpy textbook LinUCB playing ``rounds`` rounds of ``gym.make(env_id)``, seed 0
    (after the reset), with numpy's own BLAS threads (``threadpoolctl.threadpool_limits(1)`` around it made the
    env's torch step several times slower)."""
    env = make_env(env_id, 1, rounds, cache)
    arms, _ = env.reset(seed=0)
    seconds = timed(functools.partial(textbook_linucb, env, arms, rounds))
    env.close()
    return seconds


def agent_run(env_id: str, name: str, replicas: int, rounds: int, cache: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of ``rounds`` rounds of ``learn``'s loop (``agent.rounds``) on a fresh env and agent
    (seed 0) after the reset; for ``"env.step alone"``, of ``rounds`` steps of arm 0; for ``"compute floor"``, of
    :func:`compute_floor`."""
    env = make_env(env_id, replicas, rounds, cache)
    arms, _ = env.reset(seed=0)
    if name == "compute floor":
        env.close()
        return timed(functools.partial(compute_floor, arms, rounds, draws_arms=env_id == "LinearBandit-v0"))
    if name == "env.step alone":
        action = 0 if replicas == 1 else np.zeros(replicas, dtype=np.int64)

        def play() -> None:
            for _ in range(rounds):
                env.step(action)
    else:
        agent = {**AGENTS, **FLOORS}[name](env, seed=0)

        def play() -> None:
            for _ in agent.rounds(env, rounds, observation=arms):
                pass
    seconds = timed(play)
    env.close()
    return seconds


def compute_floor(arms: np.ndarray, rounds: int, draws_arms: bool) -> None:
    """The normals and matrix products of ``rounds`` rounds, nothing else, on one torch thread (float32).

    ``arms`` is the env's first observation, ``(K, D)`` or ``(R, K, D)``. A round draws the arms' normals where
    the env draws them (``draws_arms``: ``(R, K, D)``) and one ``(R, D)`` posterior sample, then LinUCB's
    products: the scores ``X theta``, the widths ``x^T A^-1 x``, the chosen rows and the Sherman-Morrison update
    of ``A^-1`` and ``theta``.
    """
    x = torch.as_tensor(arms, dtype=torch.float32)
    x = x[None] if x.dim() == 2 else x  # (R, K, D)
    R, K, D = x.shape
    rows = torch.arange(R)
    generator = torch.Generator().manual_seed(0)
    with policy(1):
        a_inverse = torch.eye(D).repeat(R, 1, 1)  # (R, D, D)
        reward_sum, theta = torch.zeros(R, D), torch.zeros(R, D)
        for _ in range(rounds):
            if draws_arms:
                x = torch.randn(R, K, D, generator=generator)  # (R, K, D)
            torch.randn(R, D, generator=generator)  # (R, D): a posterior sample's normals
            width = (torch.bmm(x, a_inverse) * x).sum(-1).sqrt()  # (R, K)
            action = (torch.bmm(x, theta[:, :, None])[:, :, 0] + width).argmax(dim=1)  # (R,)
            chosen = x[rows, action]  # (R, D)
            ax = torch.bmm(a_inverse, chosen[:, :, None])[:, :, 0]  # (R, D)
            a_inverse -= ax[:, :, None] * ax[:, None, :] / (1 + (ax * chosen).sum(-1))[:, None, None]
            reward_sum += chosen
            theta = torch.bmm(a_inverse, reward_sum[:, :, None])[:, :, 0]  # (R, D)


def rounds_at(replicas: int, rounds: int, min_rounds: int) -> int:
    """The rounds timed at ``replicas``: ``rounds / sqrt(R)``, at least ``min_rounds``."""
    return max(min_rounds, round(rounds / math.sqrt(replicas)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="rounds at R = 1 (default 1,000)")
    parser.add_argument("--min-rounds", type=int, default=20, help="the fewest rounds at any R (default 20)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--envs", nargs="+", default=ENVS, choices=ENVS)
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--replicas", nargs="+", type=int, default=list(TARGETS))
    parser.add_argument("--no-floors", dest="floors", action="store_false", help="leave out the three floors")
    parser.add_argument("--busy", action="store_true", help="run with a second process spinning on one core")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE,
                        help="the OpenML cache for Shuttle-v0 (copied to a temporary folder first)")
    parser.add_argument("--record", type=Path, default=None,
                        help="the JSON record (default benchmarks/results/single_seed.json, _busy with --busy)")
    args = parser.parse_args(argv)
    for name in ("rounds", "min_rounds", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if min(args.replicas) < 1:
        parser.error(f"--replicas must be at least 1 each, got {args.replicas}")
    cache = copied_cache(args.cache_dir) if "Shuttle-v0" in args.envs else None
    names = [*args.agents, *(FLOORS if args.floors else ())]
    record_path = args.record or RESULTS / ("single_seed_busy.json" if args.busy else "single_seed.json")
    settings = {key: getattr(args, key) for key in ("rounds", "min_rounds", "repeats", "envs", "agents", "replicas",
                                                    "busy")}
    settings["rounds_at"] = {str(r): rounds_at(r, args.rounds, args.min_rounds) for r in args.replicas}
    settings["largest_replicas"] = {env_id: r for env_id, r in LARGEST_REPLICAS.items() if env_id in args.envs}
    record = Record(record_path.stem, settings, out_dir=record_path.parent, argv=argv and ["single_seed.py", *argv])
    print(f"{cpu_model()}; {'one core busy (a spinning process); ' if args.busy else ''}median of {args.repeats} "
          f"alternating runs; rounds at R: {settings['rounds_at']}")
    table = GrowingTable(["| env | agent | R | rounds | us/round wall | us/round CPU | per-seed speed vs reference "
                          "(wall, CPU) | target | round / compute floor |", "|---|---|---|---|---|---|---|---|---|"])
    spinner = busy_core() if args.busy else None
    try:
        for env_id in args.envs:
            agent_run(env_id, args.agents[0], 1, 20, cache)  # warm up (numba's cached kernels, torch's first calls)
            reference(env_id, 20, cache)
            for replicas in [r for r in args.replicas if r <= LARGEST_REPLICAS.get(env_id, r)]:
                rounds = rounds_at(replicas, args.rounds, args.min_rounds)
                times: dict = {REFERENCE: []}
                for _ in range(args.repeats):
                    # The reference is one seed whatever R is: timed over --rounds rounds, its round is measured
                    # as well at every R (a handful of rounds would be mostly its first round's costs).
                    times[REFERENCE].append(reference(env_id, args.rounds, cache))
                    for name in names:
                        times.setdefault(name, []).append(agent_run(env_id, name, replicas, rounds, cache))
                emit_rows(table, record, env_id, replicas, rounds, times, args.rounds)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def emit_rows(table: GrowingTable, record: Record, env_id: str, replicas: int, rounds: int, times: dict,
              reference_rounds: int) -> None:
    """One table and record row per name of ``times`` (the reference first): its median microseconds per round,
    its speed per seed against the reference, the target it is held to and its round over the compute floor's."""

    def per_round(name: str, column: int) -> float:
        timed_rounds = reference_rounds if name == REFERENCE else rounds
        return statistics.median(run[column] for run in times[name]) / timed_rounds * 1e6

    ref_wall, ref_cpu = per_round(REFERENCE, 0), per_round(REFERENCE, 1)
    floor = per_round("compute floor", 0) if "compute floor" in times else None
    for name in times:
        wall, cpu = per_round(name, 0), per_round(name, 1)
        reps = 1 if name == REFERENCE else replicas
        speed, speed_cpu = reps * ref_wall / wall, reps * ref_cpu / cpu
        target = TARGETS.get(replicas) if name in AGENTS else None
        over_floor = wall / floor if floor is not None and name in AGENTS else None
        timed_rounds = reference_rounds if name == REFERENCE else rounds
        record.row(env=env_id, agent=name, R=reps, rounds=timed_rounds, us_per_round_wall=wall, us_per_round_cpu=cpu,
                   per_seed_speed=speed, per_seed_speed_cpu=speed_cpu, target=target,
                   met=None if target is None else speed >= target, over_compute_floor=over_floor,
                   runs_s=[list(run) for run in times[name]])
        table.row(f"| {env_id} | {name} | {reps} | {timed_rounds} | {wall:.0f} | {cpu:.0f} | "
                  f"{speed:.2f}, {speed_cpu:.2f} | "
                  f"{'' if target is None else f'{target:g}'} | {'' if over_floor is None else f'{over_floor:.1f}'} |")


if __name__ == "__main__":
    main()
