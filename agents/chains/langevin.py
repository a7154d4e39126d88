"""The Langevin Monte Carlo step, :func:`langevin_update`, and a ``torch.optim.Optimizer`` that applies it to any
``nn.Module``, and :class:`Langevin`, Algorithm 1's inner loop on LMC-TS's ``(R, p)`` replicas (:func:`langevin_steps`).

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

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import torch

from agents import _kernels
from agents.chains.target import Chain, ChainRound
from agents.models.blocks import BlockRows
from agents.models.reward import LinearModel, RewardModel

#: The largest ``(piece, B, p)`` piece of row gradients :func:`minibatch_stiffness` forms at once, in floats
#: (4 MB). All replicas at once, the paper's 2 x 100 network on Shuttle-v0 (p = 6,501) at a 60-replica grid formed
#: 50 MB pieces, several per step, and spent 26 of 30 seconds allocating and freeing them (page faults); in
#: pieces the arithmetic per replica is the same and no large buffer is allocated and freed at every step.
STIFFNESS_PIECE_FLOATS = 2**20


def langevin_update(theta: torch.Tensor, grad: torch.Tensor, step_size: float | torch.Tensor,
                    inverse_temperature: float | torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """One Langevin step: ``theta - eta * grad + sqrt(2 eta / beta) * eps`` (a new tensor).

    The one definition of the step: :class:`LangevinOptimizer` applies it to each parameter and
    :func:`langevin_steps` to the ``(R, p)`` parameters of R replicas. ``step_size`` ``eta``
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


def langevin_steps(model: RewardModel, theta: torch.Tensor, step_size: torch.Tensor,
                   inverse_temperature: torch.Tensor, noise: torch.Tensor | Callable[[int], torch.Tensor],
                   batches: torch.Tensor | None = None, n_steps: int | None = None,
                   preconditioner: torch.Tensor | None = None, step_bound: float | None = None,
                   lambda_reg: torch.Tensor | None = None) -> torch.Tensor:
    """``K`` Langevin steps on the model's loss from ``theta``: Algorithm 1's inner loop.

    With a diagonal preconditioner ``M`` (``(R, p)``, positive) each step is
    ``theta - eta_t M grad L_t + sqrt(2 eta_t M / beta) eps``: for a fixed ``M`` the chain targets the same
    ``exp(-beta L_t)`` (preconditioned Langevin dynamics), with coordinate ``j`` moving at ``eta_t M_j``.
    With ``step_bound`` (mini-batches of a neural model) step ``k`` runs at
    ``min(eta_t, step_bound / lambda_max(M H_k))``, ``H_k`` the Gauss-Newton matrix of its mini-batch at the
    chain's current ``theta`` (:func:`minibatch_stiffness`; why in :class:`Langevin`).

    Args:
        model: The reward model (its loss ``L_t`` and gradient).
        theta: Start of the chain (the last sample: warm start), ``(R, p)``.
        step_size: ``eta_t`` per replica, ``(R,)``.
        inverse_temperature: ``beta`` per replica, ``(R,)``.
        noise: Standard normal draws ``eps_k``, ``(R, K, p)``; or a function ``k -> (R, p)`` that draws
            step ``k``'s when it is needed (memory ``O(p)``, not ``O(K p)``: for large networks).
        batches: Mini-batch row indices per step ``(R, K, B)``, or None for full-batch gradients.
        n_steps: ``K``, when ``noise`` is a function.
        preconditioner: ``M`` per replica and coordinate ``(R, p)``, or None (``M = I``).
        step_bound: The cap on ``eta_k lambda_max(M H_k)``, or None (no cap). Needs ``batches`` and ``lambda_reg``.
        lambda_reg: The ridge weight per replica ``(R,)`` (the bound's ``H_k`` includes ``2 lambda I``).

    Returns:
        The last iterate ``theta_{t,K}``, ``(R, p)``.
    """
    eta, beta = step_size[:, None], inverse_temperature[:, None]  # (R, 1)
    if step_bound is not None:  # M^(1/2) and the ridge's bound are the round's: taken once, not at every step
        unit = torch.ones_like(theta) if preconditioner is None else preconditioner
        root, ridge = unit.sqrt(), ridge_stiffness(unit, lambda_reg)
    if preconditioner is not None:
        eta = eta * preconditioner  # (R, p)
    per_step = callable(noise)
    for k in range(n_steps if per_step else noise.shape[1]):
        batch = None if batches is None else batches[:, k]
        eta_k = eta
        if step_bound is not None:  # min(eta_t, step_bound / lambda_max(M H_k)) M
            stiffness = gram_stiffness(model, theta, batch, root) + ridge  # (R,)
            eta_k = eta * torch.clamp(step_bound / (step_size * stiffness), max=1.0)[:, None]
        grad = model.gradient(theta, batch)  # (R, p)
        theta = langevin_update(theta, grad, eta_k, beta, noise(k) if per_step else noise[:, k])
    return theta


def linear_langevin_steps(model: LinearModel, theta: torch.Tensor, step_size: torch.Tensor,
                          inverse_temperature: torch.Tensor, noise: torch.Tensor,
                          scale: torch.Tensor | None) -> torch.Tensor:
    """:func:`langevin_steps` preconditioned by ``M = S^2`` (``scale``, or None for ``M = I``) on a linear model.

    The definition is :func:`langevin_steps`; with :mod:`agents._kernels` on (``BANDIT_GYM_KERNELS``) the same
    chain runs in the scaled coordinates ``theta / S``, on ``S V S`` and ``S b`` (``linear_langevin``: a numba loop
    on the CPU, ``linear_langevin_affine``: one batched product per step elsewhere).
    """
    gram, moment = model.gram, model.moment
    kernel = (None if type(model) is not LinearModel else _kernels.linear_langevin
              if _kernels.enabled(theta, gram, step_size) else _kernels.linear_langevin_affine
              if _kernels.enabled_off_cpu(theta, gram, step_size) else None)
    if kernel is None:
        return langevin_steps(model, theta, step_size, inverse_temperature, noise,
                              preconditioner=None if scale is None else scale**2)
    return kernel(gram, moment, theta, step_size, inverse_temperature, noise, scale)


def _replica_rows(x: torch.Tensor | BlockRows, part: slice) -> torch.Tensor | BlockRows:
    """Replicas ``part`` of the rows ``model.rows`` gave (dense, or in one-hot-block form)."""
    if isinstance(x, BlockRows):
        return dataclasses.replace(x, values=x.values[part], block=x.block[part])
    return x[part]


def minibatch_stiffness(model: RewardModel, theta: torch.Tensor, batch: torch.Tensor,
                        preconditioner: torch.Tensor, lambda_reg: torch.Tensor) -> torch.Tensor:
    """The largest eigenvalue of ``M H_B`` per replica, ``(R,)``: the stiffest direction of one mini-batch step.

    ``H_B = 2 lambda I + 2 (n / B) sum_{i in B} g(x_i) g(x_i)^T`` is the Gauss-Newton matrix of the mini-batch
    estimate of the squared loss ``L_t`` at ``theta`` (``g = df/dtheta``), ``M`` the diagonal preconditioner
    ``(R, p)``. A step of size ``eta`` is stable in a direction of (preconditioned) curvature ``h`` only if
    ``eta h < 2``. The ``p x p`` matrix ``M^(1/2) G^T G M^(1/2)`` (``G``: the rows' gradients, ``(B, p)``) has the
    nonzero eigenvalues of the ``B x B`` Gram matrix ``G M G^T``, so that is what is decomposed; the ridge adds at
    most ``max_j 2 lambda M_j`` (an upper bound on ``lambda_max(M H_B)``). ``G`` is formed a few replicas at a
    time (:data:`STIFFNESS_PIECE_FLOATS`), the same numbers as all at once.
    """
    return gram_stiffness(model, theta, batch, preconditioner.sqrt()) + ridge_stiffness(preconditioner, lambda_reg)


def ridge_stiffness(preconditioner: torch.Tensor, lambda_reg: torch.Tensor) -> torch.Tensor:
    """``max_j 2 lambda M_j`` per replica ``(R,)``: the ridge's share of :func:`minibatch_stiffness`."""
    return (2.0 * lambda_reg[:, None] * preconditioner).amax(dim=1)


def gram_stiffness(model: RewardModel, theta: torch.Tensor, batch: torch.Tensor, root: torch.Tensor) -> torch.Tensor:
    """``lambda_max(2 (n / B) G M G^T)`` per replica ``(R,)`` (``root``: ``M^(1/2)`` ``(R, p)``), ``+inf`` where the
    Gram matrix is not finite: the mini-batch's share of :func:`minibatch_stiffness`."""
    x, _, scale = model.rows(batch)  # (R, B, d)
    R, B = batch.shape
    piece = max(1, STIFFNESS_PIECE_FLOATS // (B * theta.shape[1]))  # replicas at a time: G is (piece, B, p)
    grams = []
    for start in range(0, R, piece):
        part = slice(start, start + piece)
        _, g = model.arm_gradients(theta[part], _replica_rows(x, part))  # (piece, B, p)
        scaled = g * root[part][:, None, :]  # G M^(1/2)
        grams.append(2.0 * scale * (scaled @ scaled.transpose(1, 2)))  # (piece, B, B)
    gram = torch.cat(grams) if len(grams) > 1 else grams[0]  # (R, B, B)
    finite = torch.isfinite(gram).all(dim=2).all(dim=1)  # (R,): a replica already diverging gets +inf
    top = torch.linalg.eigvalsh(torch.where(finite[:, None, None], gram, 0.0))[:, -1]
    return torch.where(finite, top, torch.inf)


class Langevin(Chain):
    """Algorithm 1's chain: ``K`` (preconditioned) Langevin steps from the last sample, :func:`langevin_steps`.

    Round ``t``'s sample is the last of ``K`` steps on the loss ``L_t`` of the rounds before ``t``::

        theta = theta - eta_t M grad L_t(theta) + sqrt(2 eta_t M / beta) eps,   eps ~ N(0, I)

    started from ``theta_(t-1)`` (warm start), the noise scale at the current ``eta_t``. ``M`` is the round's
    preconditioner (:meth:`agents.chains.target.ChainRound.preconditioner`): ``I``; ``S^2`` on the linear and glm
    models' scaled features (the plain chain on ``S z``); or ``diag(1 / U_t)`` on neural models
    (:class:`agents.chains.preconditioner.DiagonalPreconditioner`, which says why). With the linear model and a fixed
    step ``eta`` the chain is stationary at ``N(V^-1 b, (2 beta)^-1 V^-1 (I - eta V)^-1)`` (Proposition 3.1,
    corrected; ``docs/agents.md``); the linear model's chain runs in :func:`linear_langevin_steps`.

    **A step bound for mini-batches** (``step_bound``, neural models). ``M`` holds the curvature of single
    coordinates at the round's start; a step can still be far too long in a direction that couples many
    coordinates: (a) a mini-batch gradient counts each drawn row ``n / B`` times, so a rarely seen row (a rare one-hot
    category) whose gradient spreads over the hundreds of weights of its hidden units puts a stiff direction into that
    step; (b) within a round, a step that grows the weights of one layer grows the curvature of the layer below,
    which ``M`` does not follow. So step ``k`` runs at ``eta_k = min(eta, step_bound / lambda_max(M H_k))``, ``H_k``
    the Gauss-Newton matrix of step ``k``'s mini-batch at the chain's current ``theta`` (:func:`minibatch_stiffness`).
    The discrete chain's variance along a direction of preconditioned curvature ``h`` is ``1 / (1 - eta h / 2)`` times
    the target's: ``eta h <= 1`` keeps it within twice the target's in the stiffest direction, where ``eta h >= 2``
    diverges. Measured on Shuttle-v0 without the bound (seeds 0-9, 10,000 rounds): at round 3,005 one mini-batch put
    ``eta lambda_max = 18.8`` into replica 5's first step (the full data's was 1.07) and the chain was NaN three steps
    later (``docs/agents.md``, "Step bound"). Where the cap binds, the step depends on the chain's state, so the chain
    targets ``exp(-beta L_t)`` only approximately there; full-batch chains (no ``n / B``) have no cap. Cost: one more
    per-row gradient of the ``B`` rows and a ``B x B`` eigenvalue problem per step.

    References:
        Xu, Zheng, Zheng, Zou, Zhang and Gu (2022), "Langevin Monte Carlo for Contextual Bandits", ICML (Algorithm 1,
        lines 5-8). Welling and Teh (2011), "Bayesian learning via stochastic gradient Langevin dynamics", ICML.
    """

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        c, model = chain_round, chain_round.model
        noise = c.normals((model.n_params,))  # (R, K, p), or per step
        if c.linear:  # K O(d^2) steps on the Gram matrix, no mini-batches
            return linear_langevin_steps(model, theta, c.step_size, c.inverse_temperature, noise, c.scale)
        return langevin_steps(model, theta, c.step_size, c.inverse_temperature, noise, c.batches, c.n_steps,
                              c.preconditioner(theta), c.step_bound, model.lambda_reg)
