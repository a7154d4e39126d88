"""The Ray backend under faults, against a cluster started here on 127.0.0.1: an address where nothing answers is
one error naming it, a killed worker fails its cell alone, and the same command then finishes the sweep. The
cluster is held to 127.0.0.1 (checked: the tests skip where Ray cannot be held to it); Ray is not imported here
(it reads its loopback switch when imported: see test_ray_backend.py)."""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from bandit_experiments import ray_backend
from bandit_experiments.config import load_config
from bandit_experiments.results import ResultsDir
from bandit_experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason='the Ray backend needs the ray extra: pip install "contextual-bandit-gym[ray]"')

CONFIG = """\
name: ray-faults
env: LinearBandit-v0
horizon: 400
seeds: 2
env_kwargs: {n_arms: 4, dim: 3}
agents:
  Slow: {agent: NeuralTS, fixed: {model_kwargs: {hidden: [32]}}}
  LinUCB: {}
  EpsGreedy: {}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def config(write_config, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return load_config(write_config(CONFIG, "c.yaml"))


def test_an_unreachable_ray_cluster_is_one_error_naming_it(config, tmp_path):
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(ConnectionError) as caught:  # before: Ray retried for minutes, then a traceback
        run_experiment(config, tmp_path / "out", backend="ray", address=address, log=lambda line: None)
    message = str(caught.value)
    assert message.startswith(f"cannot reach the Ray cluster at {address} (Connection refused); is it started")
    assert "\n" not in message and ("ray" not in sys.modules or not sys.modules["ray"].is_initialized())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".lock", "experiment.json"]  # no cell lost


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A one-CPU Ray cluster on 127.0.0.1 (``ray start --head --block``), stopped after the module; its
    token (Ray's token authentication) in ``RAY_AUTH_TOKEN``, which the test gives the driver too. Held to
    127.0.0.1 by the backend's loopback switch; skips, naming what listened where, if it is not."""
    port = _free_port()
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    # Its own temporary folder (short: Ray's socket paths must fit 107 bytes), so that its address file
    # (ray_current_cluster) is not the machine's: a later ray.init() would try to join this cluster.
    scratch = tempfile.mkdtemp(prefix="bgray", dir="/tmp")
    log = (tmp_path_factory.mktemp("ray") / "head.log").open("w")
    head = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                             f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                             "--include-dashboard=false", "--disable-usage-stats"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **auth, **ray_backend.LOOPBACK_ENV, "RAY_TMPDIR": scratch})
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert head.poll() is None, f"ray start --head ended with status {head.returncode}"
            assert time.monotonic() < deadline, "the Ray head did not start in 180 s"
            time.sleep(0.5)
    listening = ray_backend.listening_sockets(head.pid)  # the GCS, the raylet, the agents: ray start's children
    while listening and "raylet" not in {name for _, name, _, _ in listening} and time.monotonic() < deadline:
        time.sleep(0.5)  # the GCS answers first; the raylet listens a moment later
        listening = ray_backend.listening_sockets(head.pid)
    exposed = [entry for entry in listening if not ray_backend._is_loopback(entry[2])]
    try:
        if exposed or not listening:
            pytest.skip(f"Ray cannot be held to 127.0.0.1 on this machine: it listens on {exposed}" if exposed
                        else "this machine's /proc does not tell which sockets Ray listens on")
        yield address, auth
    finally:
        head.send_signal(signal.SIGTERM)  # --block: the head stops what it started
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _kill_the_worker_of(title: str, driver: subprocess.Popen, timeout_s: float = 180) -> int:
    """SIGKILL the Ray worker whose process title is ``title`` (a task named so) while ``driver`` runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and driver.poll() is None:
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(title.encode()):
                    os.kill(int(proc.name), signal.SIGKILL)
                    return int(proc.name)
            except OSError:
                continue
        time.sleep(0.05)
    printed = driver.communicate()[0] if driver.poll() is not None else ""
    raise AssertionError(f"no process {title!r} while the run lasted: {printed}")


# The driver runs in its own process: Ray reads its token settings (RAY_AUTH_*) when it is imported.
DRIVER = """\
import functools, sys
from bandit_experiments import ray_backend
from bandit_experiments.config import load_config
from bandit_experiments.runner import run_experiment
ray_backend.run_cells_on_ray = functools.partial(ray_backend.run_cells_on_ray, retries=int(sys.argv[4]))
run_experiment(load_config(sys.argv[1]), sys.argv[2], backend="ray", address=sys.argv[3], log=print)
"""


def _driver(config_path: Path, out: Path, address: str, retries: int, auth: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(config_path), str(out), address, str(retries)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), **auth})


@pytest.mark.slow  # about two minutes here: a Ray cluster, its workers, a cell killed and run again
def test_a_killed_worker_fails_its_cell_alone_and_the_same_command_finishes(write_config, cluster, tmp_path,
                                                                            monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    address, auth = cluster
    config_path = write_config(CONFIG, "c.yaml")
    config = load_config(config_path)
    out = tmp_path / "out"
    with pytest.raises(ConnectionError):  # first at an address where nothing answers: nothing computed
        run_experiment(config, out, backend="ray", address=f"127.0.0.1:{_free_port()}", log=lambda line: None)

    driver = _driver(config_path, out, address, 0, auth)  # retries=0: the first death fails the cell
    _kill_the_worker_of("ray::cell Slow", driver)
    printed, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, printed
    results = ResultsDir(out)
    assert [c.label for c in results.read_cells()] == ["LinUCB", "EpsGreedy"], printed  # the others finished
    (failure,) = results.read_failures()
    assert failure["label"] == "Slow" and failure["failed"].startswith("its Ray worker died (")
    assert "  Slow: FAILED after" in printed

    driver = _driver(config_path, out, address, 1, auth)  # the same command
    printed, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, printed
    assert f"2 of 3 cells already finished in {out}: skipped" in printed
    assert results.read_failures() == []
    reference = run_experiment(config, tmp_path / "local", log=lambda line: None).read_cells()
    resumed = results.read_cells()
    assert [c.label for c in resumed] == ["Slow", "LinUCB", "EpsGreedy"]
    for a, b in zip(resumed, reference, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)  # the numbers of a local run that met no fault
