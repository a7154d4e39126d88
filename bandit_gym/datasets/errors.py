"""Errors of the dataset loaders: a missing package, a missing cache, a damaged or unexpected cache file."""

from __future__ import annotations

import importlib
from types import ModuleType

#: The command that installs every optional package the dataset envs and loaders use.
DATASETS_INSTALL_HINT = 'pip install "contextual-bandit-gym[datasets]"'


class MissingDependencyError(ModuleNotFoundError):
    """An optional package that a dataset feature needs is not installed.

    The base install (``pip install contextual-bandit-gym``) runs every synthetic env; the
    dataset envs and loaders need the ``datasets`` extra. The message names the
    missing module, what needed it and the install command; ``name`` is the module.
    A ``ModuleNotFoundError``, so code that catches that (or ``ImportError``) catches it.
    """


class DatasetNotFoundError(FileNotFoundError):
    """The dataset is not in the cache directory (and was not, or could not be, downloaded).

    The message names the dataset, the cache directory that was searched and the
    command that fills it on a machine with internet access.
    """


class DatasetFileError(ValueError):
    """A cached dataset file exists but cannot be read (truncated, corrupt or of an unsupported kind).

    The message names the file and what is wrong with it.
    """


class DatasetIntegrityError(DatasetFileError):
    """A cached dataset file reads, but is not the published dataset (rows, classes or columns differ).

    Typically a download cut at a row boundary, or a file edited by hand. The
    message names the file, what was expected and what was found.
    """


def import_optional(module: str, needed_for: str, distribution: str | None = None) -> ModuleType:
    """Import ``module``, or raise :class:`MissingDependencyError` saying which extra to install.

    Args:
        module: The module to import, e.g. ``"pandas"``.
        needed_for: What needs it, for the message (e.g. ``"reading an OpenML cache file"``).
        distribution: The package to install if its name differs from the module's (``"liac-arff"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module if distribution is None else f"{distribution} (module {module!r})"
        raise MissingDependencyError(
            f"{needed_for} needs the optional package {package}, which cannot be imported ({exc}). "
            f"Install the dataset extra: {DATASETS_INSTALL_HINT}",
            name=module,
        ) from exc
