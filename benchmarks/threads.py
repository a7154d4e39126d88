"""The threading policy (bandit_gym/threads.py) against torch's default threads, idle and with a core busy.

LinUCB, LinTS and LMC-TS (linear model, its defaults) learn on LinearBandit-v0 and Shuttle-v0 (the
real UCI data, from an OpenML cache) at R = 1 (``gym.make``) and R = 10 (the native batched env), in
four conditions: torch's default intra-op threads (``BANDIT_GYM_THREADS=torch``, the library then
changes nothing) or the policy (its default, one thread), each idle and with a second process
spinning on one core. It prints rounds per second of ``learn`` (the fastest of ``--repeats`` runs)
and the ratios: policy / torch (the policy's gain) and idle / busy (what a busy core costs).

    python benchmarks/threads.py                         # 300 rounds, 2 repeats, both envs
    python benchmarks/threads.py --envs LinearBandit-v0 --rounds 100 --repeats 1

Shuttle-v0 reads a copy of the OpenML cache (``--cache-dir``, default ``$BANDIT_GYM_TEST_OPENML_CACHE``
or ``../shared/datasets/openml_cache`` beside the clone; the source is only read: it is copied to a
temporary directory first). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, LinTS, LinUCB
from bandit_gym.threads import ENV_VAR

AGENTS = {"LinUCB": LinUCB, "LinTS": LinTS, "LMCTS": LMCTS}
MODES = {"torch": "torch", "policy": None}  # the variable's value; None: unset (the policy's default)
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "openml_cache"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_env(env_id: str, replicas: int, rounds: int, cache: Path | None):
    kwargs = {"horizon": rounds + 1}
    if env_id != "LinearBandit-v0":
        kwargs["cache_dir"] = str(cache)
    if replicas == 1:
        return gym.make(env_id, **kwargs)
    return gym.make_vec(env_id, num_envs=replicas, vectorization_mode="vector_entry_point", **kwargs)


def rounds_per_second(env_id: str, agent: str, replicas: int, rounds: int, repeats: int, cache: Path | None) -> float:
    """Rounds per second of ``learn`` on a fresh env and agent, the fastest of ``repeats`` runs."""
    best = float("inf")
    for _ in range(repeats):
        env = make_env(env_id, replicas, rounds, cache)
        learner = AGENTS[agent](env, seed=0, device="cpu")
        start = time.perf_counter()
        learner.learn(total_timesteps=rounds)
        best = min(best, time.perf_counter() - start)
        env.close()
    return rounds / best


def set_mode(mode: str) -> None:
    value = MODES[mode]
    if value is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = value


def busy_core():
    """A second process spinning on one core (killed by the caller)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)
    return spinner


def copied_cache(source: Path) -> Path:
    if not (source / "org").is_dir():
        raise SystemExit(f"no OpenML cache at {source}: give --cache-dir (or --envs LinearBandit-v0)")
    target = Path(tempfile.mkdtemp(prefix="bandit_gym_threads_")) / "openml_cache"
    shutil.copytree(source, target)
    for path in target.rglob("*"):  # the shared source is read-only; the copy must not be
        path.chmod(path.stat().st_mode | 0o200)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell; the fastest is printed")
    parser.add_argument("--envs", nargs="+", default=["LinearBandit-v0", "Shuttle-v0"],
                        choices=["LinearBandit-v0", "Shuttle-v0"])
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("BANDIT_GYM_TEST_OPENML_CACHE", DEFAULT_CACHE)))
    args = parser.parse_args()
    cache = copied_cache(args.cache_dir) if "Shuttle-v0" in args.envs else None
    user_threads = torch.get_num_threads()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__} (default {user_threads} intra-op "
          f"threads), load average {os.getloadavg()[0]:.1f} at the start; {args.rounds} rounds, fastest of "
          f"{args.repeats}; rounds per second (higher is faster)")
    print("| env | R | agent | idle, torch | idle, policy | busy, torch | busy, policy | policy/torch idle | "
          "policy/torch busy | idle/busy torch | idle/busy policy | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for env_id in args.envs:
            for replicas in args.replicas:
                for agent in args.agents:
                    rounds_per_second(env_id, agent, replicas, 5, 1, cache)  # compile and warm up
                    speed = {}
                    load = os.getloadavg()[0]
                    for busy in (False, True):
                        spinner = busy_core() if busy else None
                        try:
                            for mode in MODES:
                                set_mode(mode)
                                speed[busy, mode] = rounds_per_second(env_id, agent, replicas, args.rounds,
                                                                      args.repeats, cache)
                        finally:
                            if spinner is not None:
                                spinner.kill()
                                spinner.wait()
                    assert torch.get_num_threads() == user_threads  # the policy put the user's setting back
                    cells = [f"{speed[b, m]:,.0f}" for b in (False, True) for m in MODES]
                    ratios = [speed[b, "policy"] / speed[b, "torch"] for b in (False, True)]
                    ratios += [speed[False, m] / speed[True, m] for m in MODES]
                    print(f"| {env_id} | {replicas} | {agent} | {' | '.join(cells)} | "
                          f"{' | '.join(f'{r:.2f}' for r in ratios)} | {load:.1f} |", flush=True)
    finally:
        os.environ.pop(ENV_VAR, None)
        if cache is not None:
            shutil.rmtree(cache.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
