"""The Ray backend: a small sweep on a local Ray with 2 CPUs gives the local backend's results, and the local
Ray listens on 127.0.0.1 only (checked before any cell is sent; refused where Ray cannot be held to it).

Ray is not imported by this module: Ray reads its loopback switch once, when it is imported, and the backend
imports it with the switch set; a test that imported it first would hold the whole session to Ray's default.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
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
name: ray-test
env: LinearBandit-v0
horizon: 60
seeds: 2
agents:
  LMCTS: {fixed: {n_inner_steps: 5}, grid: {step_size: [0.1, 0.3]}}
  LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
  EpsGreedy: {}
"""


def _listeners_by_ss(root: int) -> list[str] | None:
    """``host:port`` of every TCP listener of ``root``'s process tree, as ``ps`` and ``ss`` see them (None
    without those tools): a view of the sockets apart from the backend's own ``/proc`` reading."""
    if shutil.which("ss") is None or shutil.which("ps") is None:
        return None
    children: dict[int, list[int]] = {}
    for line in subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.splitlines():
        pid, parent = map(int, line.split())
        children.setdefault(parent, []).append(pid)
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(children.get(pid, ()))
    lines = subprocess.run(["ss", "-H", "-ltnp"], capture_output=True, text=True).stdout.splitlines()
    return [line.split()[3] for line in lines  # the local address:port
            if any(f"pid={pid}," in line for pid in tree)]


@pytest.mark.slow  # about a minute here: starting Ray and its workers
def test_ray_backend_results_equal_the_local_backend_on_loopback_only(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    config = load_config(path)
    local = run_experiment(config, tmp_path / "local", log=lambda line: None)

    started, seen = [], []
    original, check = ray_backend.run_cells_on_ray, ray_backend.check_on_loopback
    monkeypatch.setattr(ray_backend, "run_cells_on_ray", lambda *args, **kwargs: started.append(1) or original(
        *args, **{**kwargs, "num_cpus": 2}))

    def check_then_look(ray):  # the backend's check, then what ray.nodes() and ss say, before any cell is sent
        check(ray)
        seen.append(([node["NodeManagerAddress"] for node in ray.nodes()], _listeners_by_ss(os.getpid())))

    monkeypatch.setattr(ray_backend, "check_on_loopback", check_then_look)
    try:
        on_ray = run_experiment(config, tmp_path / "ray", backend="ray", log=lambda line: None)
    except ray_backend.RayExposedError as exc:
        pytest.skip(f"Ray cannot be held to 127.0.0.1 on this machine: {exc}")
    import ray  # imported by the backend (with its loopback switch): this only names it

    assert started == [1] and not ray.is_initialized()  # the local instance is stopped after the run
    ((nodes, listeners),) = seen
    assert nodes == ["127.0.0.1"]
    if listeners is not None:  # the GCS, the raylet, the driver's worker: all on loopback
        assert len(listeners) >= 3 and all(ray_backend._is_loopback(where.rpartition(":")[0]) for where in listeners), \
            listeners
    assert json.loads((local.path / "experiment.json").read_text())["config"] == \
        json.loads((on_ray.path / "experiment.json").read_text())["config"]
    local_cells, ray_cells = ResultsDir(local.path).read_cells(), ResultsDir(on_ray.path).read_cells()
    assert [c.label for c in ray_cells] == [c.label for c in local_cells] == ["LMCTS", "LinUCB", "EpsGreedy"]
    for a, b in zip(local_cells, ray_cells, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)  # same seeds, batch and device: the same numbers
        for key in ("grid_points", "hyperparameters", "final_regret", "chosen", "seeds", "cell_config"):
            assert a.record[key] == b.record[key]


# Ray imported before the backend (without the switch): on a machine with an address beyond loopback Ray would
# take that one, so the backend refuses before it starts anything.
IMPORTED_FIRST = """\
import sys
import ray
from bandit_experiments import ray_backend
from bandit_experiments.config import load_config
from bandit_experiments.runner import run_experiment
if ray_backend._is_loopback(ray.util.get_node_ip_address()):
    sys.exit(3)  # Ray's default here is loopback already: nothing to refuse
try:
    run_experiment(load_config(sys.argv[1]), sys.argv[2], backend="ray", log=print)
except ray_backend.RayExposedError as exc:
    print(f"{exc}\\ninitialized={ray.is_initialized()}")
"""


def test_ray_imported_before_the_backend_is_refused_before_it_starts(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    env = {name: value for name, value in os.environ.items()
           if name not in ray_backend.LOOPBACK_ENV and name != "RAY_ADDRESS"}
    done = subprocess.run([sys.executable, "-c", IMPORTED_FIRST, str(path), str(tmp_path / "out")], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env={**env, "PYTHONPATH": str(REPO)})
    if done.returncode == 3:
        pytest.skip("Ray's own node address is loopback on this machine: there is no other address to refuse")
    assert done.returncode == 0, done.stdout + done.stderr
    message, initialized = done.stdout.splitlines()
    assert message.startswith("refusing to start a local Ray instance: Ray would use ")
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in message and initialized == "initialized=False"
    assert ResultsDir(tmp_path / "out").read_cells() == []


class _FakeRay:
    """What the check reads of Ray: the nodes' addresses and the GCS address."""

    def __init__(self, node_addresses: list[str], gcs_address: str = "127.0.0.1:6379") -> None:
        self.node_addresses, self.gcs_address = node_addresses, gcs_address

    def nodes(self) -> list[dict]:
        return [{"NodeManagerAddress": address, "Alive": True} for address in self.node_addresses]

    def get_runtime_context(self):
        return self


def test_check_on_loopback_names_a_node_or_a_socket_beyond_loopback(monkeypatch):
    monkeypatch.setattr(ray_backend, "listening_sockets", lambda: [(7, "gcs_server", "127.0.0.1", 6379)])
    ray_backend.check_on_loopback(_FakeRay(["127.0.0.1"]))  # all on loopback: passes
    with pytest.raises(ray_backend.RayExposedError) as caught:
        ray_backend.check_on_loopback(_FakeRay(["192.0.2.7"], "192.0.2.7:6379"))
    assert str(caught.value) == ("stopped the local Ray instance before it ran anything: it is reachable beyond "
                                 "127.0.0.1 (node 192.0.2.7; GCS 192.0.2.7:6379); see docs/ray.md")
    monkeypatch.setattr(ray_backend, "listening_sockets", lambda: [(7, "gcs_server", "127.0.0.1", 6379),
                                                                   (8, "raylet", "::", 41000)])
    with pytest.raises(ray_backend.RayExposedError, match=r"\(raylet \(pid 8\) listens on :::41000\)"):
        ray_backend.check_on_loopback(_FakeRay(["127.0.0.1"]))


LISTENER = """\
import socket, sys
s = socket.socket(socket.AF_INET6)  # as Ray listens: an IPv6 socket on the IPv4 loopback address
s.bind(("::ffff:127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not Path("/proc/net/tcp6").exists(), reason="listening sockets are read from /proc (Linux, IPv6)")
def test_listening_sockets_finds_the_listeners_of_this_process_and_its_children():
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        mine_port = mine.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", LISTENER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            child_port = int(child.stdout.readline())
            found = ray_backend.listening_sockets()
        finally:
            child.stdin.close()
            child.wait(30)
    assert (os.getpid(), Path("/proc/self/comm").read_text().strip(), "127.0.0.1", mine_port) in found
    assert [entry[2:] for entry in found if entry[0] == child.pid] == [("::ffff:127.0.0.1", child_port)]
    assert ray_backend._is_loopback("::ffff:127.0.0.1") and not ray_backend._is_loopback("::ffff:192.0.2.7")
