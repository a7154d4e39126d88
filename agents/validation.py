"""Argument checks of the agents, beside :mod:`bandit_gym.validation` (public API).

Each raises a ``ValueError`` that names the argument, the value it got and what is accepted.
The agent-specific one is :func:`per_replica`: a numeric hyperparameter given as a scalar or
as one value per replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from bandit_gym.validation import check_bool, check_choice, check_float, check_int

__all__ = ["check_bool", "check_choice", "check_float", "check_int", "per_replica", "replica_seeds"]


def _as_python_values(name: str, value: Any) -> list | None:
    """A sequence, numpy array or tensor of numbers as a list of Python numbers; None for a scalar."""
    if isinstance(value, torch.Tensor | np.ndarray):
        if value.ndim == 0:
            return None
        if value.ndim != 1:
            raise ValueError(f"{name} must be a number or a 1-d sequence (one value per replica), "
                             f"got an array of shape {tuple(value.shape)}")
        return value.tolist()
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return None


def per_replica(name: str, value: Any, num_replicas: int, *, integer: bool = False,
                minimum: float | None = None, strict: bool = False) -> tuple[float | int | list, list]:
    """A hyperparameter given as one number or as one number per replica.

    Args:
        name: The argument's name (for the error).
        value: A number, or a sequence / numpy array / tensor of ``num_replicas`` numbers.
        num_replicas: ``R``.
        integer: Whether the values must be integers.
        minimum: Lower bound (``> minimum`` when ``strict``), None for none.

    Returns:
        ``(given, values)``: the value as given (a number, or a list of Python numbers), for
        ``hyperparameters()`` and ``save``; and the ``R`` validated values, one per replica.
    """
    values = _as_python_values(name, value)
    if values is not None and len(values) != num_replicas:
        raise ValueError(f"{name} must be a number or hold one value per replica ({num_replicas}), "
                         f"got {len(values)} values: {values!r}")
    checked = [check_int(f"{name}", v, minimum=minimum) if integer else check_float(name, v, minimum, strict=strict)
               for v in (values if values is not None else [value])]
    given = checked if values is not None else checked[0]
    return given, checked if values is not None else checked * num_replicas


def replica_seeds(seed: Any, num_replicas: int) -> list[int]:
    """Per-replica seeds: ``seed + r`` for an int ``seed``, or ``num_replicas`` given seeds."""
    values = _as_python_values("seed", seed)
    if values is None:
        base = check_int("seed", seed, minimum=0)
        return [base + r for r in range(num_replicas)]
    if len(values) != num_replicas:
        raise ValueError(f"seed must be an integer or hold one seed per replica ({num_replicas}), got {len(values)}")
    return [check_int("seed", s, minimum=0) for s in values]

