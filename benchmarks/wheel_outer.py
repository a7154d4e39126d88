"""Does LMC-TS with a network learn the Wheel's outer region? Per seed, how often it plays the optimal arm there.

The Wheel bandit (``WheelBandit-v0``, Riquelme, Tucker and Snoek 2018) pays 50 for the arm of a context's quadrant
when the context lies outside radius ``delta``, about 1.2 for the centre arm and 1 for the others everywhere else: a
policy that has not learned the outer region plays the centre arm there, hitting the optimal arm on none of those
contexts (a uniform policy on 1 in 5). Issue 40 asks that ``LMCTS(model="mlp")`` at its defaults learn the outer
region at ``delta <= 0.95`` on at least 9 of 10 seeds.

For each ``delta``, seeds 0-9 play as one batch of replicas (``gym.make_vec(..., num_envs=10)``) for ``--rounds``
rounds through ``predict`` and ``update``; the optimal arm is the env's ``info["optimal_action"]``. Printed per
``delta``: for the second half of the rounds, each seed's outer contexts and the share of them on which it played the
optimal arm ("hit rate"), and how many seeds reach a hit rate of at least ``--learned`` (default 0.5: more than
twice a uniform policy's 0.2, where a policy playing the centre arm there gets 0). The record
(``benchmarks/results/wheel_outer.json``, or ``--record PATH``) is what ``docs/gen_numbers.py`` renders.

    python benchmarks/wheel_outer.py                         # delta 0.5, 0.7, 0.9, 0.95; 2,000 rounds
    python benchmarks/wheel_outer.py --deltas 0.95 --rounds 5000 --record /tmp/outer.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, Record, cpu_model  # noqa: E402


def outer_hits(delta: float, rounds: int, seeds: int) -> dict:
    """One batch of ``seeds`` replicas: per seed, outer contexts and optimal plays there in the second half."""
    env = gym.make_vec("WheelBandit-v0", num_envs=seeds, vectorization_mode="vector_entry_point", delta=delta)
    agent = LMCTS(env, model="mlp", seed=0)
    obs, info = env.reset(seed=0)
    outer = np.zeros(seeds, dtype=int)
    hits = np.zeros(seeds, dtype=int)
    start = time.perf_counter()
    for t in range(rounds):
        action, _ = agent.predict(obs)
        if t >= rounds // 2:  # obs (R, K, d): arm 0's row is the context in its block, zeros elsewhere
            radius = np.linalg.norm(obs[:, 0], axis=1)
            is_outer = radius > delta
            outer += is_outer
            hits += is_outer & (action == np.asarray(info["optimal_action"]))
        next_obs, reward, _, _, info = env.step(action)
        agent.update(obs, action, reward)
        obs = next_obs
    rate = hits / np.maximum(outer, 1)
    return {"delta": delta, "rounds": rounds, "seconds": round(time.perf_counter() - start, 1),
            "outer": outer.tolist(), "hits": hits.tolist(), "hit_rate": [round(float(r), 3) for r in rate]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.5, 0.7, 0.9, 0.95])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--learned", type=float, default=0.5, help="hit rate that counts as learned")
    parser.add_argument("--record", type=Path, default=None,
                        help="the JSON record (default benchmarks/results/wheel_outer.json)")
    args = parser.parse_args(argv)
    record_path = args.record or RESULTS / "wheel_outer.json"
    record = Record(record_path.stem, {"rounds": args.rounds, "seeds": args.seeds, "learned_at": args.learned},
                    out_dir=record_path.parent, argv=argv and ["wheel_outer.py", *argv])
    print(f"{cpu_model()}, load average {os.getloadavg()[0]:.1f} at the start; LMCTS(model='mlp') at its defaults, "
          f"seeds 0-{args.seeds - 1} as one batch, {args.rounds:,} rounds; hit rate: optimal plays among the outer "
          f"contexts of rounds {args.rounds // 2 + 1:,}-{args.rounds:,}")
    for delta in args.deltas:
        row = outer_hits(delta, args.rounds, args.seeds)
        learned = int(sum(rate >= args.learned for rate in row["hit_rate"]))
        record.row(**row, seeds=args.seeds, learned=learned, lowest_hit_rate=min(row["hit_rate"]))
        print(f"delta {delta}: {learned} of {args.seeds} seeds learned (hit rate >= {args.learned}); hit rates "
              f"{' '.join(f'{r:.2f}' for r in row['hit_rate'])}; outer contexts {row['outer']}; {row['seconds']} s",
              flush=True)


if __name__ == "__main__":
    main()
