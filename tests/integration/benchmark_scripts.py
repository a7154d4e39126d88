"""The benchmark scripts as modules, for the tests that run them at tiny sizes (tests/integration is on pytest's
pythonpath)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_module(name: str):
    """Import ``benchmarks/<name>.py`` (the folder is on ``sys.path`` only while it is imported)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
