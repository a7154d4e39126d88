"""The LMC-TS paper's linear experiments (Section 5.1): wall time and final cumulative regret.

Both linear settings (a new arm set every round, ``LinearBandit-v0``; one fixed arm
set, ``LinearBanditFixed-v0``): d = 20, 50 arms, T = 10,000 rounds, all seeds as one
batch through ``gym.make_vec``. Every agent uses its library defaults (LMC-TS:
K = 100 inner steps). Prints a Markdown table: wall time of ``learn`` (env included) with
the compiled kernels on and with ``BANDIT_GYM_KERNELS=0`` (plain torch, envs included),
the env's share (the same rounds with a fixed action), and the final cumulative regret
(mean +- standard error over the seeds) of both runs.

The last row of each setting (``--reference``, on by default) runs the plain
single-seed numpy LinUCB of ``benchmarks/numpy_linucb.py`` once per seed, one seed
after another: a yardstick measured on the same machine at the same time. ``--repeats N``
reports the fastest of N runs and, in brackets, every run's time in order (the runs are
deterministic, so only the time varies; on a shared VM by +-30%, at times more).

Torch runs with its default intra-op threads (``--threads`` sets them, for comparison).
``--busy`` keeps one core busy with a second process during the whole measurement (what a
user's other work does to the library's defaults).

    python benchmarks/linear_paper.py                      # the paper's sizes
    python benchmarks/linear_paper.py --busy --agents LMCTS --kernels on
    python benchmarks/linear_paper.py --rounds 2000 --seeds 4 --agents LMCTS LinTS
    python benchmarks/linear_paper.py --device cuda --seeds 1000 --no-reference
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LMCTS, EpsGreedy, LinTS, LinUCB, UniformRandom

try:
    from _report import kernels
    from numpy_linucb import run as numpy_linucb  # run as a script: benchmarks/ is on sys.path
except ImportError:  # imported as benchmarks.linear_paper
    from benchmarks._report import kernels
    from benchmarks.numpy_linucb import run as numpy_linucb

AGENTS = {"LMCTS": LMCTS, "LinTS": LinTS, "LinUCB": LinUCB, "EpsGreedy": EpsGreedy, "UniformRandom": UniformRandom}
SETTINGS = {"changing": "LinearBandit-v0", "fixed": "LinearBanditFixed-v0"}


def make_env(setting: str, rounds: int, seeds: int, device: str = "cpu") -> gym.vector.VectorEnv:
    return gym.make_vec(SETTINGS[setting], num_envs=seeds, vectorization_mode="vector_entry_point",
                        device=device, horizon=rounds)


def run_agent(name: str, setting: str, rounds: int, seeds: int, seed: int = 0, device: str = "cpu",
              **kwargs) -> tuple[float, np.ndarray]:
    """Play ``rounds`` rounds of ``seeds`` replicas; return (wall seconds, final cumulative regret ``(seeds,)``)."""
    env = make_env(setting, rounds, seeds, device)
    agent = AGENTS[name](env, seed=seed, device=device, **kwargs)
    start = time.perf_counter()
    agent.learn(env, total_timesteps=rounds)
    regret = agent.history["regret"]  # a CPU array: the device's work is done when it exists
    wall = time.perf_counter() - start
    return wall, regret.sum(axis=0)


def env_seconds(setting: str, rounds: int, seeds: int, device: str = "cpu") -> float:
    """Time of the env alone: ``rounds`` steps with action 0 everywhere."""
    env = make_env(setting, rounds, seeds, device)
    obs, _ = env.reset(seed=0)
    actions = torch.zeros(seeds, dtype=torch.int64, device=device) if isinstance(obs, torch.Tensor) else \
        np.zeros(seeds, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(rounds):
        _, reward, *_ = env.step(actions)
    torch.as_tensor(reward).cpu()  # waits for the device
    return time.perf_counter() - start


def reference_seconds(setting: str, rounds: int, seeds: int) -> tuple[float, np.ndarray]:
    """The plain numpy LinUCB, one seed after another: (total wall seconds, regret per seed)."""
    start = time.perf_counter()
    regret = [numpy_linucb(seed, rounds, changing_arms=setting == "changing") for seed in range(seeds)]
    return time.perf_counter() - start, np.array(regret)


def timed_runs(repeats: int, measure, *args):
    """Run ``measure(*args) -> (seconds, *rest)`` ``repeats`` times: every run's seconds, and the last run's rest."""
    results = [measure(*args) for _ in range(repeats)]
    return [r[0] for r in results], *results[-1][1:]


def times_cell(times: list[float]) -> str:
    """The fastest time, and every run's in order when there are several: ``1.3 (1.5, 1.3, 1.4)``."""
    fastest = f"{min(times):.1f}"
    return fastest if len(times) == 1 else f"{fastest} ({', '.join(f'{t:.1f}' for t in times)})"


@contextlib.contextmanager
def busy_core(busy: bool):
    """A second process spinning on one core for the duration of the block (if ``busy``)."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        yield
    finally:
        if process is not None:
            process.kill()
            process.wait()


WITHOUT = ["normal", "linear_langevin", "linear_scores", "add_observation"]  # the kernels --without takes


def without_kernels(names: list[str]) -> None:
    """Replace the named agent kernels by their torch functions (the other kernels stay on): how each
    kernel's gain in ``docs/agents.md`` is measured. The replacement sets ``BANDIT_GYM_KERNELS=0``
    around each call (about 5 us a call, included in the time)."""
    from agents import _kernels
    from agents.chains.langevin import langevin_steps
    from agents.models import reward
    from bandit_gym import rng

    def linear_chain(gram, moment, theta, step_size, inverse_temperature, noise):
        model = reward.LinearModel.__new__(reward.LinearModel)  # the statistics alone: all LinearModel.gradient reads
        model.gram, model.moment = gram, moment
        return langevin_steps(model, theta, step_size, inverse_temperature, noise)

    torch_functions = {"normal": rng.normal, "linear_langevin": linear_chain, "linear_scores": reward.linear_scores,
                       "add_observation": reward.add_observation}
    for name in names:
        def plain(*args, _function=torch_functions[name]):
            with kernels(False):
                return _function(*args)

        # the agents draw their normals through bandit_gym.rng.approx_normal (its kernel decides there)
        module, attribute = (rng, "approx_normal") if name == "normal" else (_kernels, name)
        if not callable(getattr(module, attribute, None)):  # a renamed kernel would otherwise be timed as "on"
            raise ValueError(f"--without {name}: {module.__name__} has no function {attribute!r}")
        setattr(module, attribute, plain)


def mean_se(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return float(values.mean()), float(se)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds T (default 10000)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds, run as one batch (default 10)")
    parser.add_argument("--agents", nargs="+", default=["LMCTS", "LinTS", "LinUCB", "EpsGreedy"],
                        choices=sorted(AGENTS))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--kernels", choices=["both", "on", "off"], default="both",
                        help="time the agents with the compiled kernels on, off, or both (default)")
    parser.add_argument("--without", nargs="+", default=[], metavar="KERNEL", choices=WITHOUT,
                        help="run these agent kernels as their torch functions (to measure each kernel's gain)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--busy", action="store_true", help="keep one core busy with a second process")
    parser.add_argument("--device", default="cpu", help="torch device of the envs and agents (default cpu)")
    parser.add_argument("--repeats", type=int, default=1, help="report the fastest of this many runs (default 1)")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="skip the plain numpy single-seed LinUCB rows")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    without_kernels(args.without)
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[args.kernels]

    print(f"T = {args.rounds} rounds, {args.seeds} seeds as one batch, d = 20, 50 arms, "
          f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} thread(s)"
          f"{', one core kept busy by another process' if args.busy else ''}"
          f"{', agent kernels replaced by torch: ' + ' '.join(args.without) if args.without else ''}, "
          f"fastest of {args.repeats} run(s), every run's time in brackets\n")
    print("| setting | agent | kernels on (s) | kernels off (s) | env alone (s) | regret, kernels on | "
          "regret, kernels off |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with busy_core(args.busy):
        for setting in args.settings:
            with kernels(True):
                (env_times,) = timed_runs(args.repeats, lambda *a: (env_seconds(*a),), setting, args.rounds,
                                          args.seeds, args.device)
            env_time = f"{min(env_times):.1f}"
            for name in args.agents:
                cells = {True: ("-", "-"), False: ("-", "-")}
                for on in modes:
                    with kernels(on):
                        times, regret = timed_runs(args.repeats, run_agent, name, setting, args.rounds,
                                                   args.seeds, 0, args.device)
                    mean, se = mean_se(regret)
                    cells[on] = (times_cell(times), f"{mean:.1f} +- {se:.1f}")
                print(f"| {setting} | {name} | {cells[True][0]} | {cells[False][0]} | {env_time} | "
                      f"{cells[True][1]} | {cells[False][1]} |", flush=True)
            if args.reference:
                times, regret = timed_runs(args.repeats, reference_seconds, setting, args.rounds, args.seeds)
                mean, se = mean_se(regret)
                print(f"| {setting} | numpy LinUCB, one seed at a time (reference) | {times_cell(times)} | - | - | "
                      f"{mean:.1f} +- {se:.1f} | - |", flush=True)


if __name__ == "__main__":
    main()
