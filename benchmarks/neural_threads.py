"""Neural agents with torch's default threads, idle and with a second process keeping one core busy.

NeuralTS and neural LMC-TS on ``QuadraticBandit-v0`` (R replicas as one batch, a 20-20-20 MLP,
10 steps on mini-batches of 32 rows per round), with the agents' kernels on (the MLP's products
through numpy, off torch's thread pool: ``agents/_kernels.py``) and off (``BANDIT_GYM_KERNELS=0``,
plain torch). The script never sets torch's threads: that is the point. It prints the wall time
of ``learn`` (fastest of ``--repeats``), the busy/idle ratio and the final regret.

    python benchmarks/neural_threads.py                       # R = 10, 200 rounds
    python benchmarks/neural_threads.py --kernels on --repeats 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import gymnasium as gym
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS
from agents.neural import NeuralTS


def run(name: str, rounds: int, replicas: int) -> tuple[float, float]:
    """Seconds of ``learn`` and the mean final regret of one agent."""
    env = gym.make_vec("QuadraticBandit-v0", num_envs=replicas, vectorization_mode="vector_entry_point",
                       device="cpu", horizon=rounds)
    common = {"batch_size": 32, "seed": 0, "device": "cpu", "model_kwargs": {"activation": "leaky_relu"}}
    if name == "NeuralTS":
        agent = NeuralTS(env, n_inner_steps=10, **common)  # the tuned defaults otherwise
    else:
        agent = LMCTS(env, model="mlp", n_inner_steps=10, **common)
    start = time.perf_counter()
    agent.learn(env)
    return time.perf_counter() - start, float(agent.history["regret"].sum(axis=0).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell; the fastest is printed")
    parser.add_argument("--kernels", choices=["on", "off", "both"], default="both")
    parser.add_argument("--agents", nargs="+", default=["NeuralTS", "LMCTS"], choices=["NeuralTS", "LMCTS"])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads (default), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print("| agent | kernels | idle (s) | busy (s) | busy / idle | regret |")
    print("|---|---|---|---|---|---|")
    for kernels in (["on", "off"] if args.kernels == "both" else [args.kernels]):
        os.environ["BANDIT_GYM_KERNELS"] = "1" if kernels == "on" else "0"
        for name in args.agents:
            run(name, 5, args.replicas)  # compile and warm up
            idle = min(run(name, args.rounds, args.replicas)[0] for _ in range(args.repeats))
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(0.5)
                busy, regret = min(run(name, args.rounds, args.replicas) for _ in range(args.repeats))
            finally:
                spinner.kill()
                spinner.wait()
            print(f"| {name} | {kernels} | {idle:.2f} | {busy:.2f} | {busy / idle:.2f} | {regret:.1f} |", flush=True)


if __name__ == "__main__":
    main()
