"""The Langevin Monte Carlo step, :func:`langevin_update`, and a ``torch.optim.Optimizer`` that applies it to any
``nn.Module`` (:func:`agents.lmcts.langevin_steps` applies the same function to LMC-TS's replicas).

One :meth:`LangevinOptimizer.step` moves every parameter ``theta`` by

    theta <- theta - eta * grad L(theta) + sqrt(2 eta / beta) * eps,   eps ~ N(0, I),

the unadjusted Langevin algorithm: for a small step size ``eta`` its iterates
are approximately distributed as ``pi(theta) ~ exp(-beta L(theta))``. The noise
scale is recomputed from the *current* ``param_groups[i]["step_size"]`` at every
step, so a decaying schedule (``eta_t = eta_0 / t``) decays the noise with it.
(The LMC-TS paper's public code computes the noise scale once from ``eta_0``;
see ``docs/agents.md``.)

References:
    Xu, Zheng, Zheng, Zou, Zhang and Gu (2022), "Langevin Monte Carlo for
    Contextual Bandits", ICML (Algorithm 1, line 7). Welling and Teh (2011),
    "Bayesian learning via stochastic gradient Langevin dynamics", ICML.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import torch


def langevin_update(theta: torch.Tensor, grad: torch.Tensor, step_size: float | torch.Tensor,
                    inverse_temperature: float | torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """One Langevin step: ``theta - eta * grad + sqrt(2 eta / beta) * eps`` (a new tensor).

    The one definition of the step: :class:`LangevinOptimizer` applies it to each parameter and
    :func:`agents.lmcts.langevin_steps` to the ``(R, p)`` parameters of R replicas. ``step_size`` ``eta``
    and ``inverse_temperature`` ``beta`` are numbers or tensors that broadcast against ``theta``
    (a preconditioned step passes ``eta M``); ``noise`` is the standard normal ``eps``, ``theta``'s shape.
    """
    return theta - step_size * grad + (2 * step_size / inverse_temperature) ** 0.5 * noise


def _check_positive(name: str, value: Any) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


class LangevinOptimizer(torch.optim.Optimizer):
    """Langevin dynamics: a gradient step plus Gaussian noise of variance ``2 eta / beta``.

    Args:
        params: Parameters (or parameter groups) to sample, as for any optimizer.
        step_size: Step size ``eta`` (> 0). Change it between steps through
            ``optimizer.param_groups[i]["step_size"]``; the noise follows it.
        inverse_temperature: Inverse temperature ``beta`` (> 0); the chain targets
            ``exp(-beta L)``. Large ``beta`` means little noise.
        generator: The ``torch.Generator`` the noise is drawn with (its device must be
            the parameters' device). None uses torch's global generator. The same
            generator state gives the same trajectory.

    Examples:
        >>> model = torch.nn.Linear(3, 1)
        >>> opt = LangevinOptimizer(model.parameters(), step_size=1e-2, inverse_temperature=100.0,
        ...                         generator=torch.Generator().manual_seed(0))
        >>> loss = model(torch.ones(1, 3)).pow(2).sum()
        >>> loss.backward(); opt.step(); opt.zero_grad()

    References:
        Xu et al. (2022), "Langevin Monte Carlo for Contextual Bandits", ICML.
        Welling and Teh (2011), "Bayesian learning via stochastic gradient Langevin dynamics", ICML.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        step_size: float = 1e-3,
        inverse_temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        _check_positive("step_size", step_size)
        _check_positive("inverse_temperature", inverse_temperature)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        self.generator = generator
        super().__init__(params, {"step_size": float(step_size), "inverse_temperature": float(inverse_temperature)})

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One Langevin step on every parameter that has a gradient; returns the closure's loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            # Read the group's values at every step: a schedule may have changed them.
            eta = _check_positive("step_size", group["step_size"])
            beta = _check_positive("inverse_temperature", group["inverse_temperature"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                if self.generator is not None and self.generator.device != p.device:
                    raise ValueError(
                        f"generator is on {self.generator.device}, a parameter is on {p.device}; "
                        "give a generator on the parameters' device"
                    )
                noise = torch.randn(p.shape, generator=self.generator, device=p.device, dtype=p.dtype)
                p.copy_(langevin_update(p, p.grad, eta, beta, noise))
        return loss
