"""What the experiment layer can run: the registered envs, the agents and their hyperparameters.

Used by the command line (``bandit-gym envs``, ``bandit-gym agents``) and to check names
before any work starts: an unknown name is refused with the closest accepted one.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Constructor keywords of every agent that are not hyperparameters (sizes, seed, device).
NOT_HYPERPARAMETERS = frozenset({"self", "env", "seed", "device", "n_arms", "dim", "num_replicas"})

#: The optional-dependency group ("extra") of bandit-gym that installs each optional package.
EXTRA_OF_MODULE = {
    "pandas": "datasets", "openml": "datasets", "arff": "datasets", "sklearn": "datasets", "torchvision": "datasets",
    "tqdm": "experiments", "matplotlib": "experiments",
    "stable_baselines3": "sb3", "ray": "ray", "pytest": "test", "build": "test",
}


def missing_extra_message(error: ModuleNotFoundError) -> str | None:
    """``the package 'pandas' is not installed; it comes with pip install "bandit-gym[datasets]"``.

    The error's own message if it already names the extra; None when the missing module is
    not an optional dependency of bandit-gym.
    """
    if "bandit-gym[" in str(error):
        return str(error)
    module = (error.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return f'the package {module!r} is not installed; it comes with pip install "bandit-gym[{extra}]"'


def unknown_name_message(what: str, value: str, accepted: Iterable[str]) -> str:
    """``"unknown agent 'LMCT'; did you mean 'LMCTS'? accepted: ..."`` (the closest by spelling)."""
    accepted = list(accepted)
    lowered = {name.lower(): name for name in accepted}
    close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    hint = f"; did you mean {lowered[close[0]]!r}?" if close else ""
    return f"unknown {what} {value!r}{hint} (accepted: {', '.join(accepted)})"


# -- agents ---------------------------------------------------------------------------------
def agent_classes() -> dict[str, type]:
    """Every agent class of the ``agents`` package by name, without its base class or its errors."""
    import agents

    classes = {}
    for name in agents.__all__:
        cls = getattr(agents, name)
        if isinstance(cls, type) and issubclass(cls, agents.BanditAgent) and cls is not agents.BanditAgent:
            classes[name] = cls
    return classes


def agent_hyperparameters(cls: type) -> dict[str, Any]:
    """The keyword hyperparameters of an agent class and their defaults, in the constructor's order.

    Keywords that a constructor passes on through ``**kwargs`` are read from its base classes.
    A None default that the class resolves from a ``default_<name>`` class attribute (the neural
    agents' tuned step sizes and exploration scales) is shown as that value; any other None means the
    agent derives the value (from the env or its other settings): see the class's docstring.
    """
    hyperparameters: dict[str, Any] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        passes_on = False
        for parameter in inspect.signature(klass.__init__).parameters.values():
            if parameter.kind is parameter.VAR_KEYWORD:
                passes_on = True
            elif parameter.kind is not parameter.VAR_POSITIONAL and parameter.name not in NOT_HYPERPARAMETERS:
                default = None if parameter.default is parameter.empty else parameter.default
                if default is None:
                    default = getattr(cls, f"default_{parameter.name}", None)
                hyperparameters.setdefault(parameter.name, default)
        if not passes_on:
            break
    return hyperparameters


def check_agent_name(name: str) -> str:
    """``name`` if it is an agent class of the ``agents`` package; else ValueError with the closest name."""
    classes = agent_classes()
    if name not in classes:
        raise ValueError(unknown_name_message("agent", name, classes))
    return name


# -- envs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class EnvInfo:
    """One registered env as ``bandit-gym envs`` lists it."""

    env_id: str
    n_arms: int | None  # None: known once the data are loaded
    dim: int | None
    horizon: int | None  # None: the number of rows of the data, at most 10,000
    dataset: str | None  # the ``bandit-gym download`` name of a dataset env
    needs: str | None = None  # the data keywords gym.make needs: "X=..., y=... (your labelled data)", "data_id=N ..."


def env_ids() -> tuple[str, ...]:
    """The ids that ``import bandit_gym`` registers (``bandit_gym.ENV_IDS``)."""
    import bandit_gym

    return tuple(bandit_gym.ENV_IDS)


def check_env_id(env_id: str) -> str:
    """``env_id`` if bandit-gym registers it; else ValueError with the closest bandit-gym id."""
    ids = env_ids()
    if env_id not in ids:
        raise ValueError(unknown_name_message("env", env_id, ids))
    return env_id


def describe_env(env_id: str) -> EnvInfo:
    """Arms, feature dimension and horizon of a registered env, without loading any data."""
    import gymnasium as gym

    spec = gym.registry[check_env_id(env_id)]
    kwargs = dict(spec.kwargs)
    if "dataset" in kwargs:  # dataset envs: the shapes come from the data
        if kwargs["dataset"] is None:  # no preset: the user gives the data as keywords
            needs = "X=..., y=... (your labelled data)" if "X" in kwargs else "data_id=N (an OpenML id, from the cache)"
            return EnvInfo(env_id, None, None, kwargs.get("horizon"), None, needs)
        return EnvInfo(env_id, None, None, kwargs.get("horizon"), kwargs["dataset"])
    env = gym.make(env_id)
    n_arms, dim = env.observation_space.shape
    horizon = env.unwrapped.horizon
    env.close()
    return EnvInfo(env_id, int(n_arms), int(dim), int(horizon), None)
