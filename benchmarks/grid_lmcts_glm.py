"""Grid search of LMC-TS's glm model (eta_0, beta) on ``LogisticBandit-v0``, beside the GLM baselines.

All seeds as one batch (replicas = seeds 0..n-1), every agent at its library defaults
except the grid's two values; prints final cumulative regret (mean +- s.e.) and its
ratio to uniform random's. The table is also written to ``--out`` as it grows, so an
interrupted run keeps what it finished. A diverging chain is recorded, not fatal.

    python benchmarks/grid_lmcts_glm.py --out benchmarks/results/grid_glm.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import GrowingTable  # noqa: E402
from regret_sanity import final_regret  # noqa: E402

from agents import GLMTSL, LMCTS, SGDTS, UCBGLM, UniformRandom  # noqa: E402

ENV = "LogisticBandit-v0"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--step-sizes", nargs="+", type=float, default=[0.3, 0.5, 0.9], help="eta_0 values")
    parser.add_argument("--inverse-temperatures", nargs="+", type=float, default=[10, 30, 100], help="beta values")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to write the table to")
    args = parser.parse_args(argv)
    emit = GrowingTable([
        f"{ENV}, T = {args.rounds}, seeds 0..{args.seeds - 1} as one batch; LMC-TS: glm model, full batch, "
        "eta_t = eta_0 / t, K = 100, lambda = 1. Regret: final cumulative regret, mean +- s.e. over seeds.",
        "", "| agent | hyperparameters | regret | / random | wall (s) |", "|---|---|---:|---:|---:|",
    ], args.out).row

    def row(name: str, label: str, cls: type, reference: float | None, **kwargs) -> float:
        start = time.perf_counter()
        try:
            regret = final_regret(ENV, args.rounds, args.seeds, cls, **kwargs)
        except RuntimeError as error:  # DivergenceError
            emit(f"| {name} | {label} | diverged: {error} | | {time.perf_counter() - start:.1f} |")
            return float("nan")
        wall, mean = time.perf_counter() - start, float(regret.mean())
        se = float(regret.std(ddof=1) / np.sqrt(len(regret)))
        ratio = 1.0 if reference is None else mean / reference
        emit(f"| {name} | {label} | {mean:.1f} +- {se:.1f} | {ratio:.2f} | {wall:.1f} |")
        return mean

    random = row("UniformRandom", "", UniformRandom, None)
    for name, cls in (("UCBGLM", UCBGLM), ("GLMTSL", GLMTSL), ("SGDTS", SGDTS)):
        row(name, "default", cls, random)
    for eta in args.step_sizes:
        for beta in args.inverse_temperatures:
            row("LMCTS", f"eta_0={eta:g}, beta={beta:g}", LMCTS, random, model="glm", step_size=eta,
                inverse_temperature=beta, step_schedule="inverse_t")  # eta_0 / t, as recorded


if __name__ == "__main__":
    main()
