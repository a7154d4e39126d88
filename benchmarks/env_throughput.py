"""Env throughput: native batched env vs SyncVectorEnv of single envs vs the random-number floor.

Prints replica-steps per second for R in {1, 64, 1024} on LinearBandit-v0
(50 arms, d = 20, a new arm set every round), and the floor: the time just to
draw one step's R x n_arms x dim normals with the env's own generator (and,
for reference, with ``torch.randn``, which cannot give per-replica streams).

    python benchmarks/env_throughput.py [--device cpu] [--seconds 2]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym
from bandit_gym import _rng

ENV_ID = "LinearBandit-v0"


def per_call_seconds(fn, min_seconds: float) -> float:
    """Mean seconds per call of ``fn``, repeated for at least ``min_seconds`` after one warm-up call.

    Note: the native env draws arm features 8 rounds per generator call, so its mean per step
    includes 1/8 of a block draw; measure for long enough to cover many blocks.
    """
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and calls >= 3:
            return elapsed / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum timing per measurement")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"bandit_gym {bandit_gym.__version__}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, device {device}")
    print(f"{'R':>6} {'native steps/s':>15} {'sync steps/s':>13} {'native/sync':>11} "
          f"{'floor ms':>9} {'step ms':>8} {'step/floor':>10} {'randn ms':>9}")
    for num in args.replicas:
        print(measure(num, device, args.seconds))


def measure(num: int, device: torch.device, seconds: float) -> str:
    """One table row for ``num`` replicas."""
    venv = gym.make_vec(ENV_ID, num_envs=num, vectorization_mode="vector_entry_point", device=device)
    venv.reset(seed=0)
    actions = torch.zeros(num, dtype=torch.int64, device=device)
    wait = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)  # time the work, not its launch
    native = per_call_seconds(lambda: (venv.step(actions), wait()), seconds)

    sync = gym.make_vec(ENV_ID, num_envs=num, vectorization_mode="sync")
    sync.reset(seed=0)
    np_actions = np.zeros(num, dtype=np.int64)
    sync_step = per_call_seconds(lambda: sync.step(np_actions), seconds)

    keys = _rng.seed_to_key(torch.arange(num)).to(device)
    counter = iter(range(10**9))
    shape = (venv.n_arms, venv.dim)
    floor = per_call_seconds(lambda: (_rng.normal(keys, _rng.STREAM_CONTEXT, next(counter), shape), wait()), seconds)
    randn = per_call_seconds(lambda: (torch.randn(num, *shape, device=device), wait()), seconds)
    return (f"{num:>6} {num / native:>15,.0f} {num / sync_step:>13,.0f} {sync_step / native:>11.1f} "
            f"{floor * 1e3:>9.3f} {native * 1e3:>8.3f} {native / floor:>10.2f} {randn * 1e3:>9.3f}")

if __name__ == "__main__":
    main()
