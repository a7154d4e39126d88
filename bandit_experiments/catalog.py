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
NOT_HYPERPARAMETERS = frozenset({"self", "env", "seed", "device", "n_arms", "dim", "num_replicas", "chain"})

#: The optional-dependency group ("extra") of bandit-gym that installs each optional package.
EXTRA_OF_MODULE = {
    "pandas": "datasets", "openml": "datasets", "arff": "datasets", "sklearn": "datasets", "torchvision": "datasets",
    "tqdm": "experiments", "matplotlib": "experiments",
    "stable_baselines3": "sb3", "tensorboard": "tensorboard", "ray": "ray", "pytest": "test", "build": "test",
}


def missing_extra_message(error: ModuleNotFoundError) -> str | None:
    """``the package 'pandas' is not installed; it comes with pip install "contextual-bandit-gym[datasets]"``.

    The error's own message if it already names the extra; None when the missing module is
    not an optional dependency of bandit-gym.
    """
    if "contextual-bandit-gym[" in str(error):
        return str(error)
    module = (error.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return f'the package {module!r} is not installed; it comes with pip install "contextual-bandit-gym[{extra}]"'


def closest_name(value: str, accepted: Iterable[str]) -> str | None:
    """The accepted name closest to ``value`` by spelling (case ignored), or None if none is close."""
    lowered = {name.lower(): name for name in accepted}
    close = difflib.get_close_matches(str(value).lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def unknown_name_message(what: str, value: str, accepted: Iterable[str]) -> str:
    """``"unknown agent 'LMCT'; did you mean 'LMCTS'? accepted: ..."`` (the closest by spelling)."""
    accepted = list(accepted)
    close = closest_name(value, accepted)
    hint = f"; did you mean {close!r}?" if close else ""
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


def agent_summary(cls: type) -> str:
    """The first paragraph of an agent's docstring, on one line (whole sentences, not its first line)."""
    paragraph = (inspect.getdoc(cls) or "").split("\n\n")[0]
    return " ".join(paragraph.split())


def resolved_defaults(cls: type) -> dict[str, Any]:
    """:func:`agent_hyperparameters` with each None that the agent resolves by itself replaced by its value.

    The agent is built (no round played) on two problem sizes; a value is taken only where both agree (a
    default scaled by the dimension, such as SGD-TS's ``n_explore_rounds = d``, stays None). A value that
    depends on the ``model`` keyword is the default model's; :func:`model_defaults` gives the others'.
    """
    listed = agent_hyperparameters(cls)
    unresolved = [name for name, value in listed.items() if value is None]
    return {**listed, **_built_defaults(cls, unresolved, {})} if unresolved else listed


def model_defaults(cls: type) -> dict[str, dict[str, Any]]:
    """``{hyperparameter: {model: default}}`` for the defaults that differ with an agent's ``model`` keyword
    (LMC-TS: ``{"step_size": {"glm": 0.9, "mlp": 0.01}, ...}``), for the models other than the default."""
    listed = agent_hyperparameters(cls)
    if not isinstance(listed.get("model"), str):
        return {}
    from agents.models.reward import MODELS

    unresolved = [name for name, value in listed.items() if value is None]
    default = _built_defaults(cls, unresolved, {})
    others: dict[str, dict[str, Any]] = {}
    for model in MODELS:
        if model == listed["model"]:
            continue
        for name, value in _built_defaults(cls, unresolved, {"model": model}).items():
            if value != default.get(name):
                others.setdefault(name, {})[model] = value
    return others


def _built_defaults(cls: type, names: list[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The values the agent resolves for ``names`` when built with ``kwargs`` on two sizes; where they agree."""
    try:
        built = [cls(n_arms=n_arms, dim=dim, num_replicas=1, seed=0, device="cpu", **kwargs).hyperparameters()
                 for n_arms, dim in ((2, 3), (3, 5))]
    except (ValueError, TypeError):  # needs the env (e.g. LinTS's horizon): left as listed
        return {}
    return {name: built[0][name] for name in names
            if built[0].get(name) is not None and built[0].get(name) == built[1].get(name)}


def check_agent_name(name: str) -> str:
    """``name`` if it is an agent class of the ``agents`` package; else ValueError with the closest name."""
    classes = agent_classes()
    if name not in classes:
        raise ValueError(unknown_name_message("agent", name, classes))
    return name


def _import_module(module: str, what: str, value: str):
    """``importlib.import_module(module)``; a failure is a one-line ValueError naming ``what`` and ``value``."""
    import importlib

    if not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(f"{what} {value!r}: the module {module!r} is not a module name (accepted: dotted "
                         "identifiers, such as 'my_pkg.envs'; not a relative name or a file path)")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{what} {value!r}: cannot import the module {module!r} ({type(exc).__name__}: {exc}); "
                         "it must be importable: an installed package, or its folder on PYTHONPATH") from None


def agent_class(name: str) -> type:
    """The agent class ``name``: one of the ``agents`` package (``LMCTS``), or your own as
    ``package.module:ClassName`` (a subclass of :class:`agents.BanditAgent`, imported here).

    Raises:
        ValueError: one line naming ``name``: unknown, not importable, or not a ``BanditAgent``.
    """
    if ":" not in name:
        return agent_classes()[check_agent_name(name)]
    import agents

    module, _, attribute = name.partition(":")
    if not module or not attribute:
        raise ValueError(f"agent {name!r}: your own agent is written 'package.module:ClassName'")
    found = _import_module(module, "agent", name)
    cls = found
    for part in attribute.split("."):
        if not hasattr(cls, part):
            raise ValueError(f"agent {name!r}: the module {module!r} has no {attribute!r}")
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, agents.BanditAgent)) or cls is agents.BanditAgent:
        raise ValueError(f"agent {name!r} is not a subclass of agents.BanditAgent, got {cls!r}")
    return cls


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


def import_modules(modules) -> None:
    """Import each of ``modules`` (a config's ``imports``: your modules that register envs)."""
    for module in modules:
        _import_module(module, "imports:", module)


def check_env_id(env_id: str) -> str:
    """``env_id`` if it is registered (bandit-gym's ids, or one a module of yours registered, not Gymnasium's own), or
    Gymnasium's ``module:EnvId`` (the module is imported, and must register ``EnvId``); else ValueError
    with the closest bandit-gym id."""
    import gymnasium as gym

    ids = env_ids()
    name = env_id
    if ":" in env_id:
        module, _, name = env_id.partition(":")
        if not module or not name:
            raise ValueError(f"env {env_id!r}: your own env is written 'package.module:EnvId' (Gymnasium's form)")
        _import_module(module, "env", env_id)
        if name not in gym.registry:
            raise ValueError(f"env {env_id!r}: importing {module!r} did not register {name!r}"
                             + (f"; did you mean {module}:{close}?" if (close := closest_name(
                                 name, [i for i in gym.registry if i not in ids])) else ""))
        return env_id
    if env_id not in ids and not _users_env(env_id):
        raise ValueError(unknown_name_message("env", env_id, ids))
    return env_id


def _users_env(env_id: str) -> bool:
    """An id registered by a module of yours (imported: a config's ``imports``), not one of Gymnasium's own."""
    import gymnasium as gym

    spec = gym.registry.get(env_id)
    entry = spec.entry_point if spec is not None else None
    module = entry if isinstance(entry, str) else getattr(entry, "__module__", "")
    return spec is not None and not module.startswith("gymnasium.")


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


# -- wrappers -------------------------------------------------------------------------------
def wrapper_classes() -> dict[str, type]:
    """The env wrappers a config's ``wrappers:`` may name: those of ``bandit_gym``'s public namespace
    (``bandit_gym.__all__``) and of ``bandit_gym.wrappers``, by class name."""
    import gymnasium as gym
    from gymnasium.vector import VectorWrapper

    import bandit_gym
    import bandit_gym.wrappers

    found = {}
    for module in (bandit_gym, bandit_gym.wrappers):
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            cls = getattr(module, name, None)
            if isinstance(cls, type) and issubclass(cls, (gym.Wrapper, VectorWrapper)) and cls.__module__.startswith(
                    "bandit_gym"):
                found.setdefault(name, cls)
    return found


def wrapper_class(name: str) -> type:
    """The wrapper class ``name`` (see :func:`wrapper_classes`); else ValueError with the closest name."""
    classes = wrapper_classes()
    if name not in classes:
        raise ValueError(unknown_name_message("wrapper", name, classes))
    return classes[name]
