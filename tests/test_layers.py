"""The packages' import graph: no cycle between modules, and no import from a higher layer.

Layers, lowest first: ``bandit_gym`` (the envs), ``agents`` (built on bandit_gym's public API), ``bandit_experiments``
(built on both). Every import counts, at the top of a module or inside a function: an import put inside a
function to break a loop between modules is still a loop. (An import inside a function that closes no loop is
fine: the lazy imports of torch, matplotlib or ray, or of a heavy module that one command needs.)

Public: a module or name of bandit_gym none of whose dotted parts starts with ``_`` (``bandit_gym._base``,
``bandit_gym._kernels`` and ``bandit_gym.rng._offset`` are private), reached by import or as an attribute of an
imported bandit_gym module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bandit_gym", "agents", "bandit_experiments")
#: What each package may not import (beyond these, agents may use only bandit_gym's public API).
FORBIDDEN = {"bandit_gym": ("agents", "bandit_experiments"), "agents": ("bandit_experiments",),
             "bandit_experiments": ()}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    """Every module of our packages: dotted name -> file."""
    return {_module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[str, str, int]]:
    """``(module imported, name taken from it or "", line)`` for every import in the file, top level or not.

    ``from x import y`` imports module ``x.y`` where that is a module of ours, else name ``y`` of ``x``; a
    relative import is resolved against the file's package.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule, "", node.lineno) if submodule in MODULES else (base, alias.name, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports."""
    return {module: {target for target, _, _ in _imports(module, path) if target in MODULES and target != module}
            for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _loop(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One closed path through a cycle's modules, ``[a, b, ..., a]`` (breadth-first back to the first)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return paths[node] + [start]
            if target not in paths:
                paths[target] = paths[node] + [target]
                queue.append(target)
    raise AssertionError(f"no loop through {component}")


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in dotted.split("."))


def _private_attributes(path: Path) -> list[str]:
    """``alias._name`` uses of an imported bandit_gym module's private names in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {alias.asname: alias.name for alias in node.names if alias.asname}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            aliases |= {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names
                        if f"{node.module}.{alias.name}" in MODULES}
    return [f"line {node.lineno}: {aliases[node.value.id]}.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
            and aliases[node.value.id].split(".")[0] == "bandit_gym" and node.attr.startswith("_")
            and not node.attr.startswith("__")]


def test_import_graph_finds_every_module_and_import():
    graph = _graph()
    assert {"bandit_gym.rng", "agents.base", "bandit_experiments.runner", "bandit_gym.datasets.loaders"} <= set(graph)
    assert "bandit_gym.rng" in graph["agents.base"]  # from bandit_gym import rng: a submodule
    assert {"agents", "bandit_gym.wrappers"} <= graph["bandit_experiments.catalog"]  # imports inside its functions
    assert "bandit_gym.rng" in graph["bandit_gym.feedback"]  # from bandit_gym.rng import Stream: a name of it


def test_cycles_finds_a_loop_and_names_its_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _loop(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_packages_import_graph_has_no_cycle():
    graph = _graph()
    loops = [" -> ".join(_loop(graph, component)) + f"  (all of {', '.join(component)})"
             for component in _cycles(graph)]
    assert loops == [], "import cycles (imports inside functions count):\n" + "\n".join(loops)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_nothing_from_a_higher_layer(package):
    offenders = [f"{MODULES[module].relative_to(ROOT)}:{line}: {target}" + (f" ({name})" if name else "")
                 for module in MODULES if module.split(".")[0] == package
                 for target, name, line in _imports(module, MODULES[module])
                 if target.split(".")[0] in FORBIDDEN[package]]
    assert offenders == []


def test_agents_use_only_public_bandit_gym():
    offenders = []
    for module, path in MODULES.items():
        if module.split(".")[0] != "agents":
            continue
        where = path.relative_to(ROOT)
        offenders += [f"{where}:{line}: {target}" + (f" ({name})" if name else "")
                      for target, name, line in _imports(module, path)
                      if target.split(".")[0] == "bandit_gym" and (_private(target) or name.startswith("_"))]
        offenders += [f"{where}: {use}" for use in _private_attributes(path)]
    assert offenders == []
