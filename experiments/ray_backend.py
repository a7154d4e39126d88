"""Cells as Ray tasks (the ``ray`` extra): ``bandit-gym run CONFIG --backend ray [--address ADDR]``.

Each unfinished cell becomes one Ray task that runs :func:`experiments.runner.run_cell` and returns
its record and regret array to the driver; the driver writes each cell into the results directory as
it arrives (the same files as the local backend, the same atomic writes), so a cluster's workers need
no shared file system, only this package installed.

Ray is joined at ``address`` (``ray://...`` or ``host:port``), else at ``RAY_ADDRESS``, else a local
Ray instance is started for the run and stopped after it. A task asks Ray for one CPU (and one GPU
with ``--device cuda``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from experiments.config import ExperimentConfig
from experiments.runner import CellResult, run_cell


def _run_cell_task(config: ExperimentConfig, label: str, device: str) -> CellResult:
    return run_cell(config, label, device, progress=False)


def run_cells_on_ray(config: ExperimentConfig, labels: list[str], device: str = "cpu", address: str | None = None,
                     num_cpus: int | None = None) -> Iterator[CellResult]:
    """Run the cells ``labels`` as Ray tasks; yield each result as it finishes (in finishing order).

    Args:
        config: The checked experiment config (sent to every task).
        labels: The cells (agent labels) to run.
        device: Device of every cell (``cuda`` tasks reserve one GPU each).
        address: Ray cluster to join; None: ``RAY_ADDRESS`` or a new local instance.
        num_cpus: CPUs of a new local instance (None: Ray's default, all of them).
    """
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, num_gpus=1 if device.startswith("cuda") else 0)(_run_cell_task)
        pending = [task.remote(config, label, device) for label in labels]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started_here:
            ray.shutdown()
