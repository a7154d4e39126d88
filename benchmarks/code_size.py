"""How much of the library is speed-only code (issue 21, item 5: at most 10% of its lines).

Counts the non-blank, non-comment lines of the library (every ``.py`` file under ``bandit_gym/``,
``agents/`` and ``experiments/``) and of the code that exists only to make it faster, and prints
both and the percentage. Docstrings count as lines (they are not comments); a blank line inside a
docstring does not.

What is speed-only is listed in :data:`SPEED_ONLY` (whole files, or functions and classes by their
qualified name) with the reason, from reading the code; the findings are in
``benchmarks/results/code_size.md``. Lines that call a kernel outside a ``_kernels.py`` (the
switch's call sites, ``_kernels.`` or ``_compiled()``) are counted as speed-only too.

Usage::

    python benchmarks/code_size.py
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("bandit_gym", "agents", "experiments")

#: (file, qualified name or None for the whole file, switched off by BANDIT_GYM_KERNELS=0, why it is speed-only).
SPEED_ONLY: list[tuple[str, str | None, bool, str]] = [
    ("agents/_kernels.py", None, True, "numba loops of torch functions; MLPModel's hand-written backward pass "
     "(autograd is the definition); the block-aware first layer's products (the dense product is)"),
    ("bandit_gym/_kernels.py", None, True, "numba loops of torch functions; several counters of a stream per "
     "generator call (one is the definition); a cached numpy view of the reward draws"),
    ("agents/blocks.py", None, False, "block_arms rows' storage form (d / N values a row, the user's setting); "
     "with the switch off the rows are written out and the dense layer runs"),
    ("agents/mlp.py", "MLPModel.history_fields", False, "block_arms rows stored in block form (as above)"),
    ("agents/mlp.py", "MLPModel.add", False, "block_arms rows stored in block form (as above)"),
    ("agents/mlp.py", "MLPModel.rows", False, "block_arms rows stored in block form (as above)"),
    ("agents/mlp.py", "MLPModel._as_rows", True, "block form for the kernels' first layer, dense rows when off"),
    ("agents/mlp.py", "MLPModel.gradient", True, "dispatch to the hand-written backward (else autograd)"),
    ("agents/mlp.py", "MLPModel.gradient_squares", True, "dispatch to the hand-written backward (else autograd)"),
    ("agents/mlp.py", "MLPModel.gradient_norms", True, "dispatch to the hand-written backward (else autograd)"),
    ("bandit_gym/synthetic.py", "SyntheticBanditSimulator._per_draw", True,
     "per-counter sums where a call drew several counters (one with the switch off, read when the env is built)"),
]

#: A kernel call outside a ``_kernels.py``: the switch's call sites.
_CALL_SITE = re.compile(r"\b_kernels\.(?!enabled\b)\w|\b_compiled\(\)")
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}


def docstring_lines(source: str) -> set[int]:
    """The 1-based numbers of the lines of the module's, classes' and functions' docstrings."""
    rows: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                rows.update(range(first.lineno, first.end_lineno + 1))
    return rows


def code_lines(source: str, docstrings: bool = True) -> set[int]:
    """The 1-based numbers of the non-blank, non-comment lines of Python ``source`` (a line of a multi-line
    string counts unless it is blank); ``docstrings=False`` leaves the docstrings' lines out too."""
    text = source.splitlines()
    rows: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIP:
            rows.update(range(token.start[0], token.end[0] + 1))
    rows = {row for row in rows if row <= len(text) and text[row - 1].strip()}
    return rows if docstrings else rows - docstring_lines(source)


def count_lines(source: str, first: int = 1, last: int | None = None, docstrings: bool = True) -> int:
    """Non-blank, non-comment lines of ``source`` between lines ``first`` and ``last`` (1-based, inclusive)."""
    last = len(source.splitlines()) if last is None else last
    return sum(first <= row <= last for row in code_lines(source, docstrings))


def span(source: str, qualname: str) -> tuple[int, int]:
    """First and last line of the function or class ``qualname`` (``"Class.method"``), decorators included;
    a ValueError if ``source`` has none."""
    nodes: list = ast.parse(source).body
    node = None
    for name in qualname.split("."):
        node = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            raise ValueError(f"qualname {qualname!r} not found")
        nodes = node.body
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return first, node.end_lineno


def library_files(root: Path = ROOT) -> list[Path]:
    """The library's ``.py`` files, sorted."""
    return sorted(p for package in LIBRARY for p in (root / package).rglob("*.py"))


def measure(root: Path = ROOT, docstrings: bool = True) -> dict:
    """Library lines, speed-only lines (per entry of :data:`SPEED_ONLY` and the call sites) and the percentage;
    ``docstrings=False`` counts code lines only."""
    sources = {p.relative_to(root).as_posix(): p.read_text() for p in library_files(root)}
    library = sum(len(code_lines(s, docstrings)) for s in sources.values())
    speed: dict[tuple[str, str | None], int] = {}
    counted: dict[str, set[int]] = {}
    for path, qualname, _, _ in SPEED_ONLY:
        rows = code_lines(sources[path], docstrings)
        if qualname is not None:
            first, last = span(sources[path], qualname)
            rows = {row for row in rows if first <= row <= last}
        speed[(path, qualname)] = len(rows - counted.get(path, set()))
        counted.setdefault(path, set()).update(rows)
    call_sites = 0
    for path, source in sources.items():
        if path.endswith("_kernels.py"):
            continue
        text = source.splitlines()
        sites = {row for row in code_lines(source, docstrings) if _CALL_SITE.search(text[row - 1])}
        sites -= counted.get(path, set())
        call_sites += len(sites)
    total = sum(speed.values()) + call_sites
    return {"library": library, "speed_only": speed, "call_sites": call_sites, "speed_total": total,
            "percent": 100.0 * total / library}


def main() -> None:
    result, code = measure(), measure(docstrings=False)
    print("lines (with docstrings / code only)  speed-only part")
    for (path, qualname, switched, why) in SPEED_ONLY:
        switch = "on the switch" if switched else "NOT on BANDIT_GYM_KERNELS"
        key = (path, qualname)
        print(f"{result['speed_only'][key]:5d} / {code['speed_only'][key]:4d}  "
              f"{path}{'' if qualname is None else ':' + qualname}  ({switch}; {why})")
    print(f"{result['call_sites']:5d} / {code['call_sites']:4d}  kernel call sites outside _kernels.py (on the switch)")
    for name, r in (("with docstrings", result), ("code only, docstrings left out", code)):
        print(f"{name}: library {r['library']} lines ({', '.join(LIBRARY)}), speed-only {r['speed_total']} "
              f"({r['percent']:.1f}%; target: at most 10%)")


if __name__ == "__main__":
    main()
