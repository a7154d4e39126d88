"""How much of the library is speed-only code (issue 21, item 5: at most 10% of its lines).

Counts the non-blank, non-comment lines of the library (every ``.py`` file under ``bandit_gym/``,
``agents/`` and ``bandit_experiments/``) and of the code that exists only to make it faster, and prints
both and the percentage. Docstrings count as lines (they are not comments); a blank line inside a
docstring does not.

What is speed-only is listed in :data:`SPEED_ONLY` (whole files, or functions and classes by their
qualified name) with the reason and whether ``BANDIT_GYM_KERNELS=0`` switches it off, from reading the code;
the findings are in ``benchmarks/results/code_size.md``. Lines that call a kernel outside a ``_kernels.py``
(the switch's call sites) are counted as speed-only too.

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
LIBRARY = ("bandit_gym", "agents", "bandit_experiments")

#: Every speed device of the library, as (file, qualified name or None for the whole file, switched off by
#: ``BANDIT_GYM_KERNELS=0``, what it is and what it replaces). A device's helpers are entries of their own
#: (``helper of ...``), so each line of a file is counted once.
SPEED_ONLY: list[tuple[str, str | None, bool, str]] = [
    # bandit_gym.rng's compiled SplitMix64 and Box-Muller (each decided in the first line of its rng function)
    ("bandit_gym/_rng_kernels.py", "random_words", True, "numba loop of rng.random_words (the same integers)"),
    ("bandit_gym/_rng_kernels.py", "_starts", True, "helper of the rng kernels: each block's first word"),
    ("bandit_gym/_rng_kernels.py", "_word", True, "helper of the rng kernels: the compiled SplitMix64"),
    ("bandit_gym/_rng_kernels.py", "_words", True, "helper of random_words"),
    ("bandit_gym/_rng_kernels.py", "_box_muller_input", True, "helper of the rng kernels: the compiled Box-Muller "
     "inputs"),
    ("bandit_gym/_rng_kernels.py", "normal", True, "numba loop of rng.normal with float32 trigonometry "
     "(rng.approx_normal, the agents' draws)"),
    ("bandit_gym/_rng_kernels.py", "_normal_rows", True, "helper of normal"),
    ("bandit_gym/_rng_kernels.py", "unit_normal", True, "compiled rng.unit_normal (three steps per pass)"),
    ("bandit_gym/_rng_kernels.py", "_box_muller_inputs", True, "helper of unit_normal"),
    ("bandit_gym/_rng_kernels.py", "_unit_rows", True, "helper of unit_normal"),
    # the envs' devices
    ("bandit_gym/_kernels.py", "unit_normal", True, "rng.unit_normal of several counters per call for the "
     "synthetic envs' arms, compiled"),
    ("bandit_gym/_kernels.py", "linear_scores", True, "numba loop of the synthetic envs' x . theta*"),
    ("bandit_gym/_kernels.py", "_scores", True, "helper of linear_scores"),
    ("bandit_gym/_kernels.py", "best_arms", True, "numba loop of torch.max(expected, dim=2)"),
    ("bandit_gym/_kernels.py", "_best_arms", True, "helper of best_arms"),
    ("bandit_gym/_kernels.py", "draws_per_call", True, "several counters of a context stream per generator call "
     "(one is the definition; read when the env is built)"),
    ("bandit_gym/_kernels.py", "per_counter", True, "helper of draws_per_call: each counter's sums on their own"),
    ("bandit_gym/_kernels.py", "block_draws_numpy", True, "a cached numpy view of a single env's reward draws"),
    ("bandit_gym/synthetic.py", "SyntheticBanditSimulator._per_draw", True,
     "per-counter sums where a call drew several counters (one with the switch off, read when the env is built)"),
    ("bandit_gym/_base.py", "BanditSimulator._round_arrays", False, "a single env's round as numpy views of the "
     "drawn block (no torch call a round; numpy_rewards envs)"),
    ("bandit_gym/_base.py", "BanditSimulator.next_rounds", False, "up to a chunk of rounds per call (the rounds of "
     "as many steps, bit for bit)"),
    ("agents/loop/rounds.py", "ChunkSteps", False, "steps handed out from next_rounds chunks (the same numbers as "
     "env.step)"),
    # the agents' devices
    ("agents/_kernels.py", "linear_langevin", True, "numba loop of langevin_steps with the linear model"),
    ("agents/_kernels.py", "_linear_langevin", True, "helper of linear_langevin"),
    ("agents/_kernels.py", "linear_langevin_affine", True, "langevin_steps (linear model) as one baddbmm a step, "
     "off the CPU (enabled_off_cpu)"),
    ("agents/_kernels.py", "linear_scores", True, "numba loop of agents.models.reward.linear_scores"),
    ("agents/_kernels.py", "_linear_scores", True, "helper of linear_scores"),
    ("agents/_kernels.py", "add_observation", True, "numba loop of agents.models.reward.add_observation"),
    ("agents/_kernels.py", "_add_observation", True, "helper of add_observation"),
    ("agents/_kernels.py", "act_backward", True, "MLPModel's hand-written backward pass (autograd is the "
     "definition)"),
    ("agents/_kernels.py", "mlp_backward", True, "hand-written backward pass (as above)"),
    ("agents/_kernels.py", "outer_rows", True, "hand-written backward pass (as above)"),
    ("agents/_kernels.py", "_squared", True, "hand-written backward pass (as above)"),
    ("agents/_kernels.py", "mlp_gradient", True, "hand-written MLPModel.gradient"),
    ("agents/_kernels.py", "mlp_gradient_squares", True, "hand-written MLPModel.gradient_squares"),
    ("agents/_kernels.py", "mlp_arm_gradients", True, "hand-written MLPModel.arm_gradients"),
    ("agents/_kernels.py", "mlp_gradient_norms", True, "hand-written MLPModel.gradient_norms"),
    ("agents/_kernels.py", "_grouped", True, "block-aware first layer (the dense product is the definition)"),
    ("agents/_kernels.py", "_padded", True, "block-aware first layer (as above)"),
    ("agents/_kernels.py", "block_matmul", True, "block-aware first layer's x W^T"),
    ("agents/_kernels.py", "block_weight_gradient", True, "block-aware first layer's weight gradient"),
    ("agents/_kernels.py", "block_outer_rows", True, "block-aware first layer's per-row gradients"),
    ("agents/models/blocks.py", None, False, "block_arms rows' storage form (d / N values a row, the user's setting); "
     "with the switch off the rows are written out and the dense layer runs"),
    ("agents/models/mlp.py", "MLPModel.history_fields", False, "block_arms rows stored in block form (as above)"),
    ("agents/models/mlp.py", "MLPModel.add", False, "block_arms rows stored in block form (as above)"),
    ("agents/models/mlp.py", "MLPModel.rows", False, "block_arms rows stored in block form (as above)"),
    ("agents/models/mlp.py", "MLPModel._as_rows", True, "block form for the kernels' first layer, dense rows when off"),
    ("agents/models/mlp.py", "MLPModel.gradient", True, "dispatch to the hand-written backward (else autograd)"),
    ("agents/models/mlp.py", "MLPModel.gradient_squares", True,
     "dispatch to the hand-written backward (else autograd)"),
    ("agents/models/mlp.py", "MLPModel.gradient_norms", True, "dispatch to the hand-written backward (else autograd)"),
    ("agents/base.py", "_replica_index", False, "a cache: arange(R) made once per size and device"),
    ("agents/base.py", "BanditAgent._argmax", False, "a shortcut: on CPU, no tie-breaking draws where no replica "
     "has a tie (random_argmax's answer, whatever the draws)"),
    # the rest of the kernel files: their docstrings, the switch, constants
    ("bandit_gym/_rng_kernels.py", None, True, "the rest of the file (docstring, enabled(), SplitMix64 constants)"),
    ("bandit_gym/_kernels.py", None, True, "the rest of the file (docstring, imports)"),
    ("agents/_kernels.py", None, True, "the rest of the file (docstring, enabled(), enabled_off_cpu())"),
]

#: A kernel call outside a ``_kernels.py`` (``_kernels.``, ``_rng_kernels.``, rng's ``kernels.``): the switch's
#: call sites. (Upper-case names are constants, ``enabled`` is the switch itself.)
_CALL_SITE = re.compile(r"kernels\.(?!enabled\b)[a-z_]")
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
    print("lines (with docstrings / code only)  speed device (file:function)")
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
