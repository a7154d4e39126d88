"""The built wheel, installed with its dependencies into a new virtual environment, works on its own.

Slow (about 1-2 minutes: it installs torch into the new environment from the package index).
The environment sees nothing of this one (no ``system_site_packages``): everything the
wheel needs must come from its declared dependencies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

import bandit_gym

REPO = Path(__file__).resolve().parents[1]
TORCH = "torch==2.14.1"  # the README's pin


def _run(args: list, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command with nothing of this interpreter's paths (PYTHONPATH) leaking into it."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=1200)
    if check:
        assert out.returncode == 0, f"{args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A new venv holding the wheel and its core dependencies (no extras); returns (its bin dir, the wheel)."""
    tmp = tmp_path_factory.mktemp("packaging")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "wheels", REPO], cwd=tmp)
    (wheel,) = (tmp / "wheels").glob("contextual_bandit_gym-*.whl")
    venv.EnvBuilder(with_pip=True).create(tmp / "venv")
    bin_dir = tmp / "venv" / "bin"
    _run([bin_dir / "python", "-m", "pip", "install", "-q", TORCH, wheel], cwd=tmp)
    return bin_dir, wheel


def _packages() -> list[str]:
    """Every package of the checkout: a folder of bandit_gym, agents or bandit_experiments with an __init__.py."""
    tops = ("bandit_gym", "agents", "bandit_experiments")
    found = (path.parent.relative_to(REPO).parts for top in tops for path in (REPO / top).rglob("__init__.py"))
    return sorted(".".join(parts) for parts in found)


def test_pyproject_lists_every_package():
    """setuptools builds only the packages pyproject.toml lists: a new subpackage left out is missing from the wheel."""
    import tomllib

    listed = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert sorted(listed) == _packages()


@pytest.mark.slow
def test_wheel_holds_the_three_packages_the_registry_and_the_command(installed):
    _, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    for package in _packages():
        assert f"{package.replace('.', '/')}/__init__.py" in names
    assert "bandit_gym/envs_registry.yaml" in names
    assert any(name.startswith("bandit_experiments/suites/") and name.endswith(".yaml") for name in names)
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "bandit-gym = bandit_experiments.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_every_synthetic_env_is_made_from_the_installed_wheel(installed, tmp_path):
    bin_dir, _ = installed
    code = (
        "import gymnasium as gym, bandit_gym, pathlib\n"
        "assert 'site-packages' in bandit_gym.__file__, bandit_gym.__file__\n"
        "assert not pathlib.Path(bandit_gym.__file__).parent.joinpath('envs_registry.yaml').is_symlink()\n"
        "for env_id in bandit_gym.ENV_IDS:\n"
        "    if not gym.registry[env_id].entry_point.startswith('bandit_gym.synthetic'):\n"
        "        continue  # dataset envs need data; their registration is what matters here\n"
        "    gym.make(env_id).reset(seed=0)\n"
        "    gym.make_vec(env_id, num_envs=2, vectorization_mode='vector_entry_point').reset(seed=0)\n"
        "print(len(bandit_gym.ENV_IDS))\n"
    )
    out = _run([bin_dir / "python", "-c", code], cwd=tmp_path)  # cwd: not the checkout, so the wheel is imported
    assert int(out.stdout.strip()) == len(bandit_gym.ENV_IDS)


@pytest.mark.slow
def test_installed_command_runs_and_names_the_extras_it_lacks(installed, tmp_path):
    bin_dir, _ = installed
    command = bin_dir / "bandit-gym"
    assert _run([command, "--version"], cwd=tmp_path).stdout == f"bandit-gym {version('contextual-bandit-gym')}\n"
    _run([command, "--help"], cwd=tmp_path)
    demo = _run([command, "demo", "--rounds", "20", "--seeds", "2", "--agents", "LinUCB", "UniformRandom"],
                cwd=tmp_path)
    assert "lower is better" in demo.stdout and "LinUCB" in demo.stdout
    # No datasets extra in this install: the dataset verbs say what to install, in one line.
    download = _run([command, "download", "mushroom"], cwd=tmp_path, check=False)
    assert download.returncode == 1 and "Traceback" not in download.stderr
    assert 'pip install "contextual-bandit-gym[datasets]"' in download.stderr
