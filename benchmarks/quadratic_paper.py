"""The LMC-TS paper's quadratic bandit (Section 5.1, Figure 1(d)) with the neural agents: time and regret.

``QuadraticBandit-v0``: d = 20, 50 new arms every round, r = 10 (x . theta*)^2 + N(0, 1),
T = 10,000; all seeds as one batch. Every neural agent has the same training budget per round
(``--steps`` gradient or Langevin steps on mini-batches of ``--batch`` rows, every round) and
a 20-20-20 MLP. For each agent it prints the time of 1,000 rounds near round 1,000 and near the
last round (a flat per-round cost keeps them close), the total time of ``learn``, and the final
cumulative regret (mean +- standard error over the seeds).

Torch runs on ``--threads`` intra-op threads (default 1: on a shared CPU the tiny batched matrix
products wait for busy cores in torch's pool; the agents themselves never set threads).

    python benchmarks/quadratic_paper.py                          # the paper's sizes (long)
    python benchmarks/quadratic_paper.py --horizon 2000 --seeds 4 --agents LMCTS NeuralTS LinTS
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS
from agents.neural import NeuralEpsGreedy, NeuralLinUCB, NeuralTS, NeuralUCB

NEURAL = {"NeuralTS": NeuralTS, "NeuralUCB": NeuralUCB, "NeuralLinUCB": NeuralLinUCB,
          "NeuralEpsGreedy": NeuralEpsGreedy}
AGENT_NAMES = ["LMCTS", *NEURAL, "LinTS"]
#: Per-agent settings chosen by the grid in benchmarks/results/quadratic_paper.md (T = 1,500, 4 seeds).
TUNED = {
    "LMCTS": {"step_size": 0.03, "inverse_temperature": 1000.0, "model_kwargs": {"activation": "leaky_relu"}},
    "NeuralTS": {"step_size": 0.1, "exploration_scale": 1.0, "model_kwargs": {"activation": "leaky_relu"}},
    "NeuralUCB": {"step_size": 0.1, "exploration_scale": 1.0, "model_kwargs": {"activation": "leaky_relu"}},
    "NeuralLinUCB": {"step_size": 0.1, "exploration_scale": 1.0, "model_kwargs": {"activation": "leaky_relu"}},
    "NeuralEpsGreedy": {"step_size": 0.1, "exploration_scale": 0.3, "model_kwargs": {"activation": "leaky_relu"}},
}


def make_env(horizon: int, seeds: int) -> gym.vector.VectorEnv:
    return gym.make_vec("QuadraticBandit-v0", num_envs=seeds, vectorization_mode="vector_entry_point",
                        device="cpu", horizon=horizon)


def make_agent(name: str, env: gym.vector.VectorEnv, seed: int = 0, steps: int = 10, batch: int = 32,
               **overrides):
    """An agent of the benchmark: the tuned settings, ``steps`` steps on mini-batches of ``batch`` rows per round."""
    if name == "LinTS":
        return LinTS(env, seed=seed, device="cpu", **overrides)
    kwargs = {**TUNED[name], **overrides}
    if name == "LMCTS":
        return LMCTS(env, model="mlp", n_inner_steps=steps, batch_size=batch, seed=seed, device="cpu", **kwargs)
    return NEURAL[name](env, n_grad_steps=steps, batch_size=batch, seed=seed, device="cpu", **kwargs)


def run(name: str, horizon: int, seeds: int, steps: int, batch: int, **overrides) -> dict:
    """Play one agent; its round times, total time and final cumulative regret per seed."""
    env = make_env(horizon, seeds)
    agent = make_agent(name, env, steps=steps, batch=batch, **overrides)
    stamps = np.zeros(horizon + 1)
    start = time.perf_counter()

    def stamp(_agent, played: int) -> None:
        stamps[played] = time.perf_counter() - start

    agent.learn(env, callback=stamp)
    total = time.perf_counter() - start
    return {"stamps": stamps, "total": total, "regret": agent.history["regret"].sum(axis=0)}


def per_thousand(stamps: np.ndarray, end: int) -> float:
    """Seconds of the 1,000 rounds (or fewer, scaled to 1,000) that end at round ``end``."""
    width = min(1000, end // 2)
    return (stamps[end] - stamps[end - width]) * 1000 / width


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10, help="gradient / Langevin steps per round")
    parser.add_argument("--batch", type=int, default=32, help="mini-batch size")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--agents", nargs="+", default=AGENT_NAMES, choices=AGENT_NAMES)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    early = min(1000, args.horizon // 2) if args.horizon < 2000 else 1000
    print(f"QuadraticBandit-v0, T = {args.horizon}, {args.seeds} seeds as one batch, {args.steps} steps of "
          f"mini-batch {args.batch} per round, {args.threads} torch thread(s)\n")
    print(f"| agent | s / 1k rounds near {early} | s / 1k rounds near {args.horizon} | total s | regret mean +- s.e. |")
    print("|---|---|---|---|---|")
    for name in args.agents:
        result = run(name, args.horizon, args.seeds, args.steps, args.batch)
        regret = result["regret"]
        se = regret.std(ddof=1) / np.sqrt(len(regret)) if len(regret) > 1 else float("nan")
        print(f"| {name} | {per_thousand(result['stamps'], early):.1f} | "
              f"{per_thousand(result['stamps'], args.horizon):.1f} | {result['total']:.1f} | "
              f"{regret.mean():.1f} +- {se:.1f} |", flush=True)


if __name__ == "__main__":
    main()
