"""Each command imports only what it needs, and a missing optional package names its extra.

(The packages' layers and import cycles: ``tests/test_layers.py``.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_download_does_not_import_the_agents():
    out = _run(
        "import sys\n"
        "from bandit_experiments import cli\n"
        "try:\n"
        "    cli.main(['download', 'iris'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'bandit_gym.datasets.loaders' in sys.modules  # the verb ran up to the name check\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'agents'))\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# Simulates an install without the datasets and experiments extras: importing them fails as if absent.
_WITHOUT_EXTRAS = (
    "import sys\n"
    "class Absent:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in {'pandas', 'openml', 'arff', 'sklearn', 'torchvision', 'tqdm', 'matplotlib'}:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Absent())\n"
    "from bandit_experiments import cli\n"
)


def _statuses(commands: list[list[str]]) -> str:
    """Code that runs each command line in turn and prints its exit status (``--help`` exits 0)."""
    return (
        "for argv in " + repr(commands) + ":\n"
        "    try:\n"
        "        status = cli.main(argv)\n"
        "    except SystemExit as stop:\n"
        "        status = stop.code\n"
        "    print('STATUS', status, flush=True)\n"
    )


def test_a_missing_extra_is_named():
    out = _run(_WITHOUT_EXTRAS + _statuses([["download", "mushroom"], ["demo", "--env", "Shuttle-v0"]]))
    assert out.returncode == 0, out.stderr
    assert re.findall(r"STATUS (\d+)", out.stdout) == ["1", "1"]
    lines = out.stderr.splitlines()  # one line each, no traceback
    assert [line.split(": error: ")[0] for line in lines] == ["bandit-gym download", "bandit-gym demo"]
    for line in lines:
        assert "pandas" in line and 'pip install "contextual-bandit-gym[datasets]"' in line


def test_commands_that_need_no_extra_work_without_them():
    commands = [["--help"], ["demo", "--help"], ["download", "--help"], ["agents"], ["envs"],
                ["demo", "--rounds", "5", "--seeds", "2", "--agents", "LinUCB"]]
    out = _run(_WITHOUT_EXTRAS + _statuses(commands))
    assert out.returncode == 0, out.stderr
    assert re.findall(r"STATUS (\d+)", out.stdout) == ["0"] * len(commands), out.stderr
    assert "Traceback" not in out.stderr
