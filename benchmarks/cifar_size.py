"""The paper's Table 2 problem size: CIFAR10 as a bandit (10 arms, 30,720-dim one-hot-block features), timed.

Random data of CIFAR10's shape (each round one random unit-norm example of 3 x 32 x 32 = 3,072
values, in block j of arm j's 30,720 features; random 0/1 rewards), an MLP with one hidden layer of
width 100 (the paper's "two layers of width 100": p = 3,072,201 parameters), LMC-TS and NeuralTS,
1 seed and 5 seeds as one batch, the dense first layer (the definition) and the block-aware one
(``model_kwargs={"block_arms": 10}``, ``agents/models/blocks.py``). For each it times

* arm selection: ``predict`` on ``--selections`` arm sets, scaled to 1,000 (Table 2's "arm selection");
* full rounds, after ``--history`` stored rows of random arms (a history spread over the blocks, as
  in a long run): ``--rounds`` rounds of ``predict`` + ``update`` (``--steps`` Langevin or gradient
  steps on mini-batches of ``--batch`` rows each round), scaled to 1,000 rounds of 100 steps (Table 2's
  "total") as ``1,000 x (selection + 100 x (round - selection) / steps)``: an extrapolation, said so.

NeuralTS computes its widths with ``model.gradient_norms`` (no ``(R, K, p)`` per-arm gradient tensor).

    python benchmarks/cifar_size.py                      # the default sizes: a few minutes on 2 CPU cores
    python benchmarks/cifar_size.py --device cuda --selections 200 --rounds 50
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from agents import LMCTS
from agents.neural import NeuralTS

N_ARMS, BLOCK = 10, 3 * 32 * 32  # CIFAR10: 10 classes, 3,072 values per image
#: Table 2 of the paper (one V100, 1,000 rounds): seconds of arm selection and in total.
PAPER = {"LMCTS": (9.0, 662.7), "NeuralTS": (174.1, 776.0)}


def arm_sets(count: int, replicas: int, device: torch.device, seed: int = 0) -> list[torch.Tensor]:
    """``count`` random arm sets of CIFAR10's form, ``(R, K, K d)``: arm j holds the example in block j."""
    g = torch.Generator().manual_seed(seed)
    sets = []
    for _ in range(count):
        x = torch.randn(replicas, BLOCK, generator=g)
        x = x / x.norm(dim=1, keepdim=True)  # (R, d) unit norm, as the paper's preprocessing
        arms = torch.zeros(replicas, N_ARMS, N_ARMS, BLOCK)
        arms[:, torch.arange(N_ARMS), torch.arange(N_ARMS)] = x[:, None, :]
        sets.append(arms.reshape(replicas, N_ARMS, N_ARMS * BLOCK).to(device))
    return sets


def make(name: str, replicas: int, block: bool, steps: int, batch: int, device: str):
    kwargs = {"hidden": (100,), **({"block_arms": N_ARMS} if block else {})}
    common = dict(n_arms=N_ARMS, dim=N_ARMS * BLOCK, num_replicas=replicas, model="mlp", model_kwargs=kwargs,
                  batch_size=batch, seed=0, device=device)
    if name == "LMCTS":
        return LMCTS(n_inner_steps=steps, step_size=1e-3, inverse_temperature=1e4, **common)
    return NeuralTS(n_inner_steps=steps, step_size=1e-3, **common)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(name: str, replicas: int, block: bool, args) -> tuple[float, float]:
    """Seconds per selection and per full round (one of each first, untimed: warm-up)."""
    agent = make(name, replicas, block, args.steps, args.batch, args.device)
    sets = arm_sets(4, replicas, agent.device)
    rewards = torch.randint(2, (replicas,), generator=torch.Generator().manual_seed(1)).float()
    g = torch.Generator().manual_seed(2)
    for i in range(args.history):  # a history of random arms (the steady state: rows spread over the blocks)
        arms = torch.randint(N_ARMS, (replicas,), generator=g)
        agent.model.add(sets[i % len(sets)][torch.arange(replicas), arms], rewards)
    for obs in sets[:2]:  # warm-up
        agent.update(obs, agent.predict(obs)[0], rewards)
    sync(agent.device)
    start = time.perf_counter()
    for i in range(args.selections):
        agent.predict(sets[i % len(sets)])
    sync(agent.device)
    selection = (time.perf_counter() - start) / args.selections
    start = time.perf_counter()
    for i in range(args.rounds):
        obs = sets[i % len(sets)]
        agent.update(obs, agent.predict(obs)[0], rewards)
    sync(agent.device)
    return selection, (time.perf_counter() - start) / args.rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--selections", type=int, default=10, help="timed arm selections (scaled to 1,000)")
    parser.add_argument("--rounds", type=int, default=3, help="timed full rounds (scaled to 1,000)")
    parser.add_argument("--steps", type=int, default=10, help="Langevin / gradient steps per round")
    parser.add_argument("--batch", type=int, default=64, help="mini-batch rows per step")
    parser.add_argument("--history", type=int, default=300, help="random rows stored before the timing")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 5], help="replicas per batch")
    parser.add_argument("--agents", nargs="+", default=["LMCTS", "NeuralTS"], choices=["LMCTS", "NeuralTS"])
    parser.add_argument("--layers", nargs="+", default=["dense", "block"], choices=["dense", "block"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} threads, load average "
          f"{os.getloadavg()[0]:.1f}; {args.selections} selections and {args.rounds} rounds of {args.steps} steps "
          f"(mini-batch {args.batch}) timed per row, after {args.history} stored rows and 2 untimed rounds")
    print(f"| agent | seeds | first layer | 1,000 selections, s | one round of {args.steps} steps, s | 1,000 rounds of "
          "100 steps, s (extrapolated) | paper (V100, 1 seed): selection / total, s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.agents:
        for replicas in args.seeds:
            for layer in args.layers:
                selection, round_time = measure(name, replicas, layer == "block", args)
                per_step = max(round_time - selection, 0.0) / args.steps
                total = 1000 * (selection + 100 * per_step)
                paper = PAPER[name.rstrip("*")]
                print(f"| {name} | {replicas} | {layer} | {selection * 1e3:.1f} | {round_time:.2f} | {total:.0f} | "
                      f"{paper[0]} / {paper[1]} |", flush=True)


if __name__ == "__main__":
    main()
