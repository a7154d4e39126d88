"""Env throughput: a single env as Stable-Baselines3 steps it, and the native batched env against its draws.

Prints, with torch's default thread settings (nothing global is changed):

* single envs (``gym.make``, with the wrappers it adds, random Python-int actions, ``reset`` at the end of an
  episode): steps per second of LinearBandit-v0, LinearBanditFixed-v0 and CartPole-v1, made and stepped the same
  way in the same run, and each bandit's ratio to CartPole-v1 (issue 21's target: at least 0.25);
* the native batched LinearBandit-v0 for R replicas: replica-steps per second, the same with a
  SyncVectorEnv of single envs, and the step's cost against the floor, the cost of drawing the
  round's arm features with the env's own generator (``step/draw``; target <= 2 at R = 1,024).

Each figure is the best of ``--repeats`` timings (the machine is shared); the header names the CPU model and the
load average at the start, and each single-env row the load average after it. ``--busy`` keeps one core
busy with a second process (``while True: pass``) during the measurements; ``--kernels both`` prints
every row with the compiled kernels on and off (``BANDIT_GYM_KERNELS``).

    python benchmarks/env_throughput.py [--busy] [--kernels both] [--device cpu] [--seconds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import gymnasium as gym
import numpy as np
import torch

import bandit_gym
from bandit_gym import synthetic
from bandit_gym.rng import Stream
from bandit_gym.threads import policy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import cpu_model  # noqa: E402

ENV_ID = "LinearBandit-v0"


def best_seconds_per_call(fn: Callable[[], object], seconds: float, repeats: int, clock=time.perf_counter) -> float:
    """Best over ``repeats`` timings of the mean seconds per call of ``fn`` (each timing at least ``seconds``)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, clock()
        while (elapsed := clock() - start) < seconds or calls < 3:
            fn()
            calls += 1
        best = min(best, elapsed / calls)
    return best


def single_env_steps_per_second(env_id: str, seconds: float, repeats: int, clock=time.perf_counter) -> float:
    env = gym.make(env_id)
    env.reset(seed=0)
    actions = iter(np.random.default_rng(0).integers(0, env.action_space.n, size=10**7).tolist())  # Python ints

    def step_100() -> None:
        for _ in range(100):
            _, _, terminated, truncated, _ = env.step(next(actions))
            if terminated or truncated:
                env.reset()

    return 100 / best_seconds_per_call(step_100, seconds, repeats, clock)


def load() -> str:
    """The 1-minute load average (the number of runnable processes), or "n/a"."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):
        return "n/a"


def batched_row(num: int, device: torch.device, seconds: float, repeats: int, sync: bool) -> str:
    venv = gym.make_vec(ENV_ID, num_envs=num, vectorization_mode="vector_entry_point", device=device)
    venv.reset(seed=0)
    actions = np.zeros(num, dtype=np.int64) if device.type == "cpu" else torch.zeros(num, dtype=torch.int64,
                                                                                       device=device)
    wait = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)  # time the work, not its launch
    native = best_seconds_per_call(lambda: (venv.step(actions), wait()), seconds, repeats)
    sync_text = "-"
    if sync:
        sync_env = gym.make_vec(ENV_ID, num_envs=num, vectorization_mode="sync")
        sync_env.reset(seed=0)
        sync_step = best_seconds_per_call(lambda: sync_env.step(np.zeros(num, dtype=np.int64)), seconds, repeats)
        sync_text = f"{num / sync_step:,.0f}"
    # The floor: the env's own draw of a chunk of arm sets (one generator call per chunk), per round.
    sim = venv.unwrapped.sim
    keys, shape, count = sim.keys, (sim.draw_rounds, sim.n_arms, sim.dim), sim.counters_per_chunk
    counter = iter(range(0, 10**9, count))
    with policy():  # torch's threads as in the env's step (bandit_gym/threads.py)
        draw = best_seconds_per_call(
            lambda: (synthetic._unit_normal_counters(keys, Stream.CONTEXT, next(counter), shape, count), wait()),
            seconds, repeats) / sim.chunk_rounds
    return (f"{num:>6} {num / native:>15,.0f} {sync_text:>13} {draw * 1e3:>9.3f} {native * 1e3:>8.3f} "
            f"{native / draw:>9.2f}")


@contextlib.contextmanager
def busy_core(enabled: bool) -> Iterator[None]:
    """A second process spinning on one core while the block runs (killed after)."""
    if not enabled:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        spinner.kill()
        spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum length of one timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings per figure; the best is printed")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--busy", action="store_true", help="keep one core busy with a second process")
    parser.add_argument("--kernels", choices=["on", "off", "both"], default="on")
    parser.add_argument("--no-sync", action="store_true", help="skip the SyncVectorEnv column")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"bandit_gym {bandit_gym.__version__}, torch {torch.__version__}, torch threads {torch.get_num_threads()} "
          f"(default), {cpu_model()}, {os.cpu_count()} CPUs, load average {load()}, device {device}, "
          f"{'one core busy' if args.busy else 'no extra load of ours'}, best of {args.repeats}")
    settings = {"on": ["1"], "off": ["0"], "both": ["1", "0"]}[args.kernels]
    with busy_core(args.busy):
        for setting in settings:
            os.environ["BANDIT_GYM_KERNELS"] = setting
            print(f"\nkernels {'on' if setting == '1' else 'off'}")
            print(f"  {'single env (gym.make)':<29} {'steps/s':>10} {'per CPU-s':>10} {'/CartPole':>10} {'load':>5}"
                  f"   (per CPU-second: this process's CPU time; /CartPole: steps/s against CartPole-v1's)")
            rates = {}
            for env_id in ("CartPole-v1", ENV_ID, "LinearBanditFixed-v0"):
                rate = single_env_steps_per_second(env_id, args.seconds, args.repeats)
                cpu_rate = single_env_steps_per_second(env_id, args.seconds, args.repeats, time.process_time)
                rates[env_id] = rate
                print(f"  {env_id:<29} {rate:>10,.0f} {cpu_rate:>10,.0f} {rate / rates['CartPole-v1']:>10.3f} "
                      f"{load():>5}")
            print(f"{'R':>6} {'native steps/s':>15} {'sync steps/s':>13} {'draw ms':>9} {'step ms':>8} "
                  f"{'step/draw':>9}")
            for num in args.replicas:
                print(batched_row(num, device, args.seconds, args.repeats, sync=not args.no_sync and num <= 64))


if __name__ == "__main__":
    main()
