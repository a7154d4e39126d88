"""Cells as Ray tasks (the ``ray`` extra): ``bandit-gym run CONFIG --backend ray [--address ADDR]``.

Each unfinished cell becomes one Ray task that runs the cell function it is given (the runner's
:func:`bandit_experiments.runner.run_cell`) and returns its record and regret array to the driver; the driver
writes each cell into the results directory as it arrives (the same files as the local backend, the same
atomic writes), so a cluster's workers need no shared file system, only this package installed.

Ray is joined at ``address`` (``ray://...`` or ``host:port``), else at ``RAY_ADDRESS``, else a local
Ray instance is started for the run and stopped after it. A task asks Ray for one CPU (and one GPU
with ``--device cuda``); it is named ``cell <label>`` (the worker's process title is ``ray::cell <label>``).

Loopback: a local instance listens on 127.0.0.1 only (anyone who reaches a Ray node can run code on it).
On Linux Ray replaces 127.0.0.1 by the address of the machine's default route unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` when Ray is imported (:data:`LOOPBACK_ENV`); this module sets it
while it imports Ray and starts the instance (also to join an address on 127.0.0.1). Before any cell is
sent it checks the instance: every node of ``ray.nodes()`` and the GCS on a loopback address and, where
``/proc`` tells (Linux), no process of this one's tree listening on another address. If the check fails,
Ray is stopped and :class:`RayExposedError` says what listened where. Running on a real cluster safely:
``docs/ray.md``.

Faults: an address where nothing answers is a :class:`ConnectionError` naming it, after at most
``CONNECT_TIMEOUT_S`` (Ray itself retries for minutes). A task whose worker dies (killed, out of memory,
its node lost) is run again once by Ray; if it dies again the cell is recorded as failed and the other
cells go on; the same command runs it again. Ray's cells do not checkpoint (their workers may not see
the results directory): an interrupted Ray cell starts again at round 1.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from bandit_experiments.cells import CellResult, failed_cell
from bandit_experiments.config import ExperimentConfig

#: Seconds to wait for a cluster's address to answer before giving up.
CONNECT_TIMEOUT_S = 10.0
#: Times Ray runs a cell again whose worker died (Ray's own default is 3).
RETRIES = 1
#: The address a local instance listens on.
LOCALHOST = "127.0.0.1"
#: What Ray must find in the environment when it is imported to keep 127.0.0.1 as a node's address on Linux
#: (Ray names the switch for Windows and macOS, where it is the default; it reads it once, at import).
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class RayExposedError(ConnectionError):
    """A Ray instance meant for this machine alone is, or would be, reachable on an address beyond loopback."""


def run_cells_on_ray(run_cell: Callable[[ExperimentConfig, str, str], CellResult], config: ExperimentConfig,
                     labels: list[str], device: str = "cpu", address: str | None = None, num_cpus: int | None = None,
                     retries: int = RETRIES) -> Iterator[CellResult]:
    """Run the cells ``labels`` as Ray tasks; yield each result as it finishes (in finishing order).

    Args:
        run_cell: The task: ``run_cell(config, label, device)`` plays one cell (an importable function:
            Ray sends it to the workers by name).
        config: The checked experiment config (sent to every task).
        labels: The cells (agent labels) to run.
        device: Device of every cell (``cuda`` tasks reserve one GPU each).
        address: Ray cluster to join; None: ``RAY_ADDRESS`` or a new local instance on 127.0.0.1.
        num_cpus: CPUs of a new local instance (None: Ray's default, all of them).
        retries: Times a cell whose worker died runs again before it is recorded as failed.

    Raises:
        ConnectionError: Nothing answers at ``address`` (one line, naming it).
        RayExposedError: A new local instance is, or would be, reachable beyond loopback (one line; nothing ran).
    """
    ray, started_here = _connect(address or os.environ.get("RAY_ADDRESS") or None, num_cpus)
    try:
        task = ray.remote(num_cpus=1, num_gpus=1 if device.startswith("cuda") else 0, max_retries=retries)(run_cell)
        started = time.time()
        pending = {task.options(name=f"cell {label}").remote(config, label, device): label for label in labels}
        while pending:
            (done,), _ = ray.wait(list(pending), num_returns=1)
            label = pending.pop(done)
            try:
                yield ray.get(done)
            except ray.exceptions.RayError as exc:  # the worker died (retries spent), the node was lost, ...
                message = (f"its Ray worker died ({type(exc).__name__}: {_first_line(exc)}); tried "
                           f"{retries + 1} time{'s' if retries else ''}")
                yield failed_cell(config, label, device, message, traceback.format_exc(), started,
                                  time.time() - started)
    finally:
        if started_here:
            ray.shutdown()


def _connect(address: str | None, num_cpus: int | None):
    """Import Ray, then join ``address`` or (None, ``local``) start a local instance held to 127.0.0.1.

    Returns Ray and whether this call started or joined it (False: the caller's ``ray.init`` stands).
    """
    local = address in (None, "local")
    if not local:
        _check_reachable(address)
    loopback = local or (address != "auto" and _is_loopback(_host_port(address)[0]))
    with _environment(LOOPBACK_ENV if loopback else {}):
        import ray  # the optional extra, imported when it is used

        if ray.is_initialized():
            return ray, False
        if loopback:  # Ray imported earlier, without the switch, would take the default route's address
            _refuse_unless_loopback(ray.util.get_node_ip_address(), "start a local Ray instance" if local
                                    else f"join {address}")
        if local:
            ray.init(num_cpus=num_cpus, include_dashboard=False, dashboard_host=LOCALHOST, log_to_driver=False,
                     _node_ip_address=LOCALHOST)
            try:
                check_on_loopback(ray)
            except RayExposedError:
                ray.shutdown()
                raise
            return ray, True
        try:
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, TimeoutError) as exc:
            hint = ("; if the cluster uses token authentication, set RAY_AUTH_MODE=token and its token "
                    "(RAY_AUTH_TOKEN, or ~/.ray/auth_token)" if not os.environ.get("RAY_AUTH_MODE") else "")
            raise ConnectionError(f"cannot join the Ray cluster at {address}: {_first_line(exc)}{hint}") from None
        return ray, True


def _refuse_unless_loopback(node_ip: str, what: str) -> None:
    if not _is_loopback(node_ip):
        switch = ", ".join(f"{name}={value}" for name, value in LOOPBACK_ENV.items())
        raise RayExposedError(f"refusing to {what}: Ray would use {node_ip}, not {LOCALHOST}, because it was "
                              f"imported before {switch} was set; set it before Python starts, or join a cluster "
                              "secured as docs/ray.md says with --address")


def check_on_loopback(ray) -> None:
    """Raise :class:`RayExposedError` unless the Ray this process runs is on loopback addresses only.

    Checks every node's address (``ray.nodes()``), the GCS address and, where ``/proc`` tells (Linux), the
    TCP sockets that this process and the processes it started (Ray's GCS, raylet, agents, workers) listen on.
    """
    exposed = [f"node {node['NodeManagerAddress']}" for node in ray.nodes()
               if not _is_loopback(node["NodeManagerAddress"])]
    gcs = ray.get_runtime_context().gcs_address
    if not _is_loopback(_host_port(gcs)[0]):
        exposed.append(f"GCS {gcs}")
    exposed += [f"{name} (pid {pid}) listens on {host}:{port}" for pid, name, host, port in listening_sockets()
                if not _is_loopback(host)]
    if exposed:
        more = f" and {len(exposed) - 3} more" if len(exposed) > 3 else ""
        raise RayExposedError(f"stopped the local Ray instance before it ran anything: it is reachable beyond "
                              f"{LOCALHOST} ({'; '.join(exposed[:3])}{more}); see docs/ray.md")


def listening_sockets(root: int | None = None) -> list[tuple[int, str, str, int]]:
    """``(pid, process name, host, port)`` of each TCP socket in the listening state that process ``root``
    (default: this one) or a process it started, at any depth, holds; empty where ``/proc`` does not tell."""
    listening: dict[str, tuple[str, int]] = {}  # socket inode -> (host, port)
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path("/proc/net", table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    hex_host, hex_port = fields[1].split(":")
                    listening[fields[9]] = (_proc_host(hex_host), int(hex_port, 16))
    found = []
    for pid in _process_tree(os.getpid() if root is None else root):
        with contextlib.suppress(OSError):  # the process ended meanwhile, or is not ours to read
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:[") and target[8:-1] in listening:
                        found.append((pid, name, *listening[target[8:-1]]))
    return found


def _process_tree(root: int) -> list[int]:
    """``root`` and its descendants, from the parent ids in ``/proc/*/stat`` (just ``root`` without ``/proc``)."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])  # after "pid (comm) state"
                    children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _proc_host(hex_host: str) -> str:
    """The address of a ``/proc/net/tcp{,6}`` line: 32-bit words of hex digits, each in host (little-endian) order."""
    raw = b"".join(bytes.fromhex(hex_host[i:i + 8])[::-1] for i in range(0, len(hex_host), 8))
    address = ipaddress.ip_address(raw)
    mapped = getattr(address, "ipv4_mapped", None)  # an IPv6 socket on an IPv4 address: as ss writes it
    return f"::ffff:{mapped}" if mapped is not None else str(address)


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: not known to be this machine
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1, where an IPv6 socket listens for IPv4
    return address.is_loopback


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set the environment variables ``values`` for the ``with`` block (the processes started in it inherit
    them), then put back what was there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _host_port(address: str) -> tuple[str, str]:
    """``(host, port)`` of ``host:port`` or ``ray://host:port`` (an IPv6 host in brackets keeps them)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"--address {address!r}: expected host:port or ray://host:port")
    return host, port


def _check_reachable(address: str) -> None:
    """Raise ConnectionError unless something accepts a TCP connection at ``address``'s host and port."""
    if address == "auto":
        return  # Ray finds it itself
    host, port = _host_port(address)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); is it started "
                              "(`ray start --head`)? Check --address or RAY_ADDRESS, or leave --backend ray out "
                              "to run here") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
