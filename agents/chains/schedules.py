"""The step-size schedule of every Langevin-type chain: :func:`step_size`, one definition.

``eta_t`` of round ``t`` from the base step ``eta_0`` (per replica, ``(R,)``):

* ``"inverse_t"``: ``eta_0 / t``, the paper's (Xu et al. 2022, Algorithm 1): stable where the data's curvature
  grows like ``t``, for features of norm at most 1.
* ``"constant"``: ``eta_0``; with LMC-TS's diagonal preconditioner ``M`` carries the ``1 / t``.
* ``"inverse_lambda_max"``: ``eta_0 / lambda_max(S V_t S)``, the step of the paper's Theorem 4.2 on the linear and
  glm models' scaled Gram matrix (``gram_top`` is an upper bound on that eigenvalue).
"""

from __future__ import annotations

import torch

STEP_SCHEDULES = ("inverse_t", "constant", "inverse_lambda_max")


def step_size(schedule: str, base: torch.Tensor, t: int, gram_top: torch.Tensor | None = None) -> torch.Tensor:
    """``eta_t`` per replica ``(R,)`` of ``schedule`` (one of :data:`STEP_SCHEDULES`) at round ``t >= 1``."""
    if schedule == "inverse_lambda_max":
        return base / gram_top
    return base / t if schedule == "inverse_t" else base
