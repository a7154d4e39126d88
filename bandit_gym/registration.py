"""Register bandit-gym's envs with Gymnasium from ``envs_registry.yaml``.

The YAML file at the repository root is the only place where ids, entry points
and defaults are written; the package ships it as package data (a link in the
source tree, a copy in a wheel). A malformed entry fails at import with a
message naming the file and the entry.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

_ALLOWED_KEYS = {"entry_point", "vector_entry_point", "kwargs"}
_ENTRY_POINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_ENV_ID = re.compile(r"^[A-Za-z][\w-]*-v\d+$")


class RegistryError(ValueError):
    """A malformed ``envs_registry.yaml``."""


def registry_path() -> Path:
    """Path of the registry file the package reads."""
    return Path(str(resources.files("bandit_gym").joinpath("envs_registry.yaml")))


def load_registry(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Read and validate a registry file; return ``{id: {entry_point, vector_entry_point, kwargs}}``.

    An entry declares no ``max_episode_steps``: the envs truncate themselves at their ``horizon``
    keyword, and a registered ``max_episode_steps`` would make ``gym.make`` add a ``TimeLimit`` that
    cuts a larger horizon short. A made env's ``spec.max_episode_steps`` is its horizon
    (:attr:`bandit_gym.BanditEnv.spec`).
    """
    path = Path(path) if path is not None else registry_path()
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise RegistryError(f"{path}: cannot read the env registry: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise RegistryError(f"{path}: expected a mapping of env ids to entries, got {type(data).__name__}")
    entries = {}
    for env_id, entry in data.items():
        where = f"{path}: entry {env_id!r}"
        if not isinstance(env_id, str) or not _ENV_ID.match(env_id):
            raise RegistryError(f"{where}: the id must look like 'Name-v0'")
        if not isinstance(entry, dict):
            raise RegistryError(f"{where}: expected a mapping with keys {sorted(_ALLOWED_KEYS)}, got {entry!r}")
        if "max_episode_steps" in entry:
            raise RegistryError(f"{where}: max_episode_steps is not accepted: the env truncates itself at its "
                                "horizon keyword, and a registered TimeLimit would cut a larger horizon short")
        unknown = set(entry) - _ALLOWED_KEYS
        if unknown:
            raise RegistryError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(_ALLOWED_KEYS)}")
        for key in ("entry_point", "vector_entry_point"):
            value = entry.get(key)
            if key == "entry_point" and value is None:
                raise RegistryError(f"{where}: 'entry_point' is required")
            if value is not None and (not isinstance(value, str) or not _ENTRY_POINT.match(value)):
                raise RegistryError(f"{where}: {key} must look like 'package.module:ClassName', got {value!r}")
        kwargs = entry.get("kwargs", {})
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise RegistryError(f"{where}: kwargs must be a mapping of keyword names to values, got {kwargs!r}")
        entries[env_id] = {
            "entry_point": entry["entry_point"],
            "vector_entry_point": entry.get("vector_entry_point"),
            "kwargs": dict(kwargs),
        }
    return entries


def register_envs(path: str | Path | None = None) -> list[str]:
    """Register every entry of the registry with Gymnasium; return the ids."""
    entries = load_registry(path)
    for env_id, entry in entries.items():
        if env_id in gym.registry:
            del gym.registry[env_id]  # re-registration (e.g. reload) replaces, never warns
        gym.register(
            id=env_id,
            entry_point=entry["entry_point"],
            vector_entry_point=entry["vector_entry_point"],
            kwargs=entry["kwargs"],
            disable_env_checker=False,
        )
    return list(entries)
