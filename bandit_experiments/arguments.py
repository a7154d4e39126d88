"""The pieces of the ``bandit-gym`` command line that its verbs share: argparse types and error kinds.

:mod:`bandit_experiments.cli` (the parser and :func:`~bandit_experiments.cli.main`) and
:mod:`bandit_experiments.commands` (the experiment verbs) both import this module; it imports neither, and
nothing heavy (no torch, no agents): a bad argument is reported before any of them is imported.
"""

from __future__ import annotations

import argparse
import errno
from collections.abc import Callable

from bandit_experiments import catalog

#: Why a path cannot be written: no permission (or a read-only file system), or no space left.
NO_PERMISSION = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def invalid_choice_message(value: str, choices) -> str:
    """``invalid choice: 'runn'; did you mean 'run'? (choose from 'demo', 'envs', ...)``."""
    close = catalog.closest_name(value, [str(choice) for choice in choices])
    hint = f"; did you mean {close!r}?" if close else ""
    return f"invalid choice: {value!r}{hint} (choose from {', '.join(map(repr, choices))})"


def count(text: str) -> int:
    """An integer >= 1 (seeds, rounds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def checked(check: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse type from a ``catalog.check_*`` function (its ValueError becomes the one-line error)."""

    def convert(text: str) -> str:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__
    return convert
