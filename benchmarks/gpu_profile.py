"""Where a round's time goes, on any device: choose / learn / env split, and torch's profiler table.

Plays ``--rounds`` rounds of one agent on the paper's linear settings (``LinearBandit-v0``,
changing arms, or ``LinearBanditFixed-v0``) with ``--seeds`` replicas as one batch, through
``agent.rounds(timed=True)`` (on CUDA it waits for the device after choosing and after learning,
so each share is the device's work). Then profiles ``--profile-rounds`` more rounds with
``torch.profiler`` and prints the ops that cost the most host time (the launch-bound side) and
the most device time. Written to find the GPU slowdown at 1,000 seeds
(``benchmarks/results/gpu.md``).

    python benchmarks/gpu_profile.py --device cuda --seeds 1000 --agent LMCTS
    BANDIT_GYM_THREADS=torch python benchmarks/gpu_profile.py --device cuda --seeds 1000
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS, LinUCB

AGENTS = {"LMCTS": LMCTS, "LinTS": LinTS, "LinUCB": LinUCB}
SETTINGS = {"changing": "LinearBandit-v0", "fixed": "LinearBanditFixed-v0"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="LMCTS", choices=list(AGENTS))
    parser.add_argument("--setting", default="changing", choices=list(SETTINGS))
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=300, help="timed rounds (default 300)")
    parser.add_argument("--profile-rounds", type=int, default=50, help="profiled rounds after them (default 50)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", type=int, default=20, help="rows of each profiler table (default 20)")
    args = parser.parse_args(argv)

    total = args.rounds + args.profile_rounds
    env = gym.make_vec(SETTINGS[args.setting], num_envs=args.seeds, vectorization_mode="vector_entry_point",
                       device=args.device, horizon=total)
    agent = AGENTS[args.agent](env, seed=0, device=args.device)
    loop = iter(agent.rounds(env, total, timed=True))
    select_s = update_s = 0.0
    start = time.perf_counter()
    for _ in range(args.rounds):
        played = next(loop)
        select_s += played.select_s
        update_s += played.update_s
    wall = time.perf_counter() - start
    per_round = 1e3 / args.rounds
    print(f"{args.agent} on {SETTINGS[args.setting]}, {args.seeds} replicas, device {args.device}, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}: {args.rounds} rounds in {wall:.2f} s; "
          f"per round: choose {select_s * per_round:.2f} ms, learn {update_s * per_round:.2f} ms, "
          f"env and bookkeeping {(wall - select_s - update_s) * per_round:.2f} ms")

    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(args.profile_rounds):
            next(loop)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
    table = profile.key_averages()
    print(f"\n== {args.profile_rounds} rounds: ops by host time (self)")
    print(table.table(sort_by="self_cpu_time_total", row_limit=args.rows, max_name_column_width=60))
    if args.device.startswith("cuda"):
        print(f"\n== {args.profile_rounds} rounds: ops by device time (self)")
        print(table.table(sort_by="self_cuda_time_total", row_limit=args.rows, max_name_column_width=60))


if __name__ == "__main__":
    main()
