"""Cells as Ray tasks (the ``ray`` extra): ``bandit-gym run CONFIG --backend ray [--address ADDR]``.

Each unfinished cell becomes one Ray task that runs :func:`experiments.runner.run_cell` and returns
its record and regret array to the driver; the driver writes each cell into the results directory as
it arrives (the same files as the local backend, the same atomic writes), so a cluster's workers need
no shared file system, only this package installed.

Ray is joined at ``address`` (``ray://...`` or ``host:port``), else at ``RAY_ADDRESS``, else a local
Ray instance is started for the run and stopped after it. A task asks Ray for one CPU (and one GPU
with ``--device cuda``); it is named ``cell <label>`` (the worker's process title is ``ray::cell <label>``).

Faults: an address where nothing answers is a :class:`ConnectionError` naming it, after at most
``CONNECT_TIMEOUT_S`` (Ray itself retries for minutes). A task whose worker dies (killed, out of memory,
its node lost) is run again once by Ray; if it dies again the cell is recorded as failed and the other
cells go on; the same command runs it again. Ray's cells do not checkpoint (their workers may not see
the results directory): an interrupted Ray cell starts again at round 1.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Iterator

from experiments.config import ExperimentConfig
from experiments.runner import CellResult, failed_cell, run_cell

#: Seconds to wait for a cluster's address to answer before giving up.
CONNECT_TIMEOUT_S = 10.0
#: Times Ray runs a cell again whose worker died (Ray's own default is 3).
RETRIES = 1


def _run_cell_task(config: ExperimentConfig, label: str, device: str) -> CellResult:
    return run_cell(config, label, device, progress=False)


def run_cells_on_ray(config: ExperimentConfig, labels: list[str], device: str = "cpu", address: str | None = None,
                     num_cpus: int | None = None, retries: int = RETRIES) -> Iterator[CellResult]:
    """Run the cells ``labels`` as Ray tasks; yield each result as it finishes (in finishing order).

    Args:
        config: The checked experiment config (sent to every task).
        labels: The cells (agent labels) to run.
        device: Device of every cell (``cuda`` tasks reserve one GPU each).
        address: Ray cluster to join; None: ``RAY_ADDRESS`` or a new local instance.
        num_cpus: CPUs of a new local instance (None: Ray's default, all of them).
        retries: Times a cell whose worker died runs again before it is recorded as failed.

    Raises:
        ConnectionError: Nothing answers at ``address`` (one line, naming it).
    """
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            _check_reachable(address)
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError, TimeoutError) as exc:
                hint = ("; if the cluster uses token authentication, set RAY_AUTH_MODE=token and its token "
                        "(RAY_AUTH_TOKEN, or ~/.ray/auth_token)" if not os.environ.get("RAY_AUTH_MODE") else "")
                raise ConnectionError(f"cannot join the Ray cluster at {address}: {_first_line(exc)}{hint}") from None
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, num_gpus=1 if device.startswith("cuda") else 0,
                          max_retries=retries)(_run_cell_task)
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


def _check_reachable(address: str) -> None:
    """Raise ConnectionError unless something accepts a TCP connection at ``address``'s host and port."""
    if address in ("auto", "local"):
        return  # Ray finds these itself
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"--address {address!r}: expected host:port or ray://host:port")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); is it started "
                              "(`ray start --head`)? Check --address or RAY_ADDRESS, or leave --backend ray out "
                              "to run here") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
