"""Every Python block of docs/integration.md runs as pasted, in order; its test functions pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

DOC = Path(__file__).resolve().parents[2] / "docs" / "integration.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_integration_doc_has_its_examples() -> None:
    blocks = python_blocks(DOC.read_text())
    # PPO with the per-arm policy, the batched VecEnv, the vector API, check_bandit_env in pytest,
    # an agent in a hand-written loop, an agent with SB3's callbacks and evaluate_policy
    assert len(blocks) == 6


def test_integration_doc_examples_run_in_order(capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("stable_baselines3")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the page advises for SB3 (restored below)
    namespace: dict = {"__name__": "docs_integration"}
    try:
        for index, block in enumerate(python_blocks(DOC.read_text())):
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
