"""Every Python block of docs/integration.md runs as pasted, in order; its test functions pass.

A block marked ``<!-- snippet: needs-data -->`` (as in tests/test_docs_snippets.py) reads the
session's copy of the shared OpenML cache through ``OPENML_CACHE_DIR``, as a reader's would; it is
skipped where there is no such cache.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

DOC = Path(__file__).resolve().parents[2] / "docs" / "integration.md"
_BLOCK = re.compile(r"(?:^(<!--\s*snippet:\s*needs-data\b.*-->)\s*\n)?^```python\n(.*?)^```$", flags=re.S | re.M)


def marked_blocks(text: str) -> list[tuple[bool, str]]:
    """``(needs the OpenML cache, code)`` of every block, in order."""
    return [(bool(marker), code) for marker, code in _BLOCK.findall(text)]


def test_integration_doc_has_its_examples() -> None:
    blocks = marked_blocks(DOC.read_text())
    # PPO with the per-arm policy, the batched VecEnv, the vector API, check_bandit_env in pytest,
    # an agent in a hand-written loop, an agent with SB3's callbacks and evaluate_policy,
    # a bandit from a DataFrame, one from an OpenML id (that one needs the cache)
    assert len(blocks) == 8
    assert [needs for needs, _ in blocks] == [False] * 7 + [True]
    assert 'gym.make("ClassificationBandit-v0", X=frame, y="species"' in blocks[6][1]
    assert 'gym.make("OpenMLBandit-v0", data_id=1120)' in blocks[7][1]


def test_integration_doc_examples_run_in_order(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
                                               request: pytest.FixtureRequest) -> None:
    pytest.importorskip("stable_baselines3")
    try:
        cache = request.getfixturevalue("openml_cache")  # the session's copy of the shared cache
    except pytest.skip.Exception:
        cache = None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the page advises for SB3 (restored below)
    namespace: dict = {"__name__": "__main__"}  # as in a script or a Python session the reader pastes into
    ran_data_blocks = False
    try:
        for index, (needs_data, block) in enumerate(marked_blocks(DOC.read_text())):
            if needs_data:
                if cache is None:
                    continue
                monkeypatch.setenv("OPENML_CACHE_DIR", str(cache))
                ran_data_blocks = True
            before = set(namespace)
            exec(compile(block, f"{DOC.name} block {index}", "exec"), namespace)
            # A block that shows a user's pytest file: run the tests it defines.
            for name in sorted(set(namespace) - before):
                if name.startswith("test_") and callable(namespace[name]):
                    namespace[name]()
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "per-round regret: PPO" in out and "rounds played: 1024" in out
    assert out.count("rewards [") == 3  # sync, async and native each printed a row
    assert "cumulative regret over 200 rounds:" in out and "LinUCB(n_arms=50, dim=20, num_replicas=4" in out
    # The DataFrame's bandit: 3 classes x 5 features; LinUCB learns it well above uniform random's third.
    assert "('apple', 'pear', 'plum') (3, 15)" in out
    correct = int(re.search(r"correct guesses: (\d+) of 600", out).group(1))
    assert correct > 400
    if ran_data_blocks:
        assert "('g', 'h') (2, 20)" in out
        misses = [int(m) for m in re.search(r"wrong guesses per run: \[([\d, ]+)\]", out).group(1).split(", ")]
        assert len(misses) == 4 and all(0 < m < 2000 * 0.35 for m in misses)  # below always guessing 'g' (35%)


def test_the_spawn_example_saved_as_a_script_runs_once(tmp_path: Path) -> None:
    """The vector-API example, saved as a script under the page's imports, prints its three rows once: its
    ``"spawn"`` workers import the script again, and the ``__main__`` guard keeps them from rerunning it
    (without it Python stops the first worker: "... before the current process has finished its
    bootstrapping phase")."""
    blocks = [code for _, code in marked_blocks(DOC.read_text())]
    (block,) = [code for code in blocks if '"context": "spawn"' in code]
    imports = [line for line in blocks[0].splitlines() if line.startswith(("import ", "from ")) and "sb3" not in line
               and "stable_baselines3" not in line]
    script = tmp_path / "compare_vector_modes.py"
    script.write_text("\n".join(imports) + "\n\n" + block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("rewards [") == 3, out.stdout
