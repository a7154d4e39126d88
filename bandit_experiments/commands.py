"""The experiment verbs of the ``bandit-gym`` command line: ``run``, ``table``, ``plot`` and ``bench``.

    bandit-gym run CONFIG [--out DIR] [--seeds N] [--horizon T] [--env-kwargs MAPPING] [--device D]
                          [--backend local|ray] [--address ADDR] [--jobs N] [--threads N] [--quiet]
    bandit-gym table DIR
    bandit-gym plot DIR
    bandit-gym bench SUITE [--size small|full] [--out DIR] [--seeds N] [--horizon T] [--jobs N] [--list]

:func:`bandit_experiments.cli.build_parser` calls :func:`add_run`, :func:`add_table`, :func:`add_plot`
and :func:`add_bench`.
Errors follow the command line's style: a bad value is one line and exit status 2 (argparse), a
config or results problem one line and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from bandit_experiments.arguments import NO_PERMISSION, NO_SPACE, count


def _device(text: str) -> str:
    """``--device``, resolved by torch (whether CUDA is there): imported only when the option is given."""
    from bandit_gym.validation import resolve_device

    try:
        return str(resolve_device(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_run(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run an experiment config (configs/*.yaml) into a results directory",
        description="Run every agent of an experiment config: each agent's grid points x seeds as one batched agent "
        "on one batched env. Finished agents (cells) are written to the results directory at once and skipped "
        "when the same command runs again; a directory holding another config's results is refused. Prints the "
        "summary table and writes the plots at the end.")
    parser.add_argument("config", metavar="CONFIG", help="an experiment YAML file, e.g. configs/quickstart.yaml")
    parser.add_argument("--out", metavar="DIR", default=None, help="results directory (default results/<name>)")
    parser.add_argument("--seeds", type=count, default=None, help="seeds per grid point (default: the config's)")
    parser.add_argument("--horizon", type=count, default=None, help="rounds per run (default: the config's)")
    parser.add_argument("--env-kwargs", metavar="MAPPING", type=_env_kwargs, default=None,
                        help="keywords of the env merged over the config's env_kwargs, as a YAML mapping, e.g. "
                        "'{cache_dir: DIR, verify_checksums: false}' (use another --out for them)")
    parser.add_argument("--device", type=_device, default=None, help="cpu (default), cuda or auto")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local: this machine, --jobs processes; ray: one Ray task per cell (needs the ray extra)")
    parser.add_argument("--address", default=None,
                        help="Ray cluster address (default: RAY_ADDRESS, else a local Ray instance for the run)")
    parser.add_argument("--jobs", type=count, default=1, help="local backend: cells run in this many processes")
    parser.add_argument("--threads", type=count, default=None,
                        help="torch's intra-op threads of the rounds, here and in worker processes (default: 1); "
                        "1 on a CPU shared with other jobs (docs/agents.md, Threads)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they are off anyway off a terminal)")
    parser.set_defaults(run=_run_run, parser=parser, on_interrupt=_run_interrupted, on_os_error=_run_os_error)


def _run_interrupted(args: argparse.Namespace, text: str) -> str:
    """The line after Ctrl-C: what is kept, and how to go on (``text``: the interruption's own message)."""
    out = getattr(args, "results_dir", None)
    if out is None:  # stopped while reading or checking the config
        return f"{text}; nothing was started"
    parts = [text, f"finished cells are kept in {out}"]
    if "same command" not in text:
        parts.append("rerun the same command to continue")
    return "; ".join(parts)


def _run_os_error(args: argparse.Namespace, exc: OSError) -> str:
    """What to do when the results cannot be written (the error's reason and path come before it)."""
    out = getattr(args, "results_dir", None)
    kept = f" (finished cells are kept in {out})" if out is not None else ""
    if exc.errno in NO_PERMISSION:
        return f"give --out a directory you can write to{kept}"
    if exc.errno in NO_SPACE:
        return f"free some space there and rerun the same command to continue{kept}"
    return f"rerun the same command once that is fixed{kept}"


def _results_os_error(args: argparse.Namespace, exc: OSError) -> str:
    """``table`` and ``plot`` write into DIR: say so, and what to do when they cannot."""
    what = "summary.csv and summary.md" if args.command == "table" else "the plots"
    if exc.errno in NO_PERMISSION:
        return (f"`bandit-gym {args.command}` writes {what} into {args.directory}: run it on a copy you can write "
                f"to (cp -r {args.directory} COPY)")
    if exc.errno in NO_SPACE:
        return f"`bandit-gym {args.command}` writes {what} into {args.directory}: free some space there"
    return ""


def _env_kwargs(text: str) -> dict:
    from bandit_experiments.config import ConfigError, parse_env_kwargs

    try:
        return parse_env_kwargs(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _run_run(args: argparse.Namespace) -> int:
    from bandit_experiments.config import load_config

    if args.backend == "local" and args.address is not None:
        args.parser.error("argument --address: only with --backend ray")
    if args.backend == "ray" and args.jobs != 1:
        args.parser.error("argument --jobs: only with --backend local (Ray runs as many cells at once as it has CPUs)")
    if args.backend == "ray":
        # fails early, naming the extra, when Ray is missing; not imported here: the backend imports it itself,
        # after setting what holds a local Ray to 127.0.0.1 (bandit_experiments/ray_backend.py)
        if importlib.util.find_spec("ray") is None:
            raise ModuleNotFoundError("No module named 'ray'", name="ray")
    progress = not args.quiet and sys.stderr.isatty()
    if progress:
        try:
            import tqdm  # noqa: F401
        except ModuleNotFoundError:
            print('(no progress bars: tqdm is not installed; pip install "contextual-bandit-gym[experiments]")',
                  file=sys.stderr)
            progress = False
    if args.threads is not None:  # the user's choice for this process; spawned workers read the variables
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        os.environ["BANDIT_GYM_THREADS"] = str(args.threads)  # the rounds' threads (bandit_gym/threads.py)
    config = load_config(args.config, seeds=args.seeds, horizon=args.horizon, env_kwargs=args.env_kwargs)
    from bandit_experiments.runner import run_experiment  # torch and the agents: once the config is read

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    out = args.out if args.out is not None else os.path.join("results", config.name)
    args.results_dir = out  # named by the line after Ctrl-C or a write error
    cells = sum(len(spec.points()) for spec in config.agents)
    seeds = f"{config.seeds} seed{'s' if config.seeds > 1 else ''}"
    print(f"{config.name}: {config.env}, {config.horizon} rounds, {seeds}; "
          f"{len(config.agents)} agents, {cells} grid points; results in {out}", flush=True)
    device = args.device if args.device is not None else "cpu"
    results = run_experiment(config, out, device=device, backend=args.backend, jobs=args.jobs,
                             address=args.address, progress=progress, log=lambda line: print(line, flush=True))
    _print_table(out)
    try:
        from bandit_experiments.plots import plot_experiment

        paths = plot_experiment(out)
        print(f"plot: {paths[0]}")
    except ModuleNotFoundError as exc:
        if exc.name != "matplotlib":
            raise
        print('(no plot: matplotlib is not installed; pip install "contextual-bandit-gym[experiments]", then '
              f"bandit-gym plot {out})")
    return 1 if results.read_failures() else 0


def _print_table(directory: str) -> None:
    from bandit_experiments.summary import write_summary

    text, csv_path, md_path = write_summary(directory)
    print(text)
    print(f"table: {csv_path} and {md_path}")


def add_table(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "table", help="print and write the summary table of a results directory",
        description="Print each agent's final cumulative regret (mean +- standard error over the seeds of its "
        "chosen grid point), chosen hyperparameters and wall time; write DIR/summary.csv and DIR/summary.md.")
    parser.add_argument("directory", metavar="DIR", help="a results directory of `bandit-gym run`")
    parser.set_defaults(run=lambda args: _print_table(args.directory) or 0, on_os_error=_results_os_error)


def add_plot(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plot", help="draw the regret curves and grid plots of a results directory (PNG and PDF)",
        description="Write DIR/regret.png and .pdf (cumulative regret vs round, mean +- s.e. per agent) and "
        "DIR/grid_<agent>.png and .pdf (final regret vs each grid hyperparameter). Needs matplotlib "
        '(pip install "contextual-bandit-gym[experiments]").')
    parser.add_argument("directory", metavar="DIR", help="a results directory of `bandit-gym run`")
    parser.set_defaults(run=_run_plot, on_os_error=_results_os_error)


def _run_plot(args: argparse.Namespace) -> int:
    from bandit_experiments.plots import plot_experiment

    for path in plot_experiment(args.directory):
        print(path)
    return 0


def add_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="run a named benchmark suite and write its report card (table and picture)",
        description="Run every problem of a suite (envs x agents at their defaults x seeds; `--list` names the "
        "suites) into DIR/<problem>/, resuming where a run stopped, then write DIR/report.md, .csv, .json and "
        ".png: each agent's final cumulative regret over UniformRandom's on the same problem, mean +- standard "
        "error over the seeds, as the Deep Bayesian Bandits Showdown scores it. DIR/suite.json records the suite's "
        "name, version and size.")
    parser.add_argument("suite", metavar="SUITE", nargs="?", default=None,
                        help="a suite of the package (showdown, paper, uci) or a suite file (YAML)")
    parser.add_argument("--list", action="store_true", help="list the suites of the package and exit")
    parser.add_argument("--size", default="small", help="the suite's size: small (default) or full")
    parser.add_argument("--out", metavar="DIR", default=None, help="results directory (default bench/<suite>-<size>)")
    parser.add_argument("--seeds", type=count, default=None, help="seeds per problem (default: the size's)")
    parser.add_argument("--horizon", type=count, default=None, help="rounds per problem (default: the size's)")
    parser.add_argument("--device", type=_device, default=None, help="cpu (default), cuda or auto")
    parser.add_argument("--jobs", type=count, default=1, help="cells run in this many processes")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they are off anyway off a terminal)")
    parser.set_defaults(run=_run_bench, parser=parser, on_interrupt=_run_interrupted, on_os_error=_run_os_error)


def _run_bench(args: argparse.Namespace) -> int:
    from bandit_experiments import bench

    if args.list:
        for name in bench.suite_names():
            suite = bench.load_suite(name)
            sizes = ", ".join(f"{size}: {v['horizon']} rounds x {v['seeds']} seeds" for size, v in suite.sizes.items())
            print(f"{name} v{suite.version}: {len(suite.problems)} problems, {len(suite.agents)} agents ({sizes})")
        return 0
    if args.suite is None:
        args.parser.error("the following arguments are required: SUITE (or --list)")
    suite = bench.load_suite(args.suite)
    if args.size not in suite.sizes:
        args.parser.error(f"argument --size: must be one of {sorted(suite.sizes)} for suite {suite.name!r}, "
                          f"got {args.size!r}")
    out = args.out if args.out is not None else os.path.join("bench", f"{suite.name}-{args.size}")
    args.results_dir = out  # named by the line after Ctrl-C or a write error
    progress = not args.quiet and sys.stderr.isatty()
    report = bench.run_suite(suite, out, args.size, seeds=args.seeds, horizon=args.horizon,
                             device=args.device or "cpu", jobs=args.jobs, progress=progress,
                             log=lambda line: print(line, flush=True))
    print(bench.markdown(report))
    print(f"report: {os.path.join(out, 'report.md')} (and .csv, .json, .png)")
    return 0
