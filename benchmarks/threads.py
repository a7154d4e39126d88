"""The threading policy (bandit_gym/threads.py) against torch's default threads, idle and with a core busy.

LinUCB, LinTS and LMC-TS (linear model, its defaults) learn on LinearBandit-v0 and Shuttle-v0 (the
real UCI data, from an OpenML cache) at R = 1 (``gym.make``) and R = 10 (the native batched env), by default;
``--agents all`` takes every agent at its defaults (``LMCTS-glm`` and ``LMCTS-mlp`` are LMC-TS's other models),
``--envs`` adds ``ClassificationBandit-v0`` on scikit-learn's digits (d = 640) and, for the neural agents,
``QuadraticBandit-v0``. Each runs in
four conditions: torch's default intra-op threads (``BANDIT_GYM_THREADS=torch``, the library then
changes nothing) or the policy (its default, one thread), each idle and with a second process
spinning on one core. It prints rounds per second of ``learn`` (the fastest of ``--repeats`` runs)
and the ratios: policy / torch (the policy's gain) and idle / busy (what a busy core costs).

    python benchmarks/threads.py                         # 300 rounds, 2 repeats, both envs
    python benchmarks/threads.py --envs LinearBandit-v0 --rounds 100 --repeats 1
    python benchmarks/threads.py --agents all --envs ClassificationBandit-v0 --rounds 100  # every agent, digits
    python benchmarks/threads.py --agents neural --envs QuadraticBandit-v0 --rounds 100     # neural agents
    python benchmarks/threads.py --detours      # the kernels that dodge the pool, under the policy
    python benchmarks/threads.py --step         # a user's own env.step loop: threads and the policy's cost
    python benchmarks/threads.py --work         # 1 against 2 threads by a round's work (the policy's threshold)

``--detours`` times, per call, the ``agents/_kernels.py`` kernels whose gain was (mostly) not waiting
for torch's thread pool against their torch functions (``BANDIT_GYM_KERNELS=0``), both on one thread
(the policy), idle and with a core busy: whether each still earns the 1.5x it must earn; and the op-level
dodges of the rounds (``amax``, ``gather``, multiply-and-sum) against the plain torch op they replace.

Shuttle-v0 reads a copy of the OpenML cache (``--cache-dir``, default ``$BANDIT_GYM_TEST_OPENML_CACHE``
or ``../shared/datasets/openml_cache`` beside the clone; the source is only read: it is copied to a
temporary directory first). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.threads import ENV_VAR

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import cpu_model  # noqa: E402
from real_data import AGENTS as ALL_AGENTS  # noqa: E402

#: Row name -> (agent class, constructor keywords besides the env): real_data.py's rows at their defaults, without
#: the posterior samplers of issue 22 and uniform play.
AGENTS = {name: ALL_AGENTS[name] for name in (
    "LinUCB", "LinTS", "LMCTS", "EpsGreedy", "LMCTS-glm", "UCBGLM", "GLMTSL", "SGDTS",
    "LMCTS-mlp", "NeuralUCB", "NeuralTS", "NeuralLinUCB", "NeuralEpsGreedy")}
NEURAL = ["LMCTS-mlp", "NeuralUCB", "NeuralTS", "NeuralLinUCB", "NeuralEpsGreedy"]
ENVS = ["LinearBandit-v0", "Shuttle-v0", "ClassificationBandit-v0", "QuadraticBandit-v0"]
MODES = {"torch": "torch", "policy": None}  # the variable's value; None: unset (the policy's default)
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "openml_cache"


def make_env(env_id: str, replicas: int, rounds: int, cache: Path | None):
    kwargs = {"horizon": rounds + 1}
    if env_id == "Shuttle-v0":
        kwargs["cache_dir"] = str(cache)
    elif env_id == "ClassificationBandit-v0":  # scikit-learn's digits: 10 classes x 64 pixels, d = 640
        from sklearn.datasets import load_digits

        digits = load_digits()
        kwargs.update(X=digits.data, y=digits.target)
    if replicas == 1:
        return gym.make(env_id, **kwargs)
    return gym.make_vec(env_id, num_envs=replicas, vectorization_mode="vector_entry_point", **kwargs)


def rounds_per_second(env_id: str, agent: str, replicas: int, rounds: int, repeats: int, cache: Path | None) -> float:
    """Rounds per second of ``learn`` on a fresh env and agent, the fastest of ``repeats`` runs."""
    best = float("inf")
    for _ in range(repeats):
        env = make_env(env_id, replicas, rounds, cache)
        agent_class, agent_kwargs = AGENTS[agent]
        learner = agent_class(env, seed=0, device="cpu", **agent_kwargs)
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


def detours() -> None:
    """Microseconds per call of each pool-dodging kernel and of its torch function, on one thread."""
    from agents.models import reward as models
    from bandit_gym.threads import policy

    g = torch.Generator().manual_seed(0)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    cases = []  # (name, function): timed with BANDIT_GYM_KERNELS=0 (torch) and =1 (the kernel)
    dodges = []  # (name, plain torch, the dodge): op-level dodges outside _kernels.py
    for R, K, d in ((10, 50, 20), (160, 50, 20)):
        x, theta, v, row, r = normal(R, K, d), normal(R, d), torch.eye(d).expand(R, d, d).contiguous(), \
            normal(R, d), normal(R)
        cases += [(f"linear_scores ({R}, {K}, {d})", lambda x=x, theta=theta: models.linear_scores(x, theta)),
                  (f"add_observation ({R}, {d}, {d})", lambda v=v, row=row, r=r:
                   models.add_observation(v, row, row, r))]
    for R, K, d in ((10, 50, 20), (160, 50, 20)):
        values, x, actions = normal(R, K), normal(R, K, d), torch.randint(K, (R,), generator=g)
        v, row, rows = normal(R, d, d), normal(R, d), torch.arange(R)
        dodges += [(f"amax for max(dim=1) ({R}, {K})", lambda values=values: values.max(dim=1, keepdim=True).values,
                    lambda values=values: values.amax(dim=1, keepdim=True)),
                   (f"gather for indexing ({R}, {K}, {d})", lambda x=x, a=actions, rows=rows: x[rows, a],
                    lambda x=x, a=actions, d=d: x.gather(1, a[:, None, None].expand(-1, 1, d))[:, 0]),
                   (f"multiply-and-sum for bmm ({R}, {d}, {d})",
                    lambda v=v, row=row: torch.bmm(v, row[:, :, None])[:, :, 0],
                    lambda v=v, row=row: models.matvec(v, row))]

    def per_call(function, calls: int = 300) -> float:
        function()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                function()
            best = min(best, (time.perf_counter() - start) / calls)
        return best * 1e6

    times = {}
    for busy in (False, True):
        spinner = busy_core() if busy else None
        try:
            with policy(1):
                for name, function in cases:
                    for kernels in ("0", "1"):
                        os.environ["BANDIT_GYM_KERNELS"] = kernels
                        times[busy, name, kernels] = per_call(function)
                for name, plain, dodge in dodges:
                    times[busy, name, "0"], times[busy, name, "1"] = per_call(plain), per_call(dodge)
        finally:
            os.environ.pop("BANDIT_GYM_KERNELS", None)
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__}, one intra-op thread (the policy), "
          f"load average {os.getloadavg()[0]:.1f}; us per call, fastest of 3 x 300; gain = torch / detour")
    print("| kernel or dodge (shape) | idle, torch | idle, detour | idle gain | busy, torch | busy, detour | "
          "busy gain |")
    print("|---|---|---|---|---|---|---|")
    for name in [case[0] for case in cases + dodges]:
        row = [times[busy, name, k] for busy in (False, True) for k in ("0", "1")]
        print(f"| {name} | {row[0]:.1f} | {row[1]:.1f} | {row[0] / row[1]:.2f}x | {row[2]:.1f} | {row[3]:.1f} | "
              f"{row[2] / row[3]:.2f}x |", flush=True)


def step_cost() -> None:
    """A user's own ``gym.make("LinearBandit-v0")`` step loop: torch's threads against the policy, and the
    policy's bookkeeping (the decorated step against its undecorated body, both on one thread)."""
    from bandit_gym._base import BanditEnv

    env = gym.make("LinearBandit-v0", horizon=10**6).unwrapped
    env.reset(seed=0)
    body = BanditEnv.step.__wrapped__

    def per_step(step, steps: int = 4000) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for i in range(steps):
                step(i % env.n_arms)
            best = min(best, (time.perf_counter() - start) / steps)
        return best * 1e6

    user = torch.get_num_threads()
    set_mode("torch")
    with_torch = per_step(env.step)
    set_mode("policy")
    with_policy = per_step(env.step)
    torch.set_num_threads(1)  # the policy then changes nothing: what is left is its bookkeeping
    try:
        decorated, undecorated = per_step(env.step), per_step(lambda action: body(env, action))
    finally:
        torch.set_num_threads(user)
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}; "
          "us per LinearBandit-v0 step, fastest of 5 x 4,000")
    print(f"torch's {user} threads: {with_torch:.1f} us; the policy: {with_policy:.1f} us "
          f"({with_torch / with_policy:.2f}x faster); on one thread, the decorated step {decorated:.1f} us against "
          f"its undecorated body {undecorated:.1f} us ({decorated - undecorated:+.1f} us)")


def work_threads(rounds: int, repeats: int, replica_counts: list[int]) -> None:
    """Seconds per 1,000 rounds of ``learn(threads=1)`` and ``learn(threads=2)`` of LinUCB, LinTS and LMC-TS on
    LinearBandit-v0 (K = 50, d = 20) at each R, beside the round's work (``BanditAgent.round_work``) and what the
    policy's default chooses there (:data:`bandit_gym.threads.LARGE_WORK`): where 2 threads start to pay."""
    from bandit_gym import threads

    print(f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__}, load average "
          f"{os.getloadavg()[0]:.1f} at the start; {rounds} rounds, fastest of {repeats}; s per 1,000 rounds")
    print("| agent | R | round work (floats) | 1 thread | 2 threads | 1 / 2 threads | default chooses | load |")
    print("|---|---|---|---|---|---|---|---|")
    for replicas in replica_counts:
        for agent in ("LinUCB", "LinTS", "LMCTS"):
            seconds, work = {}, 0
            for n_threads in (1, 2):
                best = float("inf")
                for _ in range(repeats):
                    env = make_env("LinearBandit-v0", replicas, rounds, None)
                    agent_class, agent_kwargs = AGENTS[agent]
                    learner = agent_class(env, seed=0, device="cpu", **agent_kwargs)
                    learner.learn(total_timesteps=3, threads=n_threads)  # warm up
                    start = time.perf_counter()
                    learner.learn(total_timesteps=rounds, threads=n_threads)
                    best = min(best, time.perf_counter() - start)
                    work = learner.round_work()
                seconds[n_threads] = 1000 * best / rounds
            chosen = "torch's" if work >= threads.LARGE_WORK else "1"
            print(f"| {agent} | {replicas} | {work:,} | {seconds[1]:.3f} | {seconds[2]:.3f} | "
                  f"{seconds[1] / seconds[2]:.2f} | {chosen} | {os.getloadavg()[0]:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell; the fastest is printed")
    parser.add_argument("--envs", nargs="+", default=ENVS[:2], choices=ENVS,
                        help="QuadraticBandit-v0 runs the neural agents only (default: LinearBandit-v0 Shuttle-v0)")
    parser.add_argument("--agents", nargs="+", default=["LinUCB", "LinTS", "LMCTS"],
                        choices=[*AGENTS, "all", "neural"], help="names, or all / neural (default: LinUCB LinTS LMCTS)")
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("BANDIT_GYM_TEST_OPENML_CACHE", DEFAULT_CACHE)))
    parser.add_argument("--detours", action="store_true", help="time the pool-dodging kernels instead")
    parser.add_argument("--step", action="store_true", help="time a user's own env.step loop instead")
    parser.add_argument("--work", action="store_true", help="time 1 against 2 threads at --replicas (default "
                        "1 10 100 1000) instead")
    args = parser.parse_args()
    groups = {"all": list(AGENTS), "neural": NEURAL}
    args.agents = list(dict.fromkeys(a for name in args.agents for a in groups.get(name, [name])))
    if args.work:
        replicas = args.replicas if "--replicas" in sys.argv else [1, 10, 100, 1000]
        work_threads(args.rounds, args.repeats, replicas)
        return
    if args.detours or args.step:
        if args.detours:
            detours()
        else:
            step_cost()
        os.environ.pop(ENV_VAR, None)
        return
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
                    if env_id == "QuadraticBandit-v0" and agent not in NEURAL:
                        continue  # the linear models cannot learn it: the issue asks for the neural agents there
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
