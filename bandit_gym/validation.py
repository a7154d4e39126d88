"""Argument validators shared by the envs and the agents (public API).

Each checks one keyword and, when it is wrong, raises a ``ValueError`` that names the
argument, the value it got and what is accepted. Nothing is silently clipped or coerced
beyond the lossless (an integral numpy scalar is an int; an int is a float). For env
constructors: :func:`check_keywords` (an unknown keyword: ``TypeError``),
:func:`check_render_mode`, :func:`check_memory` (``MemoryError`` with an estimate, before
allocating), :func:`check_path`. Messages show a value through :func:`short_repr` (an array by its
shape and dtype, anything else cut to 80 characters). How many threads torch uses, forked workers
included, is :mod:`bandit_gym.threads`'s business.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import os
from typing import Any

import gymnasium as gym
import torch

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "check_path", "resolve_device",
           "check_keywords", "check_render_mode", "check_memory", "short_repr"]


def short_repr(value: Any, limit: int = 80) -> str:
    """``value`` as a message shows it: an array (numpy, torch) by its type, shape and dtype, anything else
    by its ``repr`` cut to ``limit`` characters."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def check_path(name: str, value: Any) -> Any:
    """A filesystem path (a non-empty ``str`` or an ``os.PathLike`` of one, such as ``pathlib.Path``) or None."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    if value is not None and (not isinstance(text, str) or not text):
        raise ValueError(f"{name} must be a path (a non-empty str or an os.PathLike such as pathlib.Path) or None, "
                         f"got {short_repr(value)} of type {type(value).__name__}")
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


def check_memory(num_bytes: float, what: str) -> None:
    """Refuse up front an env whose tensors would not fit in this machine's memory."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: no estimate to compare with
        return
    if num_bytes > total:
        raise MemoryError(f"{what} needs about {num_bytes / 2**30:,.1f} GiB of memory; this machine has "
                          f"{total / 2**30:,.1f} GiB. Use fewer arms, a smaller dim or fewer replicas.")


def check_keywords(face: type, simulator_class: type, kwargs: dict[str, Any], own: tuple[str, ...]) -> None:
    """Raise a ``TypeError`` naming the env id, the unknown keyword, the accepted ones and the closest match.

    ``face`` is the env class (its registered ids are looked up), ``simulator_class`` the class whose
    keyword-only arguments it accepts, ``own`` the keywords the env class takes itself.
    """
    params = inspect.signature(simulator_class.__init__).parameters
    accepted = sorted([name for name, p in params.items() if p.kind == p.KEYWORD_ONLY] + list(own))
    unknown = [name for name in kwargs if name not in accepted]
    if not unknown:
        return
    path = f"{face.__module__}:{face.__name__}"
    ids = [s.id for s in gym.registry.values() if path in (s.entry_point, s.vector_entry_point)]
    name = " / ".join(ids) if ids else face.__name__
    close = difflib.get_close_matches(unknown[0], accepted, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"{name} got an unexpected keyword argument {unknown[0]!r}{hint}; "
                    f"accepted keywords: {', '.join(accepted)}")


def check_render_mode(render_mode: str | None, modes: list[str]) -> str | None:
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode must be None or one of {modes}, got {render_mode!r}")
    return render_mode
