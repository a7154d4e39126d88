"""The agents' speed devices: compiled CPU kernels (numba) and torch-level shortcuts.

Torch defines every computation; a kernel here is an accelerator of ONE torch function, named
in its docstring, which decides in its first line (``if _kernels.enabled(...): return _kernels.x(...)``).
What each earns: ``benchmarks/speed_devices.py`` (``benchmarks/results/speed_devices.md``). Each is tested
against its torch function with ``torch.testing.assert_close``:

* numba loops of ``langevin_steps`` (linear model), ``linear_scores``, ``add_observation``, and of the ridge agents'
  round in :mod:`agents.linear`: ``ridge_update``, ``potter_update``, ``add_outer``, ``add_feature_sums``,
  ``ucb_scores`` (``tests/agents/test_kernels.py``); the agents' normal draws are
  ``bandit_gym.rng.approx_normal``, whose compiled loop is the package's one Box-Muller kernel, and their uniform
  draws (coins, random arms, ties, mini-batch rows) ``bandit_gym.rng.uniform``, a loop there too
  (``bandit_gym/_rng_kernels.py``);
* off the CPU, ``langevin_steps`` (linear model) in its affine form, one batched product per step
  (``linear_langevin_affine``; ``enabled_off_cpu()`` switches it, ``tests/agents/test_kernels.py``);
* :class:`agents.models.mlp.MLPModel`'s hand-written backward pass (``mlp_gradient``, ``mlp_gradient_squares``,
  ``mlp_arm_gradients``, ``mlp_gradient_norms``: autograd is the definition) and the block-aware first
  layer's products for ``block_arms`` rows (``block_matmul``, ...: the dense layer is)
  (``tests/agents/test_mlp_backward_kernel.py``, ``tests/agents/test_block_first_layer.py``). These are
  torch code and run on any device; they check only the variable (``enabled()`` with no tensors).

``BANDIT_GYM_KERNELS=0`` in the environment switches every kernel off (the agents then run
their torch code); the envs' kernels (``bandit_gym/_kernels.py``, ``bandit_gym/_rng_kernels.py``) obey the
same variable.
The variable is read at each call, so a test can switch it.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit

from agents.models.blocks import BlockRows
from bandit_gym.threads import by_replicas

_JIT = {"nogil": True, "cache": True, "error_model": "numpy"}

def enabled(*tensors: torch.Tensor) -> bool:
    """Whether the kernels are on (``BANDIT_GYM_KERNELS`` is not ``0``) and can take these tensors
    (float32 or int64 CPU tensors that need no gradient)."""
    return os.environ.get("BANDIT_GYM_KERNELS", "1") != "0" and all(
        t.is_cpu and not t.requires_grad and t.dtype in (torch.float32, torch.int64) for t in tensors)


def enabled_off_cpu(*tensors: torch.Tensor) -> bool:
    """Whether the kernels are on and these float32 tensors, none needing a gradient, are off the CPU (a GPU):
    where the torch-level devices that save kernel launches apply."""
    return os.environ.get("BANDIT_GYM_KERNELS", "1") != "0" and all(
        not t.is_cpu and not t.requires_grad and t.dtype == torch.float32 for t in tensors)


# -- agents.chains.langevin.langevin_steps with the linear model ----------------------------------------
@njit(**_JIT)
def _linear_langevin(gram, moment, theta, step_size, inverse_temperature, noise, scale, out):
    R, K, d = noise.shape
    grad = np.empty(d, np.float32)
    scaled_gram = np.empty((d, d), np.float32)
    scaled_moment = np.empty(d, np.float32)
    two = np.float32(2.0)
    for r in range(R):
        for i in range(d):  # the scaled coordinates theta / S on S V S and S b (all ones: V, b and theta themselves)
            scaled_moment[i] = scale[r, i] * moment[r, i]
            out[r, i] = theta[r, i] / scale[r, i]
            for j in range(d):
                scaled_gram[i, j] = (scale[r, i] * gram[r, i, j]) * scale[r, j]
        eta = step_size[r]
        noise_scale = np.sqrt(two * eta / inverse_temperature[r])
        for k in range(K):
            for i in range(d):  # grad = 2 (V theta - b), V theta as a sum of V's rows (V is symmetric)
                grad[i] = -scaled_moment[i]
            for j in range(d):
                theta_j = out[r, j]
                for i in range(d):
                    grad[i] += scaled_gram[j, i] * theta_j
            for i in range(d):
                out[r, i] = out[r, i] - eta * (two * grad[i]) + noise_scale * noise[r, k, i]
        for i in range(d):
            out[r, i] = out[r, i] * scale[r, i]


def linear_langevin(gram: torch.Tensor, moment: torch.Tensor, theta: torch.Tensor, step_size: torch.Tensor,
                    inverse_temperature: torch.Tensor, noise: torch.Tensor,
                    scale: torch.Tensor | None = None) -> torch.Tensor:
    """Loop version of :func:`agents.chains.langevin.linear_langevin_steps` (a linear model, preconditioned by
    ``S^2``, ``scale`` ``S`` ``(R, d)`` or None for none): ``K`` steps ``theta <- theta - eta 2 (V theta - b) +
    sqrt(2 eta / beta) eps_k`` per replica in the coordinates ``theta / S``, on ``S V S`` and ``S b``."""
    out = np.empty(theta.shape, np.float32)
    scale = np.ones(theta.shape, np.float32) if scale is None else scale.numpy()  # x 1 and / 1: exact
    by_replicas(_linear_langevin, gram.numpy(), moment.numpy(), theta.numpy(), step_size.numpy(),
                inverse_temperature.numpy(), noise.numpy(), scale, out)
    return torch.from_numpy(out)


def linear_langevin_affine(gram: torch.Tensor, moment: torch.Tensor, theta: torch.Tensor, step_size: torch.Tensor,
                           inverse_temperature: torch.Tensor, noise: torch.Tensor,
                           scale: torch.Tensor | None = None) -> torch.Tensor:
    """Torch version, any device, of :func:`agents.chains.langevin.linear_langevin_steps` (``scale`` as in
    :func:`linear_langevin`).

    A step ``theta - eta 2 (V theta - b) + sqrt(2 eta / beta) eps_k`` is affine in ``theta``:
    ``theta <- A theta + c_k`` with ``A = I - 2 eta V`` and ``c_k = 2 eta b + sqrt(2 eta / beta) eps_k``.
    ``A`` and every ``c_k`` are formed once per round, so each of the ``K`` steps is one batched product
    (``baddbmm``), where the step-by-step definition launches about 12 operations. On a GPU, where a round of
    small operations is bound by the launches, that is what counts (LMC-TS, 1,000 replicas on an H100:
    ``benchmarks/results/gpu.md``); the numbers differ from the definition by float rounding only.
    """
    if scale is not None:  # the scaled coordinates theta / S, on S V S and S b
        gram, moment, theta = scale[:, :, None] * gram * scale[:, None, :], scale * moment, theta / scale
    eta = step_size[:, None]  # (R, 1)
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    transition = eye - 2.0 * eta[:, :, None] * gram  # A, (R, d, d)
    shifts = (2.0 * eta * moment)[:, None, :] + ((2.0 * eta / inverse_temperature[:, None]) ** 0.5)[:, :, None] * noise
    theta = theta[:, :, None]  # (R, d, 1)
    for k in range(noise.shape[1]):
        theta = torch.baddbmm(shifts[:, k, :, None], transition, theta)  # A theta + c_k
    return theta[:, :, 0] if scale is None else theta[:, :, 0] * scale


# -- agents.models.reward ---------------------------------------------------------------------------
@njit(**_JIT)
def _linear_scores(x, theta, out):
    R, K, d = x.shape
    for r in range(R):
        for k in range(K):
            acc = np.float32(0.0)
            for j in range(d):
                acc += x[r, k, j] * theta[r, j]
            out[r, k] = acc


def linear_scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Loop version of :func:`agents.models.reward.linear_scores`: ``x . theta`` per arm, ``(R, K)``."""
    out = np.empty(contexts.shape[:2], np.float32)
    by_replicas(_linear_scores, contexts.numpy(), theta.numpy(), out)
    return torch.from_numpy(out)


# -- agents.linear.ucb_scores ---------------------------------------------------------------------------
@njit(**_JIT)
def _ucb_scores(x, theta, x_gram_inverse, nu, out):
    R, K, d = x.shape
    for r in range(R):
        for k in range(K):
            mean = np.float32(0.0)
            quadratic = np.float32(0.0)  # x^T V^-1 x = (x^T V^-1) . x
            for j in range(d):
                mean += x[r, k, j] * theta[r, j]
                quadratic += x_gram_inverse[r, k, j] * x[r, k, j]
            out[r, k] = mean + nu[r] * np.float32(math.sqrt(max(quadratic, np.float32(0.0))))


def ucb_scores(contexts: torch.Tensor, theta_hat: torch.Tensor, gram_inverse: torch.Tensor,
               nu: torch.Tensor) -> torch.Tensor:
    """Loop version of :func:`agents.linear.ucb_scores`: ``x . theta_hat + nu sqrt(x^T V^-1 x)`` per arm, ``(R, K)``,
    in two calls (the batched product ``x^T V^-1``, then one loop for the rest) where the torch definition makes
    nine."""
    out = np.empty(contexts.shape[:2], np.float32)
    by_replicas(_ucb_scores, contexts.numpy(), theta_hat.numpy(), (contexts @ gram_inverse).numpy(), nu.numpy(),
                out)
    return torch.from_numpy(out)


@njit(**_JIT)
def _add_observation(gram, moment, x, rewards, gram_new, moment_new):
    R, d = moment.shape
    for r in range(R):
        for i in range(d):
            for j in range(d):
                gram_new[r, i, j] = gram[r, i, j] + x[r, i] * x[r, j]
            moment_new[r, i] = moment[r, i] + rewards[r] * x[r, i]


def add_observation(gram: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                    rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loop version of :func:`agents.models.reward.add_observation`: ``V + x x^T`` and ``b + r x``."""
    gram_new, moment_new = np.empty(gram.shape, np.float32), np.empty(moment.shape, np.float32)
    _add_observation(gram.numpy(), moment.numpy(), x.numpy(), rewards.numpy(), gram_new, moment_new)
    return torch.from_numpy(gram_new), torch.from_numpy(moment_new)


# -- agents.linear: the ridge agents' round ---------------------------------------------------------
def enabled_with_float64(gram: torch.Tensor, *tensors: torch.Tensor) -> bool:
    """:func:`enabled` for ``tensors``, with ``gram`` a float64 CPU tensor (the ridge agents' ``V``)."""
    return enabled(*tensors) and gram.is_cpu and gram.dtype == torch.float64


@njit(**_JIT)
def _ridge_update(gram_inverse, moment, x, rewards, inverse_new, moment_new, theta_new):
    R, d = x.shape
    vx = np.empty(d, np.float32)
    for r in range(R):
        denominator = np.float32(0.0)
        for i in range(d):
            acc = np.float32(0.0)
            for j in range(d):
                acc += gram_inverse[r, i, j] * x[r, j]
            vx[i] = acc  # V^-1 x
            denominator += acc * x[r, i]
        denominator += np.float32(1.0)  # 1 + x^T V^-1 x
        for i in range(d):
            for j in range(d):
                inverse_new[r, i, j] = gram_inverse[r, i, j] - vx[i] * vx[j] / denominator
            moment_new[r, i] = moment[r, i] + rewards[r] * x[r, i]
        for i in range(d):
            acc = np.float32(0.0)
            for j in range(d):
                acc += inverse_new[r, i, j] * moment_new[r, j]
            theta_new[r, i] = acc


def ridge_update(gram_inverse: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                 rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loop version of :func:`agents.linear.ridge_update`: Sherman-Morrison, ``b + r x`` and ``V^-1 b``."""
    inverse_new, moment_new = np.empty(gram_inverse.shape, np.float32), np.empty(moment.shape, np.float32)
    theta_new = np.empty(moment.shape, np.float32)
    by_replicas(_ridge_update, gram_inverse.numpy(), moment.numpy(), x.numpy(), rewards.numpy(), inverse_new,
                moment_new, theta_new)
    return torch.from_numpy(inverse_new), torch.from_numpy(moment_new), torch.from_numpy(theta_new)


@njit(**_JIT)
def _potter_update(root, moment, x, rewards, root_new, moment_new, theta_new):
    R, d = x.shape
    p = np.empty(d, np.float32)
    sp = np.empty(d, np.float32)
    w = np.empty(d, np.float32)
    one = np.float32(1.0)
    for r in range(R):
        norm = np.float32(0.0)
        for j in range(d):  # p = S^T x
            acc = np.float32(0.0)
            for i in range(d):
                acc += root[r, i, j] * x[r, i]
            p[j] = acc
            norm += acc * acc
        q = np.sqrt(norm + one)
        c = q * (q + one)
        for i in range(d):  # S p / (q (1 + q))
            acc = np.float32(0.0)
            for j in range(d):
                acc += root[r, i, j] * p[j]
            sp[i] = acc / c
        for i in range(d):
            for j in range(d):
                root_new[r, i, j] = root[r, i, j] - sp[i] * p[j]
            moment_new[r, i] = moment[r, i] + rewards[r] * x[r, i]
        for j in range(d):  # w = S^T b
            acc = np.float32(0.0)
            for i in range(d):
                acc += root_new[r, i, j] * moment_new[r, i]
            w[j] = acc
        for i in range(d):  # theta_hat = S w
            acc = np.float32(0.0)
            for j in range(d):
                acc += root_new[r, i, j] * w[j]
            theta_new[r, i] = acc


def potter_update(root: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loop version of :func:`agents.linear.potter_update`: Potter's update of ``S``, ``b + r x`` and ``S S^T b``."""
    root_new, moment_new = np.empty(root.shape, np.float32), np.empty(moment.shape, np.float32)
    theta_new = np.empty(moment.shape, np.float32)
    by_replicas(_potter_update, root.numpy(), moment.numpy(), x.numpy(), rewards.numpy(), root_new, moment_new,
                theta_new)
    return torch.from_numpy(root_new), torch.from_numpy(moment_new), torch.from_numpy(theta_new)


@njit(**_JIT)
def _add_outer(gram, x, out):
    R, d = x.shape
    for r in range(R):
        for i in range(d):
            x_i = np.float64(x[r, i])
            for j in range(d):
                out[r, i, j] = gram[r, i, j] + x_i * np.float64(x[r, j])


def add_outer(gram: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Loop version of :func:`agents.linear.add_outer`: ``V + x x^T`` in float64 (``V`` float64, ``x`` float32)."""
    out = np.empty(gram.shape, np.float64)
    by_replicas(_add_outer, gram.numpy(), x.numpy(), out)
    return torch.from_numpy(out)


@njit(**_JIT)
def _add_feature_sums(square_sum, nonzero_rows, z, square_new, nonzero_new):
    R, K, p = z.shape
    for r in range(R):
        for j in range(p):
            squares = np.float32(0.0)
            count = np.float32(0.0)
            for k in range(K):
                value = z[r, k, j]
                squares += value * value
                if value != 0:
                    count += np.float32(1.0)
            square_new[r, j] = square_sum[r, j] + squares
            nonzero_new[r, j] = nonzero_rows[r, j] + count


def add_feature_sums(square_sum: torch.Tensor, nonzero_rows: torch.Tensor,
                     z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loop version of :func:`agents.linear.add_feature_sums`: the sums of squares and counts of nonzero entries."""
    square_new, nonzero_new = np.empty(square_sum.shape, np.float32), np.empty(nonzero_rows.shape, np.float32)
    by_replicas(_add_feature_sums, square_sum.numpy(), nonzero_rows.numpy(), z.numpy(), square_new, nonzero_new)
    return torch.from_numpy(square_new), torch.from_numpy(nonzero_new)


# -- agents.models.mlp.MLPModel: a hand-written backward pass ----------------------------------------
# The definition is autograd (``MLPModel.gradient``, ``arm_gradients``, ``gradient_squares``,
# ``gradient_norms`` with the switch off); these compute the same sums by back-propagating the
# layers' ``d f / d z`` by hand, on any device (torch code, so only the switch is checked), and
# never form ``g`` ``(R, n, p)`` where only its squares are needed.
def act_backward(model, delta: torch.Tensor, z_sign: torch.Tensor) -> torch.Tensor:
    """``delta * act'(z)``, where ``z_sign`` has the sign of ``z`` (the activation's output does)."""
    if model.activation == "relu":
        return delta * (z_sign > 0)
    # autograd's own op for leaky_relu: ``delta if z > 0 else slope * delta``, the same products, in one call
    return torch.ops.aten.leaky_relu_backward(delta, z_sign, model.leaky_slope, True)


def mlp_backward(model, layers: list, inputs: list, output_grad: torch.Tensor) -> list[tuple]:
    """Back-propagate ``dL/df`` ``(R, n)`` through the ``(W_l, b_l)`` of ``model.layers``: per layer ``dL/dz_l``
    ``(R, n, out)`` and its input ``(R, n, in)``."""
    delta = output_grad[:, :, None]  # (R, n, 1)
    steps = []
    for index, (weight, _) in reversed(list(enumerate(layers))):
        steps.append((delta, inputs[index]))
        if index > 0:  # the layer's input act(z_{l-1}) has the sign of z_{l-1} (both activations)
            delta = act_backward(model, torch.bmm(delta, weight), inputs[index])  # (R, n, in)
    return steps[::-1]


def outer_rows(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Per row, each layer's ``(delta h^T, delta)`` flattened and concatenated, ``(R, n, p)``: the gradient of
    the row's output, from each layer's ``d f / d z`` ``(R, n, out)`` and input ``h`` ``(R, n, in)``."""
    pieces = []
    for delta, h in pairs:
        pieces += [(delta[:, :, :, None] * h[:, :, None, :]).flatten(2), delta]  # (R, n, o i), (R, n, o)
    return torch.cat(pieces, dim=2)


def _squared(rows):
    """Dense rows or :class:`agents.models.blocks.BlockRows` with their values squared."""
    return rows**2 if isinstance(rows, torch.Tensor) else dataclasses.replace(rows, values=rows.values**2)


def mlp_gradient(model, params: torch.Tensor, batch: torch.Tensor | None) -> torch.Tensor:
    """Hand-written :meth:`agents.models.mlp.MLPModel.gradient`: ``grad L_t`` ``(R, p)``."""
    x, r, scale = model.rows(batch)
    layers = model.layers(params)
    prediction, inputs = model.forward_layers(layers, x)
    pieces = []
    for delta, h_in in mlp_backward(model, layers, inputs, 2.0 * scale * (prediction - r)):
        if isinstance(h_in, torch.Tensor):
            weight_grad = torch.bmm(delta.transpose(1, 2), h_in)  # (R, o, i)
        else:
            weight_grad = block_weight_gradient(delta, h_in)  # (R, o, i)
        pieces += [weight_grad.flatten(1), delta.sum(dim=1)]  # dW (R, o i), db (R, o)
    gradient = torch.cat(pieces, dim=1)  # (R, p)
    return gradient.addcmul_(2.0 * model.lambda_reg[:, None], params)  # + 2 lambda theta, in place: one pass


def mlp_gradient_squares(model, params: torch.Tensor, batch: torch.Tensor | None) -> torch.Tensor:
    """:meth:`agents.models.mlp.MLPModel.gradient_squares` without forming ``g``. Layer ``l``'s part of ``g(x_i)`` is
    ``delta_i h_i^T`` (weights) and ``delta_i`` (biases), so the sum over rows of its square is
    ``(delta^2)^T h^2`` and ``sum_i delta_i^2``: one product of the loss gradient's size."""
    x, _, scale = model.rows(batch)
    layers = model.layers(params)
    prediction, inputs = model.forward_layers(layers, x)
    pieces = []
    for delta, h_in in mlp_backward(model, layers, inputs, torch.ones_like(prediction)):
        squares = delta**2  # (R, n, o)
        if isinstance(h_in, torch.Tensor):
            weight = torch.bmm(squares.transpose(1, 2), h_in**2)  # (R, o, i)
        else:
            weight = block_weight_gradient(squares, _squared(h_in))
        pieces += [weight.flatten(1), squares.sum(dim=1)]
    return scale * torch.cat(pieces, dim=1)  # (R, p)


def mlp_arm_gradients(model, params: torch.Tensor, contexts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Hand-written :meth:`agents.models.mlp.MLPModel.arm_gradients`: ``f(x_k)`` ``(R, K)`` and ``g(x_k)``
    ``(R, K, p)``."""
    layers = model.layers(params)
    prediction, inputs = model.forward_layers(layers, contexts)
    steps = mlp_backward(model, layers, inputs, torch.ones_like(prediction))
    (delta, h_in), rest = steps[0], steps[1:]
    if isinstance(h_in, torch.Tensor):
        return prediction, outer_rows(steps)
    R, K = prediction.shape
    g = prediction.new_zeros(R, K, model.n_params)  # (R, K, p)
    first = model.layer_shapes[0][0] * model.dim
    block_outer_rows(delta, h_in, out=g[:, :, :first])  # first layer: zero outside each arm's block
    g[:, :, first:] = torch.cat([delta, outer_rows(rest)], dim=2) if rest else delta
    return prediction, g


def mlp_gradient_norms(model, params: torch.Tensor, contexts: torch.Tensor,
                       weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`agents.models.mlp.MLPModel.gradient_norms` without forming ``g``. Layer ``l``'s part of ``g`` is
    ``delta h^T`` (weights) and ``delta`` (biases), so its share of ``sum_j w_j g_j^2`` is
    ``delta^2 . (W_w h^2) + delta^2 . w_b``: one product of a forward pass's size."""
    layers = model.layers(params)
    prediction, inputs = model.forward_layers(layers, contexts)
    steps = mlp_backward(model, layers, inputs, torch.ones_like(prediction))
    total = torch.zeros_like(prediction)  # (R, K)
    for (delta, h_in), (weight_w, bias_w) in zip(steps, model.layers(weights), strict=True):
        if isinstance(h_in, torch.Tensor):
            weighted = torch.bmm(h_in**2, weight_w.transpose(1, 2))  # (R, K, o)
        else:
            weighted = block_matmul(_squared(h_in), weight_w)  # (R, K, o)
        total = total + (delta**2 * (weighted + bias_w[:, None, :])).sum(dim=-1)
    return prediction, total


# -- agents.models.mlp.MLPModel's first layer for one-hot-block rows (agents.models.blocks.BlockRows) --------------
def _grouped(rows: BlockRows) -> tuple[torch.Tensor, int]:
    """Where each row goes when every replica's rows are grouped by block, each group padded to the largest:
    flat indices into ``(R, N, c)`` ``(R n,)``, and ``c``."""
    R, n, _ = rows.values.shape
    onehot = F.one_hot(rows.block, rows.n_blocks)  # (R, n, N)
    rank = (onehot.cumsum(dim=1) * onehot).sum(dim=-1) - 1  # (R, n): the row's place in its block's group
    width = int(onehot.sum(dim=1).max())  # c: rows in the largest group
    replica = torch.arange(R, device=rows.block.device)[:, None]  # (R, 1)
    return ((replica * rows.n_blocks + rows.block) * width + rank).reshape(-1), width


def _padded(rows: BlockRows, index: torch.Tensor, width: int) -> torch.Tensor:
    """The rows' values grouped by block, ``(R, N, c, d)`` (zeros in the padding)."""
    R, n, d = rows.values.shape
    padded = rows.values.new_zeros(R * rows.n_blocks * width, d)
    return padded.index_copy(0, index, rows.values.reshape(R * n, d)).view(R, rows.n_blocks, width, d)


def block_matmul(rows: BlockRows, weight: torch.Tensor) -> torch.Tensor:
    """``x W^T`` for rows in block form: ``W[:, block j] x`` for a row in block ``j``, ``(R, n, o)``.

    ``weight`` is the dense first layer ``(R, o, N d)``. Rows are grouped by block (padded to the largest
    group), and block ``j``'s rows meet block ``j``'s columns only: ``c N d o`` multiply-adds per replica
    against the dense ``n N d o``, with ``c`` about ``n / N`` (one for an arm set). One product batched
    over blocks per replica, on a strided view of the weights (a product batched over replicas too
    copied them; one per (replica, block) made many small calls that waited for torch's thread pool).
    """
    R, n, d = rows.values.shape
    o = weight.shape[1]
    per_block = weight.reshape(R, o, rows.n_blocks, d).permute(0, 2, 3, 1)  # (R, N, d, o), a view
    if n == rows.n_blocks and torch.equal(rows.block, torch.arange(n, device=rows.block.device).expand(R, n)):
        # an arm set, arm j in block j (the real-data envs): one matrix-vector product per (replica, arm); a
        # batched product copied W here (20x slower, measured), and grouping rows costs passes over them
        return torch.stack([torch.stack([rows.values[r, j] @ per_block[r, j] for j in range(n)])
                            for r in range(R)])  # (R, K, o)
    index, width = _grouped(rows)
    padded = _padded(rows, index, width)  # (R, N, c, d)
    z = torch.stack([torch.bmm(padded[r], per_block[r]) for r in range(R)])  # (R, N, c, o): no copy of W
    return z.reshape(-1, o).index_select(0, index).view(R, n, o)


def block_weight_gradient(delta: torch.Tensor, rows: BlockRows) -> torch.Tensor:
    """``sum_rows delta x^T`` for rows in block form, in the dense layout ``(R, o, N d)``: block ``j`` of
    the gradient sums ``delta x^T`` over the rows in block ``j``. ``delta``: ``(R, n, o)``."""
    R, n, d = rows.values.shape
    o = delta.shape[2]
    index, width = _grouped(rows)
    padded = _padded(rows, index, width)  # (R, N, c, d)
    deltas = delta.new_zeros(R * rows.n_blocks * width, o).index_copy(0, index, delta.reshape(R * n, o))
    per_block = deltas.view(R, rows.n_blocks, width, o).transpose(2, 3) @ padded  # (R, N, o, d)
    return per_block.transpose(1, 2).reshape(R, o, rows.n_blocks * d)


def block_outer_rows(delta: torch.Tensor, rows: BlockRows, out: torch.Tensor | None = None) -> torch.Tensor:
    """Per row, ``delta x^T`` in the dense layout, flattened: ``(R, n, o N d)``, zero outside the row's block.
    ``delta``: ``(R, n, o)``. ``out``: a zero tensor of that shape to write into (e.g. a view of a larger one)."""
    R, n, d = rows.values.shape
    o = delta.shape[2]
    outer = delta[:, :, :, None, None] * rows.values[:, :, None, None, :]  # (R, n, o, 1, d)
    out = delta.new_zeros(R, n, o * rows.n_blocks * d) if out is None else out
    index = rows.block[:, :, None, None, None].expand(-1, -1, o, 1, d)
    out.view(R, n, o, rows.n_blocks, d).scatter_(3, index, outer)
    return out


@njit(**_JIT)
def _unique_argmax(values, out):
    """Each row's only maximiser into ``out`` (0 for a row with a NaN); False as soon as a row has a tie."""
    R, K = values.shape
    for r in range(R):
        index, count, has_nan = 0, 0, False
        best = values[r, 0]
        for k in range(K):
            v = values[r, k]
            if v != v:
                has_nan = True
            elif count == 0 or v > best:
                best, index, count = v, k, 1
            elif v == best:
                count += 1
        if has_nan:
            out[r] = 0  # torch's amax of the row is NaN, which equals no entry: the byte argmax of all zeros
        elif count > 1:
            return False
        else:
            out[r] = index
    return True


def unique_argmax(values: torch.Tensor) -> torch.Tensor | None:
    """The speed device of :meth:`agents.base.BanditAgent._argmax` (CPU, ``BANDIT_GYM_KERNELS``): each row's only
    maximiser ``(R, K) -> (R,)`` (arm 0 for a row with a NaN, which has none), or None where some row has a tie.

    Without a tie :func:`agents.base.random_argmax`'s answer is that maximiser whatever the draws, so the round's tie
    draws (6 torch calls with the kernels on) are skipped; a draw is a function of the round, so skipping one changes no
    later draw. One compiled loop over the rows (the torch form, ``values == values.amax(dim=1, keepdim=True)``
    counted per row, made 7 calls). Measured: ``benchmarks/speed_devices.py``, rows ``argmax-shortcut``.
    """
    out = np.empty(values.shape[0], np.int64)
    return torch.from_numpy(out) if _unique_argmax(values.numpy(), out) else None
