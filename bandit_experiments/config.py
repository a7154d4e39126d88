"""Experiment configs: one YAML file per experiment, checked completely before any work starts.

A config names one env, the horizon, the seeds and, per agent, fixed hyperparameters and a grid::

    name: quickstart                  # optional; default: the file's stem
    env: LinearBandit-v0              # a registered id (bandit-gym envs)
    env_kwargs: {noise_std: 0.5}      # optional keywords of gym.make_vec
    horizon: 5000                     # rounds per run
    seeds: 5                          # runs per grid point: seeds seed, ..., seed + seeds - 1
    seed: 0                           # optional first seed (default 0)
    agents:
      LMCTS:                          # a label; the agent class is the label unless `agent:` names it
        fixed: {n_inner_steps: 100}
        grid: {step_size: [0.1, 0.3], inverse_temperature: [10, 100]}
      LMCTS-glm: {agent: LMCTS, fixed: {model: glm}}
      Mine: {agent: my_pkg.agents:MyAgent}   # your own BanditAgent subclass, as package.module:ClassName
    wrappers: [{DelayedFeedback: {delay: 100}}]   # optional: bandit_gym's wrappers, applied in this order
    imports: [my_pkg.envs]            # optional: your modules that register envs (or env: my_pkg.envs:MyEnv-v0)

Every grid point times every seed of one agent runs as ONE batched agent on ONE batched env
(per-replica hyperparameters), so a grid may only vary hyperparameters that take one value per
replica. Checking a config builds each agent once on its batched env (no round is played): a
bad name or value is reported as ``FILE:LINE: where: what (accepted: ...)``.

A config is code: ``imports:``, ``env: module:EnvId`` and ``agent: module:ClassName`` import those
modules, and importing a module runs it (as Hydra's ``_target_`` does). Run only configs you trust, with
only modules you trust on ``sys.path`` (``PYTHONPATH=.`` adds the current folder). A module is named by
dotted identifiers (``my_pkg.envs``; a relative name or a file path is refused), and before importing
any, :func:`load_config` writes one line to stderr naming them all:
``config custom.yaml imports (runs) modules: my_pkg.envs, my_agents``.

Numbers such as ``1e-3`` are read as floats (plain YAML 1.1 reads them as strings). A config holds
plain mappings, lists, numbers and strings: a YAML tag (``!!python/object/apply:...``, ``!custom``) is
refused, naming it and its line, and a document that expands to more than :data:`MAX_VALUES` values
(an "alias bomb") is refused before it is built.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bandit_experiments import catalog

if TYPE_CHECKING:
    import gymnasium as gym

    from agents.loop.grid import HyperparameterGrid

TOP_LEVEL_KEYS = ("name", "description", "imports", "env", "env_kwargs", "wrappers", "horizon", "seeds", "seed",
                  "agents")
REQUIRED_KEYS = ("env", "horizon", "seeds", "agents")
AGENT_KEYS = ("agent", "fixed", "grid", "note")
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


#: The papers' symbols for the agents' hyperparameters (a config written from a paper may use them).
PAPER_SYMBOLS = {"eta": "step_size", "eta_0": "step_size", "beta": "inverse_temperature", "K": "n_inner_steps",
                 "lambda": "lambda_reg", "tau": "n_explore_rounds"}
#: A library error for a value outside a set of choices: ``model must be one of ['glm', ...], got 'linaer'``.
_CHOICE = re.compile(r"must be (?:None or )?one of [\[(](?P<choices>[^\])]*)[\])], got '(?P<value>[^']*)'")


class ConfigError(ValueError):
    """A config that cannot run; the message starts with ``FILE:LINE:``."""


@dataclass(frozen=True)
class AgentSpec:
    """One agent of an experiment: its label, class, fixed hyperparameters and grid."""

    label: str
    agent: str
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list] = field(default_factory=dict)

    def points(self) -> list[dict[str, Any]]:
        """The grid points (Cartesian product, the last name fastest: :class:`agents.HyperparameterGrid`);
        one empty point without a grid."""
        from agents.loop.grid import HyperparameterGrid

        return HyperparameterGrid(self.grid, n_seeds=1).points

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "agent": self.agent, "fixed": dict(self.fixed),
                "grid": {name: list(values) for name, values in self.grid.items()}}


@dataclass(frozen=True)
class ExperimentConfig:
    """A checked experiment config (see the module docstring)."""

    name: str
    env: str
    horizon: int
    seeds: int
    agents: tuple[AgentSpec, ...]
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    description: str = ""
    source: str = ""
    imports: tuple[str, ...] = ()  # modules imported before the env is made (they register envs)
    wrappers: tuple[tuple[str, dict[str, Any]], ...] = ()  # (bandit_gym wrapper name, its keywords), in order

    def seed_list(self) -> list[int]:
        return list(range(self.seed, self.seed + self.seeds))

    def layout(self, spec: AgentSpec, points: list[dict[str, Any]] | None = None) -> HyperparameterGrid:
        """The replicas of ``spec``'s cell as :class:`agents.HyperparameterGrid` lays them out: its grid points
        (default: all of them; else the given ones) x this config's seeds."""
        from agents.loop.grid import HyperparameterGrid

        if points is None:
            return HyperparameterGrid(spec.grid, self.seeds, self.seed)
        return HyperparameterGrid.from_points(points, self.seeds, self.seed)

    def to_dict(self) -> dict[str, Any]:
        """What defines the results (not the description or the file's path): compared on resume."""
        found = {"name": self.name, "env": self.env, "env_kwargs": dict(self.env_kwargs), "horizon": self.horizon,
                 "seeds": self.seeds, "seed": self.seed, "agents": [a.to_dict() for a in self.agents]}
        if self.wrappers:  # only when given: results written before wrappers existed still match
            found["wrappers"] = wrappers_to_list(self.wrappers)
        return found

    def agent(self, label: str) -> AgentSpec:
        return next(a for a in self.agents if a.label == label)


def wrappers_to_list(wrappers) -> list[dict[str, dict[str, Any]]]:
    """``[{name: keywords}, ...]``, as a config writes them (and experiment.json records them)."""
    return [{name: dict(kwargs)} for name, kwargs in wrappers]


# -- YAML with line numbers -------------------------------------------------------------------------
class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` (no dot) as a float."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))


#: The most values (mappings, lists and scalars, counting every repeat of an alias) a config may
#: expand to: a shipped config has about a hundred; nine levels of nine aliases ("alias bomb")
#: would expand to 9^9 and fill the memory.
MAX_VALUES = 100_000
#: The tags a config's values may carry, explicitly or as YAML resolves them; any other (``!!python/...``,
#: ``!custom``) is refused rather than dropped.
SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "timestamp"))


def _short_tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!", 1)


class _Located:
    """Python values of a YAML document and the line of every node, by path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[tuple, int] = {}
        self.values = 0

    def error(self, path: tuple, message: str) -> ConfigError:
        line = next((self.lines[path[:n]] for n in range(len(path), -1, -1) if path[:n] in self.lines), 1)
        where = ".".join(str(p) for p in path)
        return ConfigError(f"{self.source}:{line}: {where + ': ' if where else ''}{message}")

    def build(self, loader: yaml.SafeLoader, node: yaml.Node, path: tuple | None = ()) -> Any:
        """The Python value of ``node``, recording its line under ``path`` (None: a mapping's key, not recorded)."""
        line = node.start_mark.line + 1
        if path is not None:
            self.lines[path] = line
        where = f"{self.source}:{line}: " + (".".join(str(p) for p in path) + ": " if path else "")
        self.values += 1
        if self.values > MAX_VALUES:
            top = f"{path[0]}: " if path else ""  # the top-level key: the path of a 9-level bomb reads badly
            raise ConfigError(f"{self.source}:{line}: {top}the document expands to more than {MAX_VALUES:,} values "
                              "(each use of a YAML alias repeats what it points to); a config is much smaller")
        expected = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}
        if node.tag not in SCALAR_TAGS and node.tag != expected.get(type(node)):
            raise ConfigError(f"{where}the YAML tag {_short_tag(node.tag)!r} is not accepted "
                              "(a config holds plain mappings, lists, numbers and strings; remove the tag)")
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.build(loader, key_node, None)
                if not isinstance(key, str):
                    raise ConfigError(f"{self.source}:{key_node.start_mark.line + 1}: keys must be names, got {key!r}")
                if key in result:
                    raise ConfigError(f"{self.source}:{key_node.start_mark.line + 1}: {key!r} is given twice "
                                      f"(first on line {self.lines[path + (key,)]})")
                result[key] = self.build(loader, value_node, path + (key,))
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(loader, item, path + (i,)) for i, item in enumerate(node.value)]
        return loader.construct_object(node)


def _parse(text: str, source: str) -> tuple[Any, _Located]:
    located = _Located(source)
    loader = None
    try:
        loader = _Loader(text)  # checks the characters first
        node = loader.get_single_node()
        data = None if node is None else located.build(loader, node)
    except yaml.reader.ReaderError as exc:  # a control character (NUL, ...): a binary file
        line = text.count("\n", 0, exc.position) + 1
        raise ConfigError(f"{source}:{line}: not a YAML text file: the character #x{exc.character:04x} is not "
                          "accepted (a config is YAML text: printable characters, tabs and line breaks)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}:{line}: not valid YAML: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{source}:1: the YAML is nested too deeply to be a config") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, located


def _read_text(path: Path) -> str:
    """The text of a config file; a file that is not UTF-8 text (a binary file) is one line naming it."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{line}: not a YAML text file: the byte 0x{raw[exc.start]:02x} at offset "
                          f"{exc.start} is not UTF-8 (a config is YAML text, UTF-8 encoded)") from None


# -- checks -----------------------------------------------------------------------------------------
def _count(located: _Located, data: Mapping, key: str, minimum: int) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        hint = (f" (a number with a point or an exponent is a float; write the integer's digits: {int(value)})"
                if isinstance(value, float) and value.is_integer() and value >= minimum else "")
        raise located.error((key,), f"must be an integer >= {minimum}, got {value!r}{hint}")
    return value


def _mapping(located: _Located, value: Any, path: tuple, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise located.error(path, f"must be a mapping of {what}, got {value!r}")
    return value


def parse_env_kwargs(text: str) -> dict[str, Any]:
    """``--env-kwargs`` of the command line: a YAML mapping, e.g. ``'{cache_dir: /data, verify_checksums: false}'``.

    Raises:
        ConfigError: ``text`` is not a YAML mapping of names to values.
    """
    data, _ = _parse(text, "--env-kwargs")
    if not isinstance(data, dict):
        raise ConfigError(f"--env-kwargs must be a YAML mapping such as '{{cache_dir: DIR}}', got {text!r}")
    return data


def load_config(path: str | Path, *, seeds: int | None = None, horizon: int | None = None,
                env_kwargs: dict[str, Any] | None = None, check_agents: bool = True) -> ExperimentConfig:
    """Read and check an experiment config; ``seeds``/``horizon`` override the file's, ``env_kwargs`` is
    merged over the file's (a key given in both takes the command line's value).

    Args:
        path: The YAML file.
        seeds: Command-line override of the number of seeds (an integer >= 1) or None.
        horizon: Command-line override of the horizon (an integer >= 1) or None.
        env_kwargs: Command-line keywords of the env (e.g. ``cache_dir`` of a dataset env) or None.
        check_agents: Build every agent on its batched env to check the values (no round is
            played). Off only where the caller checks them itself.

    Raises:
        ConfigError: The first problem found, as ``FILE:LINE: where: what (accepted: ...)``.
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(missing_config_message(path))
    data, located = _parse(_read_text(path), str(path))
    if not isinstance(data, dict):
        raise located.error((), f"a config is a mapping with the keys {', '.join(TOP_LEVEL_KEYS)}; got {data!r}")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise located.error((key,), catalog.unknown_name_message("key", key, TOP_LEVEL_KEYS))
    for key in REQUIRED_KEYS:
        if key not in data:
            raise located.error((), f"the key {key!r} is missing (required: {', '.join(REQUIRED_KEYS)})")
    name = str(data.get("name", path.stem))
    if not LABEL_PATTERN.fullmatch(name):
        raise located.error(("name",), f"must be letters, digits, '_', '.', '+' or '-', got {name!r}")
    imports, modules = _modules_to_import(located, data)
    if modules:  # a config is code: say what runs before it runs
        print(f"config {path} imports (runs) modules: {', '.join(modules)}", file=sys.stderr, flush=True)
    for i, module in enumerate(imports):
        try:
            catalog.import_modules([module])
        except ValueError as exc:
            raise located.error(("imports", i), str(exc)) from None
    if not isinstance(data["env"], str):
        raise located.error(("env",), f"must be an env id, got {data['env']!r}")
    try:
        env_id = catalog.check_env_id(data["env"])
    except ValueError as exc:
        raise located.error(("env",), str(exc)) from None
    command_line = dict(env_kwargs or {})
    env_kwargs = {**_mapping(located, data.get("env_kwargs"), ("env_kwargs",), "keywords of gym.make_vec"),
                  **command_line}
    for key in ("horizon", "num_envs", "vectorization_mode"):
        if key in env_kwargs:
            message = f"{key!r} is set by the runner" + (" (use the top-level 'horizon')" if key == "horizon" else "")
            if key in command_line:
                raise ConfigError(f"argument --env-kwargs: {message}")
            raise located.error(("env_kwargs", key), message)
    wrappers = _wrappers(located, data.get("wrappers"))
    config_horizon = _count(located, data, "horizon", 1)
    config_seeds = _count(located, data, "seeds", 1)
    first_seed = _count(located, data, "seed", 0) if "seed" in data else 0
    agent_entries = _mapping(located, data["agents"], ("agents",), "agent labels to agent settings")
    if not agent_entries:
        raise located.error(("agents",), "name at least one agent (see `bandit-gym agents`)")
    specs = tuple(_agent_spec(located, label, entry) for label, entry in agent_entries.items())
    config = ExperimentConfig(
        name=name, env=env_id, horizon=horizon if horizon is not None else config_horizon,
        seeds=seeds if seeds is not None else config_seeds, agents=specs, env_kwargs=env_kwargs,
        seed=first_seed, description=str(data.get("description", "")).strip(), source=str(path),
        imports=tuple(imports), wrappers=wrappers)
    if check_agents:
        _check_by_building(located, config, command_line, seeds_given=seeds is not None)
    return config


def _modules_to_import(located: _Located, data: Mapping) -> tuple[list[str], list[str]]:
    """``(imports, modules)``: the config's ``imports`` list, and every module the config will import (those,
    the module of ``env: module:EnvId`` and of each ``agent: module:ClassName``), each named once.

    Raises:
        ConfigError: ``imports`` is not a list of names, or a module is not named by dotted identifiers.
    """
    imports = data.get("imports") or []
    if isinstance(imports, str):
        imports = [imports]
    if not isinstance(imports, list) or not all(isinstance(m, str) and m for m in imports):
        raise located.error(("imports",), f"must be a list of module names (that register envs), got {imports!r}")
    named = [(("imports", i), module, "", "my_pkg.envs") for i, module in enumerate(imports)]
    if isinstance(data["env"], str) and ":" in data["env"]:
        named.append((("env",), data["env"], "env", "my_pkg.envs:MyBandit-v0"))
    agents = data["agents"] if isinstance(data["agents"], dict) else {}
    for label, entry in agents.items():
        if isinstance(entry, dict) and isinstance(entry.get("agent"), str) and ":" in entry["agent"]:
            named.append((("agents", label, "agent"), entry["agent"], "agent", "my_pkg.agents:MyAgent"))
    modules = []
    for where, value, what, example in named:
        module = value.partition(":")[0]
        if not all(part.isidentifier() for part in module.split(".")):
            shown = f"{what} {value!r}: the module {module!r}" if what else repr(value)
            raise located.error(where, f"{shown} is not a module name (accepted: dotted identifiers, such as "
                                f"{example!r}; not a relative name or a file path)")
        modules.append(module)
    return imports, list(dict.fromkeys(modules))


def missing_config_message(path: Path) -> str:
    """``config 'configs/quickstart.yml' does not exist; did you mean 'configs/quickstart.yaml'? ...``.

    The closest name among the YAML files beside ``path`` and in ``configs/`` (a wrong extension, a typo,
    or the folder left out).
    """
    candidates: dict[str, Path] = {}
    for folder in dict.fromkeys([path.parent, Path("configs"), path.parent / "configs"]):
        if folder.is_dir():
            for found in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
                candidates.setdefault(found.stem.lower() + found.suffix, found)
    wanted = path.stem.lower() + (path.suffix if path.suffix in (".yaml", ".yml") else ".yaml")
    stem = path.stem.lower()
    same_stem = [found for key, found in candidates.items() if key.rsplit(".", 1)[0] == stem]
    prefixed = [found for key, found in candidates.items() if stem and key.startswith(stem)]
    spelled = [candidates[key] for key in difflib.get_close_matches(wanted, list(candidates), n=1)]
    close = same_stem or prefixed or spelled
    hint = f"; did you mean {str(close[0])!r}?" if close else ""
    return f"config {str(path)!r} does not exist{hint} (the configs/ folder has one per experiment)"


def _wrappers(located: _Located, value: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    """A config's ``wrappers:``: a list of names or ``{Name: {keyword: value}}`` mappings, each entry checked by
    :func:`bandit_gym.feedback.check_wrapper` (what :func:`bandit_gym.feedback.apply_wrappers` refuses, a config
    refuses)."""
    from bandit_gym.feedback import check_wrapper

    if value is None:
        return ()
    if not isinstance(value, list):
        raise located.error(("wrappers",), f"must be a list such as [{{DelayedFeedback: {{delay: 100}}}}], "
                            f"got {value!r}")
    found = []
    for i, item in enumerate(value):
        try:
            found.append(check_wrapper(item, i))
        except ValueError as exc:
            raise located.error(("wrappers", i), str(exc)) from None
    return tuple(found)


def _agent_spec(located: _Located, label: str, entry: Any) -> AgentSpec:
    path = ("agents", label)
    if not LABEL_PATTERN.fullmatch(label):
        raise located.error(path, f"an agent label is letters, digits, '_', '.', '+' or '-', got {label!r}")
    entry = _mapping(located, entry, path, f"settings ({', '.join(AGENT_KEYS)})")
    for key in entry:
        if key not in AGENT_KEYS:
            raise located.error(path + (key,), catalog.unknown_name_message("agent setting", key, AGENT_KEYS)
                                + "; hyperparameters go under 'fixed' or 'grid'")
    class_name = entry.get("agent", label)
    try:
        cls = catalog.agent_class(str(class_name))
    except ValueError as exc:
        raise located.error(path + (("agent",) if "agent" in entry else ()), str(exc)) from None
    accepted = catalog.agent_hyperparameters(cls)
    fixed = _mapping(located, entry.get("fixed"), path + ("fixed",), "hyperparameter names to values")
    grid = _mapping(located, entry.get("grid"), path + ("grid",), "hyperparameter names to lists of values")
    for section, values in (("fixed", fixed), ("grid", grid)):
        for name in values:
            if name not in accepted:
                symbol = PAPER_SYMBOLS.get(name)
                message = (f"unknown hyperparameter of {class_name} {name!r}; did you mean {symbol!r} (the papers' "
                           f"{name})? (accepted: {', '.join(accepted)})" if symbol in accepted else
                           catalog.unknown_name_message(f"hyperparameter of {class_name}", name, accepted))
                raise located.error(path + (section, name), message)
    for name, values in grid.items():
        if name in fixed:
            raise located.error(path + ("grid", name), f"{name!r} is both fixed (line "
                                f"{located.lines[path + ('fixed', name)]}) and in the grid; keep one")
        if not isinstance(values, list) or not values:
            raise located.error(path + ("grid", name), f"a grid gives a non-empty list of values, got {values!r}")
        if len(set(map(repr, values))) != len(values):
            raise located.error(path + ("grid", name), f"the grid repeats a value: {values!r}")
    return AgentSpec(label=label, agent=str(class_name), fixed=fixed, grid=grid)


class WrapperError(ValueError):
    """A wrapper of the config's ``wrappers`` refused its keywords or the env; ``index``: its place in the list."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def make_env(config: ExperimentConfig, num_replicas: int, device: str) -> gym.vector.VectorEnv:
    """The native batched env of ``config`` with ``num_replicas`` replicas and the config's horizon, in the
    config's ``wrappers`` (the first innermost); the config's ``imports`` are imported first. The config check
    and the runner (:mod:`bandit_experiments.runner`) both build with it.

    The horizon governs: the episode is made as long as it (``max_episode_steps=horizon``, which ``make_vec``
    passes to the vector entry point instead of the registry's limit), so a horizon above the registry's
    ``max_episode_steps`` (10,000) plays every round instead of ending the episode early.
    """
    import gymnasium as gym  # here, with bandit_gym: reading a config imports neither

    import bandit_gym  # noqa: F401  (registers the ids)

    kwargs = dict(config.env_kwargs)
    steps = kwargs.pop("max_episode_steps", config.horizon)
    if steps != config.horizon:
        raise ValueError(f"env_kwargs.max_episode_steps: the runner plays one episode of the config's horizon "
                         f"({config.horizon}), got max_episode_steps={steps!r}; leave it out")
    catalog.import_modules(config.imports)
    env = gym.make_vec(config.env, num_envs=num_replicas, vectorization_mode="vector_entry_point",
                       horizon=config.horizon, max_episode_steps=config.horizon, device=device, **kwargs)
    for index, (name, wrapper_kwargs) in enumerate(config.wrappers):
        try:
            env = catalog.wrapper_class(name)(env, **wrapper_kwargs)
        except (ValueError, TypeError, AttributeError) as exc:
            env.close()
            raise WrapperError(index, f"{name}({', '.join(f'{k}={v!r}' for k, v in wrapper_kwargs.items())}) "
                               f"cannot wrap {config.env}'s batched env: {exc}") from None
    return env


def build_agent(spec: AgentSpec, config: ExperimentConfig, env: gym.vector.VectorEnv, device: str,
                points: list[dict[str, Any]] | None = None):
    """The agent of ``spec`` for ``points`` (default: its whole grid) x the config's seeds, as one batch on ``env``
    (:meth:`ExperimentConfig.layout`: the replicas of :class:`agents.HyperparameterGrid`)."""
    cls = catalog.agent_class(spec.agent)
    return cls(env, device=device, **spec.fixed, **config.layout(spec, points).agent_kwargs())


def _check_by_building(located: _Located, config: ExperimentConfig, command_line: Mapping[str, Any], *,
                       seeds_given: bool = False) -> None:
    """Build every agent (all grid points x seeds as one batch) on a batched env: the library checks the values.

    ``command_line``: the env keywords that ``--env-kwargs`` gave (an error naming one is blamed on it);
    ``seeds_given``: the seeds came from ``--seeds`` (a batch too large for the memory is blamed on it).
    """
    envs: dict[int, Any] = {}
    try:
        for spec in config.agents:
            replicas = config.layout(spec).num_replicas
            if replicas not in envs:
                try:
                    envs[replicas] = make_env(config, replicas, "cpu")
                except WrapperError as exc:
                    raise located.error(("wrappers", exc.index), str(exc)) from None
                except MemoryError as exc:  # the env refuses a batch larger than the memory before allocating it
                    if config.seeds == 1:  # the env's own size (env_kwargs)
                        raise _env_error(located, config, command_line, str(exc)) from None
                    message = (f"{config.env} cannot be made for {replicas:,} replicas ({config.seeds:,} seeds x "
                               f"{replicas // config.seeds:,} grid points of {spec.label}): {exc}")
                    raise (ConfigError(f"argument --seeds: {message}") if seeds_given
                           else located.error(("seeds",), message)) from None
                except (ValueError, TypeError) as exc:
                    raise _env_error(located, config, command_line, str(exc)) from None
            try:
                _build_ignoring_divergence(spec, config, envs)
            except (ValueError, TypeError) as exc:
                bad_point = _bad_point(spec, config, envs)
                raise _attribute(located, spec, str(exc), bad_point) from None
    finally:
        for env in envs.values():
            env.close()


def _env_error(located: _Located, config: ExperimentConfig, command_line: Mapping[str, Any],
               message: str) -> ConfigError:
    """The env's error, blamed on the keyword it names: ``--env-kwargs`` or the config's line of that keyword."""
    message = f"{config.env} cannot be made: {message}"
    found = [(match.start(), key) for key in config.env_kwargs
             if (match := re.search(rf"\b{re.escape(key)}\b", message)) is not None]
    if found:  # the keyword named first (a list of accepted keywords may follow)
        key = min(found)[1]
        return (ConfigError(f"argument --env-kwargs: {message}") if key in command_line
                else located.error(("env_kwargs", key), message))
    if command_line and not (set(config.env_kwargs) - set(command_line)):
        return ConfigError(f"argument --env-kwargs: {message}")
    return located.error(("env_kwargs",) if ("env_kwargs",) in located.lines else ("env",), message)


def _build_ignoring_divergence(spec: AgentSpec, config: ExperimentConfig, envs: dict) -> None:
    """Build the agent of all points; if that diverges at once (LMC-TS runs round 1's chain when built),
    build each point alone: a point that diverges is the runner's business, a bad value is ours."""
    from agents import DivergenceError

    try:
        build_agent(spec, config, envs[config.layout(spec).num_replicas], "cpu")
    except DivergenceError:
        if config.seeds not in envs:
            envs[config.seeds] = make_env(config, config.seeds, "cpu")
        for point in spec.points():
            try:
                build_agent(spec, config, envs[config.seeds], "cpu", [point])
            except DivergenceError:
                pass


def _bad_point(spec: AgentSpec, config: ExperimentConfig, envs: dict) -> tuple | None:
    """``(point, message)`` of the first grid point refused on its own (a bad value); None if every point
    builds alone (then it is the grid itself: a hyperparameter without per-replica values)."""
    from agents import DivergenceError

    if not spec.grid:
        return None
    if config.seeds not in envs:
        envs[config.seeds] = make_env(config, config.seeds, "cpu")
    for point in spec.points():
        alone = AgentSpec(spec.label, spec.agent, fixed={**spec.fixed, **point})  # one number per hyperparameter
        try:
            build_agent(alone, config, envs[config.seeds], "cpu")
        except DivergenceError:
            pass
        except (ValueError, TypeError) as exc:
            return point, str(exc)
    return None


def _attribute(located: _Located, spec: AgentSpec, message: str, bad_point: tuple | None = None) -> ConfigError:
    """The library's error, placed on the line of the hyperparameter that it names.

    ``bad_point``: a grid point refused on its own, with its message (see :func:`_bad_point`); without one,
    an error that names a grid hyperparameter is about the grid itself.
    """
    path = ("agents", spec.label)
    if bad_point is not None:
        message = bad_point[1]
    choice = _CHOICE.search(message)
    if choice is not None:  # a misspelt choice (model: linaer): the closest one
        close = catalog.closest_name(choice["value"], re.findall(r"'([^']*)'", choice["choices"]))
        message += f"; did you mean {close!r}?" if close else ""
    named = [(message.find(name), name) for name in [*spec.fixed, *spec.grid] if re.search(rf"\b{name}\b", message)]
    if not named:
        return located.error(path, f"{spec.agent} refused these settings: {message}")
    name = min(named)[1]
    if name in spec.grid:
        if bad_point is not None:
            return located.error(path + ("grid", name), message)
        return located.error(path + ("grid", name), f"{message} (a grid needs a hyperparameter that takes one value "
                             f"per replica; for one that does not, give one agent entry per value, each with "
                             f"`agent: {spec.agent}` and its own label)")
    return located.error(path + ("fixed", name), message)
