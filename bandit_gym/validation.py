"""Argument validators shared by the envs and the agents (public API).

Each checks one keyword and, when it is wrong, raises a ``ValueError`` that names the
argument, the value it got and what is accepted. Nothing is silently clipped or coerced
beyond the lossless (an integral numpy scalar is an int; an int is a float).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "resolve_device"]


def check_int(name: str, value: Any, minimum: int | None = 1, maximum: int | None = None) -> int:
    """An integer in ``[minimum, maximum]`` (either bound may be None)."""
    ok = not isinstance(value, bool) and isinstance(value, numbers.Integral)
    ok = ok and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
    if not ok:
        bounds = " and ".join(b for b in (minimum is not None and f">= {minimum}", maximum is not None
                                             and f"<= {maximum}") if b)
        raise ValueError(f"{name} must be an integer{' ' + bounds if bounds else ''}, got {value!r}")
    return int(value)


def check_float(name: str, value: Any, minimum: float | None = None, *, strict: bool = False,
                maximum: float | None = None) -> float:
    """A finite real number ``>= minimum`` (``> minimum`` when ``strict``) and ``<= maximum``."""
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if strict else value >= minimum
    ok = ok and (maximum is None or value <= maximum)
    if not ok:
        bounds = [f"{'>' if strict else '>='} {minimum}" if minimum is not None else "",
                  f"<= {maximum}" if maximum is not None else ""]
        bounds_text = " and ".join(b for b in bounds if b)
        raise ValueError(f"{name} must be a finite number{' ' + bounds_text if bounds_text else ''}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``True`` or ``False`` (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: tuple | list) -> Any:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(resolved)!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    return resolved
