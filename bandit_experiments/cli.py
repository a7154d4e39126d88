"""The ``bandit-gym`` command line: one argparse subcommand per verb.

    bandit-gym demo [--env ID] [--rounds T] [--seeds R] [--agents NAME ...] [--quiet]
    bandit-gym run CONFIG [--out DIR] [--seeds N] [--horizon T] [--device D] [--backend local|ray] ...
    bandit-gym table DIR
    bandit-gym plot DIR
    bandit-gym envs
    bandit-gym agents
    bandit-gym download NAME [NAME ...] [--cache-dir DIR]
    bandit-gym --version

Each verb imports what it needs only when it runs: ``bandit-gym download`` never imports
the agents, ``bandit-gym --help`` needs no optional package, and ``--version``, a malformed
argument (missing, unknown, a bad count, choice or ``--env-kwargs``) and a config refused before
its env is checked (a missing file, bad YAML, an unknown or missing key) import neither torch nor
the agents (checking an env id or ``--device`` imports torch, an agent name the agents). A bad
value prints one line, ``bandit-gym VERB: error: ...``, and exits with status 2 (an invalid choice
names the closest one); a missing optional package names the extra that installs it (exit status 1).
No fault ends in a traceback: a file that cannot be read or written (read-only directory, full
disk) is one line naming it and what to do (status 1); Ctrl-C is one line saying what was kept
(status 130); a reader that goes away (``bandit-gym envs | head -3``) ends the command quietly
(status 141, as for SIGPIPE). The experiment verbs (``run``, ``table``, ``plot``) live in
:mod:`bandit_experiments.commands`, and the argparse types and error kinds that the verbs share in
:mod:`bandit_experiments.arguments` (neither imports this module); a verb may set ``on_interrupt`` and
``on_os_error`` (see :func:`main`).

To add a verb, write ``_add_<verb>(subparsers)`` that registers its parser with
``set_defaults(run=<function taking the parsed args, returning an exit code>)``
and call it in :func:`build_parser`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from bandit_experiments import catalog, commands
from bandit_experiments.arguments import checked, count, invalid_choice_message


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line: ``PROG: error: MESSAGE (see PROG --help)``; an invalid
    choice (a verb, ``--backend``) names the closest one."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, invalid_choice_message(value, action.choices))


# -- demo -----------------------------------------------------------------------------------
def _add_demo(subparsers: argparse._SubParsersAction) -> None:
    from bandit_experiments import demo

    parser = subparsers.add_parser(
        "demo", help="run the default experiment: a few agents on LinearBandit-v0, regret per agent",
        description="Run a few agents on one env, many seeds as one batch, and print each agent's cumulative "
        "regret (mean +- standard error over the seeds) and wall time.",
    )
    parser.add_argument("--env", default=demo.DEFAULT_ENV, type=checked(catalog.check_env_id),
                        help=f"a registered env id (default {demo.DEFAULT_ENV}; see `bandit-gym envs`)")
    parser.add_argument("--rounds", type=count, default=None, help="rounds per run (default: the env's horizon)")
    parser.add_argument("--seeds", type=count, default=demo.DEFAULT_SEEDS,
                        help=f"independent runs, played as one batch (default {demo.DEFAULT_SEEDS})")
    parser.add_argument("--agents", nargs="+", metavar="NAME", default=list(demo.DEFAULT_AGENTS),
                        type=checked(catalog.check_agent_name),
                        help=f"agent class names (default {' '.join(demo.DEFAULT_AGENTS)}; see `bandit-gym agents`)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they are off anyway off a terminal)")
    parser.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from bandit_experiments import demo

    progress = not args.quiet and sys.stderr.isatty()
    if progress and not demo.progress_bar_available():
        print('(no progress bars: tqdm is not installed; pip install "contextual-bandit-gym[experiments]")',
              file=sys.stderr)
        progress = False
    rounds = args.rounds if args.rounds is not None else demo.default_rounds(args.env)
    print(f"{args.env}: {args.seeds} seeds x {rounds} rounds per agent, each agent's runs as one batch", flush=True)
    print(demo.explanation(rounds, args.seeds, args.agents), flush=True)
    for name in args.agents:
        result = demo.play(args.env, name, rounds=rounds, seeds=args.seeds, progress=progress)
        print(demo.format_row(result), flush=True)
    return 0


# -- envs and agents ------------------------------------------------------------------------
def _add_envs(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("envs", help="list the registered envs with their shapes",
                                   description="List the env ids that `import bandit_gym` registers, with the "
                                   "number of arms, the feature dimension and the horizon.")
    parser.set_defaults(run=_run_envs)


def _run_envs(args: argparse.Namespace) -> int:
    ids = catalog.env_ids()
    width = max(len("id"), *(len(env_id) for env_id in ids)) + 2
    print(f"{'id':<{width}}{'arms':>6}{'dim':>6}{'horizon':>9}")
    for env_id in ids:
        info = catalog.describe_env(env_id)
        # a dataset env plays its rows in order (at most 10,000) unless its registration fixes a horizon
        horizon = "rows, at most 10000" if info.horizon is None else str(info.horizon)
        if info.needs is not None:
            print(f"{env_id:<{width}}needs {info.needs} in gym.make; shapes come from the data; horizon: {horizon}")
        elif info.dataset is not None:
            print(f"{env_id:<{width}}shapes come from the data (fill the cache: bandit-gym download {info.dataset}); "
                  f"horizon: {horizon}")
        else:
            print(f"{env_id:<{width}}{info.n_arms:>6}{info.dim:>6}{info.horizon:>9}")
    print("Make one with gym.make(ID) after `import bandit_gym`; every keyword of docs/envs.md can be changed there.")
    return 0


def _add_agents(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("agents", help="list the agents and their hyperparameters with defaults",
                                   description="List the agent classes of the `agents` package and their "
                                   "hyperparameters with the defaults they resolve to (None: derived from the env "
                                   "or the problem's size, or off; see the class's docstring).")
    parser.set_defaults(run=_run_agents)


def _run_agents(args: argparse.Namespace) -> int:
    for name, cls in catalog.agent_classes().items():
        print(f"{name}: {catalog.agent_summary(cls)}")
        per_model = catalog.model_defaults(cls)
        shown = []
        for key, value in catalog.resolved_defaults(cls).items():
            others = ", ".join(f"{model} {other!r}" for model, other in per_model.get(key, {}).items())
            shown.append(f"{key}={value!r}" + (f" ({others})" if others else ""))
        print("    " + ("  ".join(shown) or "(none)"))
    print("(None: derived from the env or the problem's size, or off; a value in parentheses is another model's "
          "default; see the class's docstring and docs/agents.md)")
    return 0


# -- download -------------------------------------------------------------------------------
def _add_download(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "download",
        help="download real datasets into a cache directory (run it where there is internet access)",
        description=(
            "Download datasets into a cache directory that the dataset envs read with no network. "
            "OpenML data go to DIR/org/openml/www/datasets/<id>/ (openml's layout; point OPENML_CACHE_DIR "
            "or cache_dir= at DIR); CIFAR10 goes to DIR/cifar-10-batches-py/ (torchvision's layout; "
            "point BANDIT_GYM_CIFAR10_ROOT or cache_dir= at DIR). Copy DIR to machines without internet. "
            'Needs the datasets extra: pip install "contextual-bandit-gym[datasets]".'
        ),
    )
    parser.add_argument("names", nargs="+", metavar="NAME",
                        help="shuttle, magictelescope, mushroom, covertype or cifar10")
    parser.add_argument(
        "--cache-dir", default=None,
        help="target directory (default: OPENML_CACHE_DIR or openml's cache; for cifar10 BANDIT_GYM_CIFAR10_ROOT "
        "or ~/.cache/bandit_gym/torchvision)",
    )
    parser.set_defaults(run=_run_download, parser=parser)


def _run_download(args: argparse.Namespace) -> int:
    from bandit_gym.datasets.errors import DatasetFileError, DatasetNotFoundError
    from bandit_gym.datasets.loaders import SPECS, download_dataset, load_dataset

    for name in args.names:
        if name not in SPECS:
            args.parser.error(f"argument NAME: {invalid_choice_message(name, sorted(SPECS))}")
    status = 0
    for name in args.names:
        start = time.perf_counter()
        try:
            folder = download_dataset(name, args.cache_dir)
            data = load_dataset(name, cache_dir=args.cache_dir)  # check that it reads back
        except (DatasetNotFoundError, DatasetFileError) as exc:
            print(f"bandit-gym download: error: {exc}", file=sys.stderr)
            status = 1
            continue
        print(
            f"{name}: {data.n_rows} rows, {data.dim} features, {len(data.class_names)} classes "
            f"in {folder} ({time.perf_counter() - start:.1f} s)"
        )
    return status


# -- the command ----------------------------------------------------------------------------
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("contextual-bandit-gym")
    except PackageNotFoundError:  # run from a checkout that is not installed
        import bandit_gym

        return bandit_gym.__version__


class _VersionAction(argparse.Action):
    """``--version``: looked up only when asked for."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the installed version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"bandit-gym {_version()}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bandit-gym",
        description="Contextual bandits as Gymnasium environments, with LMC-TS and its baselines as batched agents.",
        epilog="Start with `bandit-gym demo`. Docs: README.md and docs/ in the source repository.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_demo(subparsers)
    _add_envs(subparsers)
    _add_agents(subparsers)
    _add_download(subparsers)
    commands.add_run(subparsers)
    commands.add_table(subparsers)
    commands.add_plot(subparsers)
    commands.add_bench(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    A verb's parser may set, with ``set_defaults``, ``on_interrupt(args, text) -> str`` (the line after
    Ctrl-C; ``text`` is the interruption's own message, "interrupted" if none) and ``on_os_error(args,
    exc) -> str`` (what to do when a path cannot be read or written).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    prog = f"bandit-gym {args.command}"
    try:
        status = args.run(args)
        sys.stdout.flush()  # a reader that went away (`| head`) shows here, not at exit
        return status
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt as exc:  # Ctrl-C: one line (the verb's `on_interrupt` says what was kept), status 130
        text = str(exc).strip() or "interrupted"
        on_interrupt = getattr(args, "on_interrupt", None)
        print(f"{prog}: {on_interrupt(args, text) if on_interrupt else text}", file=sys.stderr)
        return 130
    except ModuleNotFoundError as exc:
        message = catalog.missing_extra_message(exc)
        if message is None:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as exc:  # the library's errors name the argument and what is accepted
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a read-only directory, a full disk: the path, and what to do
        print(f"{prog}: error: {os_error_line(exc, args)}", file=sys.stderr)
        return 1


def os_error_line(exc: OSError, args: argparse.Namespace) -> str:
    """``No space left on device: 'DIR/cells/x.npz'; free some space ...``: the reason, the path and what to do
    (the verb's ``on_os_error``). An error that the library worded itself (no ``filename``: it names the file
    and what to do in its message) is shown as it is."""
    if exc.filename is None:
        return str(exc)
    on_os_error = getattr(args, "on_os_error", None)
    advice = on_os_error(args, exc) if on_os_error else ""
    return f"{exc.strerror or exc}: {str(exc.filename)!r}" + (f"; {advice}" if advice else "")


def _closed_pipe() -> int:
    """The reader of the output went away (``bandit-gym envs | head -3``): stop quietly, with the status of a
    process ended by SIGPIPE (128 + 13), as ``yes | head`` does. Python's recipe
    (https://docs.python.org/3/library/signal.html#note-on-sigpipe): point stdout at devnull so that the
    flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured in a test): nothing left to flush
        pass
    return 128 + 13


if __name__ == "__main__":
    sys.exit(main())
