"""Errors of the dataset loaders: a missing cache and a damaged cache file."""

from __future__ import annotations


class DatasetNotFoundError(FileNotFoundError):
    """The dataset is not in the cache directory (and was not, or could not be, downloaded).

    The message names the dataset, the cache directory that was searched and the
    command that fills it on a machine with internet access.
    """


class DatasetFileError(ValueError):
    """A cached dataset file exists but cannot be read (truncated, corrupt or of an unsupported kind).

    The message names the file and what is wrong with it.
    """
