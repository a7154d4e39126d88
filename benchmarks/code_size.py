"""How much of the library is speed-only code (issue 21, item 5: at most 10% of its lines).

Counts the non-blank, non-comment lines of the library (every ``.py`` file under ``bandit_gym/``,
``agents/`` and ``bandit_experiments/``) and of the code that exists only to make it faster, and prints
both and the percentage. Docstrings count as lines (they are not comments); a blank line inside a
docstring does not.

What is speed-only is listed in :data:`SPEED_ONLY` (whole files, or functions, classes and module-level names by
their qualified name) with the reason, whether ``BANDIT_GYM_KERNELS=0`` switches it off, from reading the code, and
what it earns: the gains ``benchmarks/speed_devices.py`` recorded (read from
``benchmarks/results/speed_devices.md``) or where else it is recorded. The findings are in
``benchmarks/results/code_size.md``, which ``--write`` writes from the same figures (the page is generated, never
edited by hand). Lines that call a kernel outside a ``_kernels.py`` (the switch's call sites) are counted as
speed-only too.

Usage::

    python benchmarks/code_size.py            # print the listing
    python benchmarks/code_size.py --write    # and write benchmarks/results/code_size.md
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("bandit_gym", "agents", "bandit_experiments")

#: Where :data:`SPEED_ONLY`'s gains are recorded: ``python benchmarks/speed_devices.py``'s table.
GAINS = ROOT / "benchmarks" / "results" / "speed_devices.md"
#: The page :func:`page` writes (``--write``).
PAGE = ROOT / "benchmarks" / "results" / "code_size.md"
#: What a device must earn on a setting it serves (the developers' guide).
THRESHOLD = 1.5
_HELPER = "helper"  # a device's helper: its gain is the device's
_UNMEASURED = "not measured"

#: Every speed device of the library, as (file, qualified name or None for the whole file, switched off by
#: ``BANDIT_GYM_KERNELS=0``, what it is and what it replaces, what it earns). A device's helpers are entries of their
#: own (``helper``), so each line of a file is counted once. What it earns: the rows of
#: ``benchmarks/results/speed_devices.md`` that time it (``rows: name name``; the gains are read from there), or where
#: else it is recorded, or ``not measured``.
SPEED_ONLY: list[tuple[str, str | None, bool, str, str]] = [
    # bandit_gym.rng's compiled SplitMix64 and Box-Muller and its chunk cache (each decided in the first line of
    # its rng function)
    ("bandit_gym/_rng_kernels.py", "random_words", True, "numba loop of rng.random_words (the same integers)",
     "rows: random_words random_words-ties random_words-minibatch"),
    ("bandit_gym/_rng_kernels.py", "_starts", True, "helper of the rng kernels: each counter's first word", _HELPER),
    ("bandit_gym/_rng_kernels.py", "_word", True, "helper of the rng kernels: the compiled SplitMix64", _HELPER),
    ("bandit_gym/_rng_kernels.py", "_words", True, "helper of random_words", _HELPER),
    ("bandit_gym/_rng_kernels.py", "uniform", True, "rng.uniform's floats in one loop (the same floats: the "
     "definition converts the words in four torch calls)", "rows: uniform uniform-minibatch"),
    ("bandit_gym/_rng_kernels.py", "_uniforms", True, "helper of uniform", _HELPER),
    ("bandit_gym/_rng_kernels.py", "_box_muller_input", True, "helper of the rng kernels: the compiled Box-Muller "
     "inputs", _HELPER),
    ("bandit_gym/_rng_kernels.py", "normal", True, "numba loop of rng.normal with float32 trigonometry "
     "(rng.approx_normal, the agents' draws)", "rows: approx_normal"),
    ("bandit_gym/_rng_kernels.py", "_normal_rows", True, "helper of normal", _HELPER),
    ("bandit_gym/_rng_kernels.py", "unit_normal", True, "compiled rng.unit_normal (three steps per pass)",
     "rows: unit_normal-single unit_normal-batched"),
    ("bandit_gym/_rng_kernels.py", "_box_muller_inputs", True, "helper of unit_normal", _HELPER),
    ("bandit_gym/_rng_kernels.py", "_unit_rows", True, "helper of unit_normal", _HELPER),
    ("bandit_gym/_rng_kernels.py", "chunk_draws", True, "rng.ChunkDraws' chunk kept in hand for its rounds (the "
     "definition draws a round's draws each round)", "rows: chunk_draws"),
    # the envs' devices (each decided in the first line of its torch function)
    ("bandit_gym/_kernels.py", "unit_normal", True, "synthetic._unit_normal_counters (the arm features), compiled",
     "rows: unit_normal-single unit_normal-batched"),
    ("bandit_gym/_kernels.py", "linear_scores", True, "numba loop of the synthetic envs' x . theta* (_scores)",
     "rows: linear_scores-single linear_scores-batched"),
    ("bandit_gym/_kernels.py", "_scores", True, "helper of linear_scores", _HELPER),
    ("bandit_gym/_kernels.py", "best_arms", True, "numba loop of _base.best_arms (amax and the first argmax)",
     "rows: best_arms-single best_arms-batched best_arms-1000"),
    ("bandit_gym/_kernels.py", "_best_arms", True, "helper of best_arms", _HELPER),
    ("bandit_gym/_kernels.py", "draws_per_call", True, "several counters of a context stream per generator call "
     "(synthetic._counters_per_call: 1 is the definition; read when the env is built)", "rows: draws_per_call"),
    ("bandit_gym/_kernels.py", "per_counter", True, "helper of draws_per_call: each counter's sums on their own",
     _HELPER),
    ("bandit_gym/synthetic.py", "SyntheticBanditSimulator._per_draw", True,
     "helper of draws_per_call (per_counter where a call drew several counters)", _HELPER),
    ("bandit_gym/_kernels.py", "numpy_step", True, "a single env's round in numpy (BanditSimulator.step with an int "
     "on CPU, numpy_rewards envs)", "rows: numpy_step numpy_step-fixed numpy_step-logistic"),
    ("bandit_gym/_kernels.py", "round_arrays", True, "helper of numpy_step: numpy views of the chunk, made once "
     "(BanditSimulator._round_arrays)", _HELPER),
    ("bandit_gym/_kernels.py", "chunk_draws_numpy", True, "helper of numpy_step: the reward draws' numpy view",
     _HELPER),
    ("bandit_gym/_base.py", "BanditSimulator.next_rounds", False, "up to a chunk of rounds per call (the rounds of "
     "as many steps, bit for bit; also the envs' public next_rounds)", "rows: chunks chunks-10"),
    ("bandit_gym/datasets/loaders.py", "_CACHE", False, "a loaded data set kept per process (a second env of the "
     "same data reads and preprocesses nothing)", _UNMEASURED),
    ("agents/loop/rounds.py", "ChunkSteps", False, "steps handed out from next_rounds chunks (the same numbers as "
     "env.step)", "rows: chunks chunks-10"),
    # the agents' devices
    ("agents/_kernels.py", "linear_langevin", True, "numba loop of langevin_steps with the linear model (decided in "
     "the linear chain's function, agents/chains/langevin.py)", "rows: linear_langevin"),
    ("agents/_kernels.py", "_linear_langevin", True, "helper of linear_langevin", _HELPER),
    ("agents/_kernels.py", "linear_langevin_affine", True, "langevin_steps (linear model) as one baddbmm a step, "
     "off the CPU (enabled_off_cpu; decided with linear_langevin)",
     "2.8x / 3.4x (LMC-TS, 1,000 replicas, one H100: benchmarks/results/gpu.md)"),
    ("agents/_kernels.py", "linear_scores", True, "numba loop of agents.models.reward.linear_scores",
     "rows: agents-linear_scores agents-linear_scores-160"),
    ("agents/_kernels.py", "_linear_scores", True, "helper of linear_scores", _HELPER),
    ("agents/_kernels.py", "add_observation", True, "numba loop of agents.models.reward.add_observation (the same "
     "bits; one torch call for seven: without it linear LMC-TS makes 26 torch calls a round, over issue 39's 20, "
     "tests/agents/test_round_cost.py)", "rows: add_observation add_observation-160"),
    ("agents/_kernels.py", "_add_observation", True, "helper of add_observation", _HELPER),
    ("agents/_kernels.py", "enabled_with_float64", True, "helper of add_outer (the switch, with V float64)", _HELPER),
    *[entry for name, what in (("ridge_update", "agents.linear.ridge_update (LinUCB, EpsGreedy)"),
                               ("potter_update", "agents.linear.potter_update (LinTS)"),
                               ("add_outer", "agents.linear.add_outer (V + x x^T in float64)"),
                               ("add_feature_sums", "agents.linear.add_feature_sums"),
                               ("ucb_scores", "agents.linear.ucb_scores (LinUCB, UCB-GLM, the discounted and "
                                "sliding-window LinUCBs)"))
      for entry in (("agents/_kernels.py", name, True, f"numba loop of {what}", f"rows: {name} {name}-10 {name}-100"),
                    ("agents/_kernels.py", f"_{name}", True, f"helper of {name}", _HELPER))],
    ("agents/_kernels.py", "act_backward", True, "helper of MLPModel's hand-written backward pass", _HELPER),
    ("agents/_kernels.py", "mlp_backward", True, "helper of the hand-written backward pass", _HELPER),
    ("agents/_kernels.py", "outer_rows", True, "helper of the hand-written backward pass", _HELPER),
    ("agents/_kernels.py", "_squared", True, "helper of the hand-written backward pass", _HELPER),
    ("agents/_kernels.py", "mlp_gradient", True, "hand-written MLPModel.gradient (autograd is the definition)",
     "rows: mlp_gradient"),
    ("agents/_kernels.py", "mlp_gradient_squares", True, "hand-written MLPModel.gradient_squares",
     "rows: mlp_gradient_squares"),
    ("agents/_kernels.py", "mlp_arm_gradients", True, "hand-written MLPModel.arm_gradients", "rows: mlp_arm_gradients"),
    ("agents/_kernels.py", "mlp_gradient_norms", True, "hand-written MLPModel.gradient_norms",
     "rows: mlp_gradient_norms"),
    ("agents/_kernels.py", "_grouped", True, "helper of the block-aware first layer", _HELPER),
    ("agents/_kernels.py", "_padded", True, "helper of the block-aware first layer", _HELPER),
    ("agents/_kernels.py", "block_matmul", True, "block-aware first layer's x W^T (the dense product is the "
     "definition; decided in MLPModel._as_rows, by the rows' form)",
     "1.2x (LMC-TS) to 1.8x (NeuralTS) a round of CIFAR10-sized rows "
     "(benchmarks/results/cifar_size.md)"),
    ("agents/_kernels.py", "block_weight_gradient", True, "block-aware first layer's weight gradient",
     "with block_matmul (benchmarks/results/cifar_size.md)"),
    ("agents/_kernels.py", "block_outer_rows", True, "block-aware first layer's per-row gradients",
     "with block_matmul (benchmarks/results/cifar_size.md)"),
    ("agents/models/blocks.py", None, False, "block_arms rows' storage form (d / N values a row, the user's setting); "
     "with the switch off the rows are written out and the dense layer runs", "memory, not time: a CIFAR10 row "
     "is 3,072 values, not 30,720"),
    ("agents/models/mlp.py", "MLPModel.history_fields", False, "block_arms rows stored in block form (as above)",
     _HELPER),
    ("agents/models/mlp.py", "MLPModel.add", False, "block_arms rows stored in block form (as above)", _HELPER),
    ("agents/models/mlp.py", "MLPModel.rows", False, "block_arms rows stored in block form (as above)", _HELPER),
    ("agents/models/mlp.py", "MLPModel._as_rows", True, "block form for the kernels' first layer, dense rows when off",
     _HELPER),
    ("agents/models/mlp.py", "MLPModel.gradient", True, "dispatch to the hand-written backward (else autograd)",
     _HELPER),
    ("agents/models/mlp.py", "MLPModel.gradient_squares", True,
     "dispatch to the hand-written backward (else autograd)", _HELPER),
    ("agents/models/mlp.py", "MLPModel.gradient_norms", True, "dispatch to the hand-written backward (else autograd)",
     _HELPER),
    ("agents/base.py", "_replica_index", False, "a cache: arange(R) made once per size and device (one "
     "torch call a round fewer for every agent: each round-cost bound in tests/agents/test_round_cost.py counts it)",
     "rows: replica_index"),
    ("agents/_kernels.py", "unique_argmax", True, "a shortcut of BanditAgent._argmax, one numba loop: on CPU, no "
     "tie-breaking draws where no replica has a tie (random_argmax's answer, whatever the draws)",
     "rows: argmax-shortcut argmax-shortcut-100"),
    ("agents/_kernels.py", "_unique_argmax", True, "helper of unique_argmax", _HELPER),
    ("agents/base.py", "_RoundLog", False, "the run's per-round values in chunks of 4,096 rows on the values' device, "
     "moved to the host once at the end (no read to the host a round)", "rows: round_log round_log-10"),
    ("agents/models/feelgood.py", "_ArmSets", True, "FG-LMC-TS's arm sets, each run of equal sets stored once "
     "(the definition, switch off: one set a round; the closed-form gradient scores each stored set once a step)",
     "rows: feel_good_gradient-fixed"),
    ("agents/models/feelgood.py", "_best_arms", True, "helper of the feel-good term's closed-form gradient", _HELPER),
    ("agents/models/feelgood.py", "FeelGood.feel_good_gradient", True, "the feel-good term's closed-form gradient "
     "for linear and logistic scores (autograd is the definition; the whole method counted)",
     "rows: feel_good_gradient feel_good_gradient-fixed"),
    # the replica groups: per-replica kernels on the policy's threads (called from kernels only: off with the switch)
    ("bandit_gym/threads.py", "for_each", True, "replica groups on the policy's threads (helpers kept in a pool); "
     "one thread runs them in order", "rows: replica-groups-draws replica-groups-draws-1000 "
     "replica-groups-linucb-1000 replica-groups-lmcts-1000"),
    ("bandit_gym/threads.py", "by_replicas", True, "a compiled per-replica kernel split into replica groups "
     "(for_each)", "rows: replica-groups-linucb-1000 replica-groups-lmcts-1000"),
    ("bandit_gym/threads.py", "_helpers", True, "helper of for_each: the pool of helper threads", _HELPER),
    ("bandit_gym/threads.py", "_forget_helpers", True, "helper of for_each: no pool in a forked child", _HELPER),
    ("bandit_gym/threads.py", "_group_choice", True, "helper of for_each: how many threads the groups get",
     _HELPER),
    ("bandit_gym/threads.py", "group_threads", True, "helper of for_each", _HELPER),
    ("bandit_gym/_rng_kernels.py", "_normals", True, "helper of normal (one replica group's words and normals)",
     _HELPER),
    # the rest of the kernel files: their docstrings, the switch, constants
    ("bandit_gym/_rng_kernels.py", None, True, "the rest of the file (docstring, enabled(), SplitMix64 constants)",
     _HELPER),
    ("bandit_gym/_kernels.py", None, True, "the rest of the file (docstring, imports)", _HELPER),
    ("agents/_kernels.py", None, True, "the rest of the file (docstring, enabled(), enabled_off_cpu())", _HELPER),
]

#: Why a device that does not earn :data:`THRESHOLD` on its best recorded row is kept (the page prints it); a device
#: under the threshold and not here is printed as one to remove.
KEPT_UNDER_THRESHOLD: dict[tuple[str, str | None], str] = {
    ("bandit_gym/_kernels.py", "numpy_step"): "undecided: bit for bit, so removing it changes no number; kept while a "
    "single env's steps per second are at issue 21's target (benchmarks/results/env_throughput.md)",
    ("bandit_gym/_base.py", "BanditSimulator.next_rounds"): "issue 39, item 1's deliverable (the envs' public "
    "next_rounds: a chunk of rounds bit for bit as many steps)",
    ("agents/loop/rounds.py", "ChunkSteps"): "issue 39, item 1's deliverable (learn and the runner use next_rounds)",
    ("agents/_kernels.py", "linear_scores"): "not bit for bit: removing it changes the agents' numbers (float32 sums "
    "in another order), which a refactor may not do",
    ("agents/_kernels.py", "add_observation"): "one torch call for seven: linear LMC-TS's round within issue 39's "
    "20 calls (26 without: tests/agents/test_round_cost.py)",
    ("agents/base.py", "_RoundLog"): "issue 39, item 2: no read to the host a round (a wait for the device on a GPU: "
    "not measured, no GPU lent); on CPU it is slower than numpy rows written each round",
    ("agents/base.py", "_replica_index"): "near the threshold (1.3x to 1.5x over runs); one torch call a round fewer "
    "for every agent",
    ("agents/_kernels.py", "mlp_gradient"): "straddles the threshold over runs (1.4x to 1.5x); not bit for bit with "
    "autograd: removing it changes the neural agents' numbers",
}

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
    """First and last line of the function, class or module-level assignment ``qualname`` (``"Class.method"``),
    decorators included; a ValueError if ``source`` has none."""
    nodes: list = ast.parse(source).body
    node = None
    for name in qualname.split("."):
        node = next((n for n in nodes if _name(n) == name), None)
        if node is None:
            raise ValueError(f"qualname {qualname!r} not found")
        nodes = getattr(node, "body", [])
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno


def _name(node: ast.AST) -> str | None:
    """The name a function, class or (annotated) assignment to one name defines, else None."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else None


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
    for path, qualname, *_ in SPEED_ONLY:
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


def recorded_gains(path: Path = GAINS) -> dict[str, str]:
    """Each row of ``benchmarks/results/speed_devices.md`` and its gain (``{"best_arms-single": "0.72x"}``); empty
    where the file is missing."""
    gains = {}
    if path.exists():
        for line in path.read_text().splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) >= 7 and cells[6].endswith("x"):
                gains[cells[0]] = cells[6]
    return gains


def gain_text(measured: str, gains: dict[str, str]) -> str:
    """What a device earns as printed: its rows' gains read from the record, or the text as written."""
    if not measured.startswith("rows: "):
        return measured
    rows = measured.removeprefix("rows: ").split()
    shown = ", ".join(f"{row} {gains.get(row, 'not run')}" for row in rows)
    return f"{shown} ({GAINS.relative_to(ROOT).as_posix()})"


def verdict(measured: str, gains: dict[str, str]) -> str:
    """Whether a device earns :data:`THRESHOLD` on its best recorded row: ``earns``, ``under 1.5x``, ``not run``,
    or, where its gain is recorded elsewhere or not at all, ``see gain`` and ``not measured``."""
    if measured == _HELPER:
        return "helper"
    if measured == _UNMEASURED:
        return "not measured"
    if not measured.startswith("rows: "):
        return "see gain"
    values = [float(gains[row].rstrip("x")) for row in measured.removeprefix("rows: ").split() if row in gains]
    if not values:
        return "not run"
    return "earns" if max(values) >= THRESHOLD else f"under {THRESHOLD}x"


def _verdict_text(key: tuple[str, str | None], measured: str, gains: dict[str, str]) -> str:
    """:func:`verdict`, with the reason a device under the threshold is kept, or ``to remove``."""
    text = verdict(measured, gains)
    if text != f"under {THRESHOLD}x":
        return text
    return f"{text}: kept: {KEPT_UNDER_THRESHOLD[key]}" if key in KEPT_UNDER_THRESHOLD else f"**{text}: to remove**"


def _record_header(path: Path = GAINS) -> str:
    """The machine, load and date line of the gains record (its first paragraph after the title), or a note."""
    if not path.exists():
        return "(no record: run `python benchmarks/speed_devices.py`)"
    paragraphs = [p.strip() for p in path.read_text().split("\n\n") if p.strip() and not p.startswith(("#", "|"))]
    return paragraphs[0] if paragraphs else "(no header in the record)"


def _commit() -> str:
    """The commit the counts are of, ``+ local changes`` where the library's files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *LIBRARY], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "a tree outside git"
    return f"commit {head}" + (" + local changes" if dirty else "")


def page(result: dict, code: dict, gains: dict[str, str], commit: str) -> str:
    """``benchmarks/results/code_size.md``: the totals, then one row per entry of :data:`SPEED_ONLY`."""
    def name(path: str, qualname: str | None) -> str:
        return f"`{path}`" if qualname is None else f"`{path}:{qualname}`"

    switched = {True: "on", False: "**not on**"}
    devices = [entry for entry in SPEED_ONLY if entry[4] != _HELPER]
    counts = {kind: [name(p, q) for p, q, _, _, m in devices if verdict(m, gains) == kind]
              for kind in ("earns", f"under {THRESHOLD}x", "not measured", "not run", "see gain")}
    lines = [
        "# Speed-only code: how much, where, what `BANDIT_GYM_KERNELS=0` switches off, and what each device earns",
        "",
        "Written by `python benchmarks/code_size.py --write` (do not edit by hand), counted on the library at "
        f"{commit}. Library: every `.py` file under {', '.join(f'`{p}/`' for p in LIBRARY)}; a line counts unless "
        "blank or a comment. Speed-only: the entries of `SPEED_ONLY` in the script (code whose removal would leave "
        "the numbers of the plain torch definition), plus the lines outside a `_kernels.py` that call a kernel. "
        "A line count: the machine does not matter.",
        "",
        f"What each device earns is read from `{GAINS.relative_to(ROOT).as_posix()}`, the record of "
        f"`python benchmarks/speed_devices.py`: {_record_header()}",
        "",
        "| | library lines | speed-only lines | on the switch | not on the switch | kernel call sites | share |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    not_on = {}
    for label, r in (("with docstrings", result), ("code only (docstrings left out)", code)):
        not_on[label] = sum(r["speed_only"][(p, q)] for p, q, s, *_ in SPEED_ONLY if not s)
        lines.append(f"| {label} | {r['library']:,} | {r['speed_total']:,} | {r['speed_total'] - not_on[label]:,} | "
                     f"{not_on[label]:,} | {r['call_sites']} | {r['percent']:.1f}% |")
    lines += [
        "",
        f"Target (issue 21, item 5): at most 10%. Of the {len(devices)} devices (helpers counted with their device), "
        f"{len(counts['earns'])} earn {THRESHOLD}x on their best recorded row; "
        f"{len(counts[f'under {THRESHOLD}x'])} do not "
        f"({', '.join(counts[f'under {THRESHOLD}x']) or 'none'}); "
        f"{len(counts['see gain'])} are measured outside the record (see their gain); "
        f"{len(counts['not measured'])} are not measured ({', '.join(counts['not measured']) or 'none'}); "
        f"{len(counts['not run'])} have rows the record lacks. Lines not on the switch: "
        f"{not_on['with docstrings']:,} "
        "(with docstrings).",
        "",
        "| device | lines (with docstrings / code) | `BANDIT_GYM_KERNELS=0` | what it is | what it earns | verdict |",
        "|---|---:|---|---|---|---|",
    ]
    for path, qualname, flag, why, measured in SPEED_ONLY:
        key = (path, qualname)
        earns = "" if measured == _HELPER else gain_text(measured, gains)
        lines.append(f"| {name(path, qualname)} | {result['speed_only'][key]} / {code['speed_only'][key]} | "
                     f"{switched[flag]} | {why} | {earns} | {_verdict_text(key, measured, gains)} |")
    lines.append(f"| kernel call sites outside `_kernels.py` | {result['call_sites']} / {code['call_sites']} | on | "
                 "the switch's call sites | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"also write {PAGE.relative_to(ROOT).as_posix()}")
    args = parser.parse_args(argv)
    result, code, gains = measure(), measure(docstrings=False), recorded_gains()
    print("lines (with docstrings / code only)  speed device (file:function)  (switch; what; what it earns)")
    for (path, qualname, switched, why, measured) in SPEED_ONLY:
        switch = "on the switch" if switched else "NOT on BANDIT_GYM_KERNELS"
        key = (path, qualname)
        earns = "" if measured == _HELPER else f"; earns: {gain_text(measured, gains)}"
        print(f"{result['speed_only'][key]:5d} / {code['speed_only'][key]:4d}  "
              f"{path}{'' if qualname is None else ':' + qualname}  ({switch}; {why}{earns})")
    print(f"{result['call_sites']:5d} / {code['call_sites']:4d}  kernel call sites outside _kernels.py (on the switch)")
    for name, r in (("with docstrings", result), ("code only, docstrings left out", code)):
        print(f"{name}: library {r['library']} lines ({', '.join(LIBRARY)}), speed-only {r['speed_total']} "
              f"({r['percent']:.1f}%; target: at most 10%)")
    if args.write:
        PAGE.write_text(page(result, code, gains, _commit()))
        print(f"wrote {PAGE.relative_to(ROOT).as_posix()}")


if __name__ == "__main__":
    main()
