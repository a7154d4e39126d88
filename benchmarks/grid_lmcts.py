"""Grid search of LMC-TS's step size eta_0 and inverse temperature beta on the paper's linear settings.

For each setting (``changing``: ``LinearBandit-v0``; ``fixed``: ``LinearBanditFixed-v0``)
runs LMC-TS (linear model, ``eta_t = eta_0 / t``, K = 100) for every ``(eta_0, beta)``
and LinTS for every exploration scale ``c`` (``v = c sqrt(d log T)``), all seeds as
one batch, and prints a Markdown table of the final cumulative regret (mean +- s.e.)
with the ratio to LinTS at its library default. The table is also written to
``--out`` as it grows, so an interrupted run keeps what it finished.

    python benchmarks/grid_lmcts.py --settings changing --out benchmarks/results/grid_changing.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import GrowingTable  # noqa: E402
from linear_paper import SETTINGS, mean_se, run_agent  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--step-sizes", nargs="+", type=float, default=[0.1, 0.3, 0.9], help="eta_0 values")
    parser.add_argument("--inverse-temperatures", nargs="+", type=float, default=[3, 10, 30, 100, 300],
                        help="beta values")
    parser.add_argument("--lints-scales", nargs="+", type=float, default=[0.01, 0.02, 0.05, 0.1],
                        help="LinTS exploration scales c")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to write the table to")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    emit = GrowingTable([
        f"T = {args.rounds}, {args.seeds} seeds as one batch, d = 20, 50 arms; LMC-TS: linear model, "
        "eta_t = eta_0 / t, K = 100, lambda = 1. Regret: final cumulative regret, mean +- s.e. over seeds.",
        "",
        "| setting | agent | hyperparameters | regret | / LinTS default | wall (s) |",
        "|---|---|---|---:|---:|---:|",
    ], args.out).row
    for setting in args.settings:
        wall, regret = run_agent("LinTS", setting, args.rounds, args.seeds)
        reference, se = mean_se(regret)
        emit(f"| {setting} | LinTS | default | {reference:.1f} +- {se:.1f} | 1.00 | {wall:.1f} |")
        for c in args.lints_scales:
            wall, regret = run_agent("LinTS", setting, args.rounds, args.seeds, exploration_scale=c)
            mean, se = mean_se(regret)
            emit(f"| {setting} | LinTS | c={c:g} | {mean:.1f} +- {se:.1f} | {mean / reference:.2f} | {wall:.1f} |")
        for eta in args.step_sizes:
            for beta in args.inverse_temperatures:
                start = time.perf_counter()
                try:
                    wall, regret = run_agent("LMCTS", setting, args.rounds, args.seeds,
                                             step_size=eta, inverse_temperature=beta)
                except RuntimeError as error:  # DivergenceError: record it, go on
                    emit(f"| {setting} | LMCTS | eta_0={eta:g}, beta={beta:g} | diverged: {error} | | "
                         f"{time.perf_counter() - start:.1f} |")
                    continue
                mean, se = mean_se(regret)
                emit(f"| {setting} | LMCTS | eta_0={eta:g}, beta={beta:g} | {mean:.1f} +- {se:.1f} | "
                     f"{mean / reference:.2f} | {wall:.1f} |")


if __name__ == "__main__":
    main()
