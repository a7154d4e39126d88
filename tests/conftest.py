"""Fixtures shared by every test folder: one torch thread for tiny-network tests, and the real OpenML cache."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"  # the README's "Tests" section names it
DEFAULT_SHARED_CACHE = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "openml_cache"


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_raises():
    """Let the Ctrl-C tests send a real SIGINT where the suite was started with it ignored (a shell's background
    job, ``cmd &``, starts so; Python then never installs its handler, and ignoring passes on to every
    subprocess): the default handler, KeyboardInterrupt, in this process and so in the interpreters it starts."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def one_torch_thread():
    """Run a test on one torch thread and restore the user's setting: tiny batched matmuls (the neural agents,
    SB3's small networks) wait for busy cores in torch's thread pool (docs/agents.md). The test sets it,
    never the library."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def sb3_log_dir(tmp_path_factory: pytest.TempPathFactory):
    """Keep Stable-Baselines3's logger folders inside pytest's temporary directory: every ``model.learn`` makes
    an empty ``SB3-<date>`` folder in the system's temporary directory unless ``SB3_LOGDIR`` names another."""
    if os.environ.get("SB3_LOGDIR"):
        yield
        return
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3_logs"))
    yield
    del os.environ["SB3_LOGDIR"]


def shared_cache_source() -> tuple[Path, bool]:
    """Where the shared real cache is, and whether the environment variable named it."""
    if os.environ.get(SHARED_CACHE_ENV_VAR):
        return Path(os.environ[SHARED_CACHE_ENV_VAR]).expanduser(), True
    return DEFAULT_SHARED_CACHE, False


@pytest.fixture(scope="session")
def real_openml_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable copy of the shared real OpenML cache (read-only at its source), made once per session.

    Skipped when the default location is empty; an error when ``BANDIT_GYM_TEST_OPENML_CACHE`` names a
    directory that holds no cache (CI sets it so that the real-data tests cannot skip unnoticed).
    """
    source, named = shared_cache_source()
    if not (source / "org" / "openml" / "www" / "datasets").is_dir():
        if named:
            pytest.fail(f"{SHARED_CACHE_ENV_VAR}={source} holds no OpenML cache (no org/openml/www/datasets in it)")
        pytest.skip(f"no shared OpenML cache at {source} (set {SHARED_CACHE_ENV_VAR} to point at one)")
    target = tmp_path_factory.mktemp("openml_real") / "openml_cache"
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target
