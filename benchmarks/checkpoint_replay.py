"""What continuing a cell from its checkpoint costs: the env's replay of the recorded rounds against playing them.

A checkpoint (``bandit_experiments/checkpoint.py``) holds the agent's state and the arms played, never the env: on
resume the env is reset with the agent's seeds and every recorded round is stepped again with the recorded arms
(and its regret checked against the recorded one). This script plays ``--rounds`` rounds of ``--agent`` on
``--env`` at ``--replicas`` replicas through the agent's round loop as the experiment runner does (``agent.rounds``
with ``checked=True, timed=True`` under the library's thread policy, each round's arms copied to the host), writes
the checkpoint of those rounds (``Checkpoint.save``), then restores a fresh agent and env from it
(``Checkpoint.load``: the replay). One row per repeat: ``play_s`` (the rounds played), ``replay_s`` (the same
rounds replayed), ``save_s`` (the checkpoint written), ``state_mb`` (its file), ``ratio`` (replay / play) and
``load`` (the one-minute load average before the row). A first play, save and replay of ``--warmup`` rounds,
not recorded, compiles the kernels (numba) first.

    python benchmarks/checkpoint_replay.py --record benchmarks/results/checkpoint_replay.json

Written into ``docs/reproducing.md`` by ``docs/gen_numbers.py`` (record ``checkpoint_replay``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinTS, LinUCB
from bandit_experiments.checkpoint import Checkpoint, Progress
from bandit_gym.threads import policy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Record  # noqa: E402

AGENTS = {"LinUCB": LinUCB, "LinTS": LinTS}


def make_env(env_id: str, rounds: int, replicas: int) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=replicas, vectorization_mode="vector_entry_point", horizon=rounds,
                        max_episode_steps=rounds)


@policy()  # as the runner's play_rounds: the whole loop on the library's torch threads
def play(agent, env, rounds: int) -> tuple[Progress, float]:
    """``rounds`` rounds as the runner plays a checkpointed cell; the progress and the wall seconds."""
    done = Progress()
    start = time.perf_counter()
    for round_ in agent.rounds(env, rounds, checked=True, timed=True):
        done.select_s += round_.select_s
        done.update_s += round_.update_s
        done.actions.append(round_.actions.cpu().numpy().astype(np.int64))
        done.regret.append(round_.info["regret"])
    return done, time.perf_counter() - start


def measure(env_id: str, agent_name: str, rounds: int, replicas: int, seed: int = 0) -> dict:
    """One play, save and replay; the row's figures (a replay that does not match is an error)."""
    env = make_env(env_id, rounds, replicas)
    agent = AGENTS[agent_name](env, seed=seed)
    progress, play_s = play(agent, env, rounds)
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = Checkpoint(Path(folder) / "batch.pt", {"benchmark": "checkpoint_replay"})
        start = time.perf_counter()
        checkpoint.save(agent, progress)
        save_s = time.perf_counter() - start
        state_mb = checkpoint.path.stat().st_size / 1e6
        fresh_env = make_env(env_id, rounds, replicas)
        fresh = AGENTS[agent_name](fresh_env, seed=seed)
        start = time.perf_counter()
        restored = checkpoint.load(fresh, fresh_env)
        replay_s = time.perf_counter() - start
    if restored is None or restored[0].rounds != rounds:
        raise RuntimeError(f"the checkpoint was not restored: {checkpoint.note}")
    return {"play_s": round(play_s, 4), "replay_s": round(replay_s, 4), "save_s": round(save_s, 4),
            "state_mb": round(state_mb, 4), "ratio": round(replay_s / play_s, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="LinearBandit-v0")
    parser.add_argument("--agent", default="LinUCB", choices=sorted(AGENTS))
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=200, help="rounds of a first, unrecorded measurement")
    parser.add_argument("--record", type=Path, default=None, help="the record to write (JSON); none: print only")
    args = parser.parse_args(argv)
    settings = {"env": args.env, "agent": args.agent, "rounds": args.rounds, "replicas": args.replicas,
                "repeats": args.repeats, "warmup": args.warmup}
    record = Record(args.record.stem if args.record else "checkpoint_replay", settings,
                    out_dir=args.record.parent if args.record else None,
                    argv=sys.argv if argv is None else ["checkpoint_replay.py", *argv])
    print("| env | agent | replicas | rounds | repeat | play (s) | replay (s) | replay / play | save (s) | state (MB) "
          "| load |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    if args.warmup:
        measure(args.env, args.agent, args.warmup, args.replicas)
    for repeat in range(1, args.repeats + 1):
        load = round(os.getloadavg()[0], 2)
        row = {"env": args.env, "agent": args.agent, "replicas": args.replicas, "rounds": args.rounds,
               "repeat": repeat, **measure(args.env, args.agent, args.rounds, args.replicas), "load": load}
        record.row(**row)
        print(f"| {row['env']} | {row['agent']} | {row['replicas']} | {row['rounds']:,} | {repeat} | "
              f"{row['play_s']:.2f} | {row['replay_s']:.2f} | {row['ratio']:.2f} | {row['save_s']:.3f} | "
              f"{row['state_mb']:.2f} | {load:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
