"""The ``bandit-gym`` command line: one argparse subcommand per verb.

    bandit-gym demo [--env ID] [--rounds T] [--seeds R] [--agents NAME ...]
    bandit-gym download NAME [NAME ...] [--cache-dir DIR]

To add a verb, write ``_add_<verb>(subparsers)`` that registers its parser with
``set_defaults(run=<function taking the parsed args, returning an exit code>)``
and call it in :func:`build_parser`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence


def _add_download(subparsers: argparse._SubParsersAction) -> None:
    from bandit_gym.datasets.loaders import SPECS

    parser = subparsers.add_parser(
        "download",
        help="download real datasets into a cache directory (run it where there is internet access)",
        description=(
            "Download datasets into a cache directory that the dataset envs read with no network. "
            "OpenML data go to DIR/org/openml/www/datasets/<id>/ (openml's layout; point OPENML_CACHE_DIR "
            "or cache_dir= at DIR); CIFAR10 goes to DIR/cifar-10-batches-py/ (torchvision's layout; "
            "point BANDIT_GYM_CIFAR10_ROOT or cache_dir= at DIR). Copy DIR to machines without internet."
        ),
    )
    parser.add_argument("names", nargs="+", metavar="NAME", choices=sorted(SPECS), help=f"one of {sorted(SPECS)}")
    parser.add_argument(
        "--cache-dir", default=None,
        help="target directory (default: OPENML_CACHE_DIR or openml's cache; for cifar10 BANDIT_GYM_CIFAR10_ROOT "
        "or ~/.cache/bandit_gym/torchvision)",
    )
    parser.set_defaults(run=_run_download)


def _run_download(args: argparse.Namespace) -> int:
    from bandit_gym.datasets.errors import DatasetFileError, DatasetNotFoundError
    from bandit_gym.datasets.loaders import download_dataset, load_dataset

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


def _add_demo(subparsers: argparse._SubParsersAction) -> None:
    from bandit_gym import demo

    parser = subparsers.add_parser("demo", help="run the default experiment and print each agent's regret",
                                   description=demo.__doc__.splitlines()[0])
    demo.add_arguments(parser)
    parser.set_defaults(run=demo.run_from_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bandit-gym", description="Contextual bandits as Gymnasium environments.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_demo(subparsers)
    _add_download(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
