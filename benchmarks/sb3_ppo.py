"""SB3's PPO with the per-arm policy, plain PPO and LinTS on one LinearBandit-v0 run each.

For each seed, one run of LinearBandit-v0 (50 arms, d = 20, a new arm set every round,
one theta* for the whole run): every agent plays ``--steps`` rounds while learning, then
``--eval`` more rounds of the same run. Printed per agent (mean +- s.e. over seeds):

- total regret over the learning rounds (what learning cost),
- per-round regret over the last 2,000 learning rounds,
- per-round regret over the ``--eval`` rounds after learning: PPO plays its greedy arm
  (``deterministic=True``) and no longer learns; LinTS keeps playing and learning as it does,
- wall time of the learning rounds (LinTS: its whole run, scaled to the learning rounds),

and the per-round regret of uniform random play on the same rounds. Lower regret is better.

    python benchmarks/sb3_ppo.py [--steps 20000] [--eval 2000] [--seeds 3] [--threads 1] [--out FILE]

``--threads`` sets torch's thread count for this script (SB3's small networks run faster on
one thread, most of all when other processes share the CPU); the library never sets it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from _report import GrowingTable
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinTS
from bandit_gym.sb3 import PerArmActorCriticPolicy
from bandit_gym.wrappers import OneStepEpisodes

ENV_ID = "LinearBandit-v0"
LAST = 2_000  # the learning rounds whose per-round regret is reported


class _RegretLog(BaseCallback):
    """Keeps the regret of every round PPO plays while it learns (from the env's info)."""

    def __init__(self) -> None:
        super().__init__()
        self.regret: list[float] = []

    def _on_step(self) -> bool:
        self.regret.extend(info["regret"] for info in self.locals["infos"])
        return True


def _horizon(steps: int, eval_rounds: int) -> int:
    """One run for everything: PPO plays whole rollouts (up to n_steps = 2,048 rounds past ``steps``)."""
    return steps + eval_rounds + 4_096


def run_ppo(policy, seed: int, steps: int, eval_rounds: int) -> dict[str, float]:
    horizon = _horizon(steps, eval_rounds)  # max_episode_steps: the spec's TimeLimit must not cut the run
    env = OneStepEpisodes(gym.make(ENV_ID, horizon=horizon, max_episode_steps=horizon))
    model = PPO(policy, env, seed=seed, device="cpu")  # SB3's default PPO settings
    log = _RegretLog()
    start = time.perf_counter()
    model.learn(steps, callback=log)
    seconds = time.perf_counter() - start
    learning = np.asarray(log.regret[:steps])
    assert len(log.regret) + eval_rounds < horizon, "the evaluation must stay in the same run"
    obs, info = env.reset()  # the next round of the same run
    greedy, uniform = [], []
    for _ in range(eval_rounds):
        action, _ = model.predict(obs, deterministic=True)
        uniform.append(info["expected_rewards"].max() - info["expected_rewards"].mean())
        _, _, _, _, info = env.step(int(action))
        greedy.append(info["regret"])
        obs, info = env.reset()
    return {"total": learning.sum(), "last": learning[-LAST:].mean(), "after": np.mean(greedy),
            "uniform": np.mean(uniform), "seconds": seconds}


def run_lints(seed: int, steps: int, eval_rounds: int) -> dict[str, float]:
    horizon = _horizon(steps, eval_rounds)
    env = gym.make(ENV_ID, horizon=horizon, max_episode_steps=horizon)
    agent = LinTS(env, seed=seed, device="cpu")
    start = time.perf_counter()
    agent.learn(env, total_timesteps=steps + eval_rounds)  # one run; learn() resets at its start
    seconds = time.perf_counter() - start
    regret = np.asarray(agent.history["regret"], dtype=np.float64)
    return {"total": regret[:steps].sum(), "last": regret[steps - LAST:steps].mean(), "after": regret[steps:].mean(),
            "uniform": np.nan, "seconds": seconds * steps / (steps + eval_rounds)}


def _mean_se(values: list[float], fmt: str) -> str:
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():{fmt}} +- {se:{fmt}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000, help="learning rounds (the SB3 budget)")
    parser.add_argument("--eval", type=int, default=2_000, help="rounds played after learning")
    parser.add_argument("--seeds", type=int, default=3, help="runs per agent (seeds 0, 1, ...)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for this script")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    if args.steps <= LAST:
        parser.error(f"--steps must be > {LAST}, got {args.steps}")
    torch.set_num_threads(args.threads)

    agents = {
        "PPO, per-arm policy": lambda s: run_ppo(PerArmActorCriticPolicy, s, args.steps, args.eval),
        "PPO, MlpPolicy": lambda s: run_ppo("MlpPolicy", s, args.steps, args.eval),
        "LinTS": lambda s: run_lints(s, args.steps, args.eval),
    }
    table = GrowingTable([
        f"{ENV_ID}, {args.steps:,} learning rounds + {args.eval:,} after, {args.seeds} seeds "
        f"(mean +- s.e.), torch threads {args.threads}; lower regret is better",
        "",
        f"| agent | total regret, {args.steps:,} learning rounds | per-round regret, last {LAST:,} learning rounds "
        f"| per-round regret, {args.eval:,} rounds after | learning time (s) |",
        "|---|---|---|---|---|",
    ], args.out)
    uniform = []
    for name, run in agents.items():
        results = [run(seed) for seed in range(args.seeds)]
        uniform += [r["uniform"] for r in results if not np.isnan(r["uniform"])]
        cells = [_mean_se([r[key] for r in results], fmt)
                 for key, fmt in (("total", ".1f"), ("last", ".4f"), ("after", ".4f"), ("seconds", ".1f"))]
        table.row(f"| {name} | " + " | ".join(cells) + " |")
    mean_uniform = float(np.mean(uniform))
    table.row(f"| uniform random (expected) | {mean_uniform * args.steps:.1f} | {mean_uniform:.4f} "
              f"| {mean_uniform:.4f} | - |")


if __name__ == "__main__":
    main()
