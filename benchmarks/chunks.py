"""Rounds in chunks: LinUCB's ``learn`` on LinearBandit-v0, the env stepped against its rounds drawn in chunks.

Prints seconds per 1,000 rounds of ``LinUCB(env, seed=0).learn(env, rounds)`` at each ``R`` (the single env
``gym.make`` makes at R = 1, the native batched env above), two ways in the same run, interleaved (steps, chunks,
steps, chunks, ...): ``steps``, the env inside a plain ``gym.Wrapper`` (which hides ``next_rounds``, so the loop
calls ``env.step``), and ``chunks``, the env as made (the loop draws ``next_rounds`` chunks:
``agents.loop.rounds.ChunkSteps``). ``steps/chunks`` is the ratio of the two, the best of ``--repeats`` timings each
(the machine may be shared: the header names the CPU model and the load average at the start, each row the load
average after it). Both ways play the same numbers: the script checks that their regrets are equal.

    python benchmarks/chunks.py [--replicas 1 10] [--rounds 2000] [--repeats 5]

``--tie-shortcut`` times instead the speed device of ``agents.base.BanditAgent._argmax``
(``agents._kernels.unique_argmax``: no tie draws where no row has a tie) on and off, interleaved, in this one process:
``_argmax`` alone on a LinUCB round's scores, and LinUCB's whole ``learn`` (chunks); CPU seconds of this process
(``time.process_time``, less moved by other processes than the wall clock), best of ``--repeats``. Both ways play
the same numbers: the script checks that the actions and regrets are equal.

    python benchmarks/chunks.py --tie-shortcut [--replicas 1 10] [--rounds 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinUCB, _kernels
from bandit_gym.threads import policy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import cpu_model  # noqa: E402

ENV_ID = "LinearBandit-v0"


def make(replicas: int, stepped: bool) -> gym.Env | gym.vector.VectorEnv:
    """The env of ``replicas`` replicas; ``stepped``: inside a plain wrapper, so that the loop steps it."""
    if replicas == 1:
        env = gym.make(ENV_ID)
        return gym.Wrapper(env) if stepped else env
    env = gym.make_vec(ENV_ID, num_envs=replicas, vectorization_mode="vector_entry_point")
    return gym.vector.VectorWrapper(env) if stepped else env


def timed_learn(replicas: int, stepped: bool, rounds: int) -> tuple[float, np.ndarray]:
    """Seconds of one ``learn`` of ``rounds`` rounds, and its regret."""
    env = make(replicas, stepped)
    agent = LinUCB(env, seed=0)
    start = time.perf_counter()
    agent.learn(env, rounds)
    return time.perf_counter() - start, agent.history["regret"]


def time_tie_shortcut(replicas: int, rounds: int, repeats: int) -> None:
    """Print a row per part: CPU seconds with the device off and on, and their ratio (off / on)."""
    device = _kernels.unique_argmax
    agent = LinUCB(make(replicas, False), seed=0)
    agent.learn(20)
    scores = torch.randn(replicas, agent.n_arms, generator=torch.Generator().manual_seed(0))  # no ties
    best = {(part, on): float("inf") for part in ("_argmax", "learn") for on in (True, False)}
    played = {}
    try:
        for _ in range(repeats):
            for on in (False, True):
                _kernels.unique_argmax = device if on else (lambda values: None)  # off: every round draws its ties
                start = time.process_time()
                with policy():  # the threads of learn's rounds
                    for _ in range(rounds):
                        agent._argmax(scores)
                best["_argmax", on] = min(best["_argmax", on], time.process_time() - start)
                env = make(replicas, False)
                learner = LinUCB(env, seed=0)
                start = time.process_time()
                learner.learn(env, rounds)
                best["learn", on] = min(best["learn", on], time.process_time() - start)
                played[on] = (learner.history["action"], learner.history["regret"])
    finally:
        _kernels.unique_argmax = device
    if not all(np.array_equal(a, b) for a, b in zip(played[True], played[False], strict=True)):
        raise SystemExit(f"R = {replicas}: the tie shortcut on and off played different arms")
    for part in ("_argmax", "learn"):
        off, on = (1000 * best[part, o] / rounds for o in (False, True))
        print(f"| {replicas} | {part} | {off:.4f} | {on:.4f} | {off / on:.2f} | {os.getloadavg()[0]:.1f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tie-shortcut", action="store_true", help="time _argmax's tie shortcut on and off")
    args = parser.parse_args(argv)
    if args.tie_shortcut:
        print(f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
              f"{torch.__version__}, {torch.get_num_threads()} intra-op threads; LinUCB on {ENV_ID} (50 arms x dim "
              f"20), {args.rounds} rounds, best of {args.repeats}, CPU seconds per 1,000 rounds (or calls)")
        print("| R | part | device off | device on | off/on | load after |")
        print("|---|---|---|---|---|---|")
        for replicas in args.replicas:
            time_tie_shortcut(replicas, args.rounds, args.repeats)
        return
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; torch "
          f"{torch.__version__}, {torch.get_num_threads()} intra-op threads; LinUCB learn on {ENV_ID} (50 arms x dim "
          f"20), {args.rounds} rounds, best of {args.repeats}, seconds per 1,000 rounds")
    print("| R | steps | chunks | steps/chunks | load after |")
    print("|---|---|---|---|---|")
    for replicas in args.replicas:
        best = {True: float("inf"), False: float("inf")}
        regrets = {}
        timed_learn(replicas, True, 50), timed_learn(replicas, False, 50)  # warm up (compiled kernels, caches)
        for _ in range(args.repeats):
            for stepped in (True, False):
                seconds, regrets[stepped] = timed_learn(replicas, stepped, args.rounds)
                best[stepped] = min(best[stepped], seconds)
        if not np.array_equal(regrets[True], regrets[False]):
            raise SystemExit(f"R = {replicas}: steps and chunks played different regrets")
        steps, chunks = (1000 * best[s] / args.rounds for s in (True, False))
        print(f"| {replicas} | {steps:.4f} | {chunks:.4f} | {steps / chunks:.2f} | {os.getloadavg()[0]:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
