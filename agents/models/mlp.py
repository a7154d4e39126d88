"""Neural reward models, batched over R replicas: the MLP and a user's own ``nn.Module`` (public API).

Both keep the data in a :class:`agents.loop.history.History` and define the loss of the paper's neural
bandits (Section 4.3), squared error plus a ridge term::

    L_t(theta) = sum_i (f(x_i; theta) - r_i)^2 + lambda ||theta||^2

Parameters are a flat ``(R, p)`` tensor (the :class:`agents.models.reward.RewardModel` seam); replica
``r``'s network is initialised from its own key (stream ``INIT``), so replica ``r`` of a batch
seeded ``s`` starts from the network of a single run seeded ``s + r``.

* :class:`MLPModel` (``model="mlp"`` or ``model=MLP(...)``): a fully connected network written
  as batched matrix products over the replica axis; the loss gradient and the per-arm gradient
  features ``g(x) = df(x; theta)/dtheta`` that NeuralUCB and NeuralTS need are autograd's. A
  hand-written backward pass computes the same (tested) in :mod:`agents._kernels`, used unless
  ``BANDIT_GYM_KERNELS=0``.
* :class:`ModuleModel` (``model=my_module``): any ``nn.Module`` mapping ``(..., d) -> (...)``;
  R stacked parameter copies evaluated with ``torch.func.functional_call`` and ``vmap``,
  gradients by autograd.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from agents import _kernels
from agents.models.blocks import BlockRows, split_blocks
from agents.models.reward import MODELS, HistoryModel, RewardModel
from agents.validation import check_choice, check_int
from bandit_gym import rng
from bandit_gym.rng import Stream

ACTIVATIONS = ("relu", "leaky_relu")
LEAKY_SLOPE = 0.01  # torch's default negative slope
#: Default ridge weight of the neural models' loss. With lambda = 1 and eta_1 = eta_0 the first rounds'
#: steps shrink the weights geometrically (the loss has one or two rows) and every network collapsed to
#: a constant output on the quadratic bandit (measured; benchmarks/results/quadratic_paper.md).
NEURAL_LAMBDA_REG = 1e-3


@dataclass(frozen=True)
class MLP:
    """A fully connected network ``d -> hidden[0] -> ... -> hidden[-1] -> 1`` (a model description).

    ``LMCTS(env, model=MLP(hidden=(20, 20, 20), activation="leaky_relu"))`` is
    ``LMCTS(env, model="mlp", model_kwargs={"hidden": (20, 20, 20), "activation": "leaky_relu"})``.
    """

    hidden: tuple[int, ...] = (20, 20, 20)
    activation: str = "leaky_relu"
    block_arms: int | None = None

    def kwargs(self) -> dict[str, Any]:
        """The same network as ``model="mlp"`` keywords (what an agent saves)."""
        kwargs = {"hidden": list(self.hidden), "activation": self.activation}
        return kwargs if self.block_arms is None else {**kwargs, "block_arms": self.block_arms}


class _NeuralModel(HistoryModel):
    """Shared part of the neural models: the squared loss over the history (:class:`HistoryModel`)."""

    #: LMC-TS draws each inner step's noise when the step runs and skips round 1's prior chain.
    per_step_noise = True
    # LMC-TS's neural defaults (eta_0, beta, lambda) are ``LMCTS.defaults["neural"]``, set with lambda before
    # the model is built; the baselines' are in agents/neural.py.

    def loss(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        x, r, scale = self.rows(batch)
        residual = self.scores(params, x) - r  # (R, n)
        return scale * (residual**2).sum(dim=1) + self.lambda_reg * (params**2).sum(dim=1)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``grad L_t`` (or its mini-batch estimate, rows rescaled by ``n / B``) by autograd, ``(R, p)``."""
        with torch.enable_grad():
            params = params.detach().requires_grad_()
            (gradient,) = torch.autograd.grad(self.loss(params, batch).sum(), params)
        return gradient

    def gradient_squares(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``sum_i g(x_i)^2`` over the stored rows (or a mini-batch, times ``n / B``), ``(R, p)``: half the diagonal
        of the Gauss-Newton matrix ``2 sum_i g(x_i) g(x_i)^T`` of the squared loss (LMC-TS's preconditioner).
        From :meth:`arm_gradients` here; a model may compute it without forming ``g`` ``(R, n, p)``."""
        x, _, scale = self.rows(batch)
        _, g = self.arm_gradients(params, x)
        return scale * (g**2).sum(dim=1)

    def gradient_norms(self, params: torch.Tensor, contexts: torch.Tensor,
                       weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``f(x_k)`` ``(R, K)`` and the weighted squared norms ``sum_j w_j g_j(x_k)^2`` ``(R, K)`` of the per-arm
        gradients, for weights ``w`` ``(R, p)`` (NeuralUCB / NeuralTS: ``w = 1 / U``). From
        :meth:`arm_gradients` here; a model may compute them without forming ``g`` ``(R, K, p)``."""
        mean, g = self.arm_gradients(params, contexts)
        return mean, (g**2 * weights[:, None, :]).sum(dim=-1)


class MLPModel(_NeuralModel):
    """A batched fully connected network ``f(x; theta)``; one set of weights per replica.

    Layer ``l`` maps ``h -> act(h W_l^T + b_l)`` (no activation after the last, scalar, layer);
    ``theta`` concatenates ``(W_1, b_1, ..., W_L, b_L)``. Replica ``r``'s weights start from He
    initialisation drawn from its key's ``INIT`` stream (:meth:`initial_params`).

    Args:
        num_replicas, dim, lambda_reg, device: See :class:`agents.models.reward.RewardModel`.
        keys: The replicas' random keys ``(R,)`` (``BanditAgent.keys``), for the initialisation.
        hidden: Widths of the hidden layers (the paper: ``(20, 20, 20)``, ``(100,)``, ``(50, 50, 50)``).
        activation: ``"leaky_relu"`` (slope 0.01, the default) or ``"relu"`` (the papers'). A ReLU unit that is
            inactive on every stored row has a zero gradient, so gradient descent never revives it and the
            agents' exploration statistics never see it; the leaky slope keeps every unit trainable. Measured
            on ``QuadraticBandit-v0`` at NeuralTS's defaults (seeds 0-9, regret of rounds 2,001-3,000): ReLU
            [140, 452, 270, 164, 153, 452, 140, 202, 140, 223], two seeds still at LinTS's 0.45 per round;
            leaky ReLU [143, 193, 169, 140, 132, 230, 175, 115, 144, 143].
        block_arms: ``N`` for one-hot-block features (the real-data envs: arm ``j``'s features are the
            example in block ``j`` of ``N`` blocks of ``d / N``): the first layer then multiplies only
            each row's block (:mod:`agents.models.blocks`; the same numbers, about ``N`` times fewer operations;
            the dense layer with ``BANDIT_GYM_KERNELS=0``) and the history keeps ``d / N`` values per row.
            None (default): the dense first layer.
    """

    leaky_slope = LEAKY_SLOPE

    def __init__(self, num_replicas: int, dim: int, lambda_reg: torch.Tensor, device: torch.device, *,
                 keys: torch.Tensor, hidden: Any = (20, 20, 20), activation: str = "leaky_relu",
                 block_arms: int | None = None) -> None:
        if block_arms is not None:
            block_arms = check_int("block_arms", block_arms, minimum=2)
            if dim % block_arms:
                raise ValueError(f"block_arms must divide the feature dimension {dim} into equal blocks, "
                                 f"got {block_arms}")
        self.block_arms = block_arms
        super().__init__(num_replicas, dim, lambda_reg, device)
        if isinstance(hidden, int) or not all(isinstance(w, int) for w in hidden):
            raise ValueError(f"hidden must be a sequence of layer widths (integers >= 1), got {hidden!r}")
        self.hidden = tuple(check_int("hidden", w) for w in hidden)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.keys = keys
        sizes = (dim, *self.hidden, 1)
        self.layer_shapes = list(zip(sizes[1:], sizes[:-1], strict=True))  # (out, in) per layer
        self._piece_sizes = [size for o, i in self.layer_shapes for size in (o * i, o)]  # W_1, b_1, W_2, ...
        self._n_params = sum(self._piece_sizes)

    @property
    def n_params(self) -> int:
        return self._n_params

    def initial_params(self) -> torch.Tensor:
        """He initialisation: ``W_l ~ N(0, 2 / fan_in)`` (``N(0, 1 / fan_in)`` for the linear last layer), ``b_l = 0``.

        (torch's ``nn.Linear`` default, uniform in ``+-1/sqrt(fan_in)``, shrinks the signal of unit-norm
        inputs about 2.5x per ReLU layer; on the quadratic bandit the 20-20-20 networks then fitted
        the mean reward with their biases and collapsed to a constant output: measured.)
        """
        pieces = []
        for layer, (fan_out, fan_in) in enumerate(self.layer_shapes):
            gain = 1.0 if layer == len(self.layer_shapes) - 1 else 2.0
            z = rng.normal(self.keys.cpu(), Stream.INIT, layer, (fan_out * fan_in,))  # (R, o i)
            pieces += [z * math.sqrt(gain / fan_in), torch.zeros(len(self.keys), fan_out)]
        return torch.cat(pieces, dim=1).to(self.device)  # (R, p)

    def layers(self, params: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``(W_l, b_l)`` views of the flat parameters: ``(R, out, in)``, ``(R, out)``."""
        pieces = params.split(self._piece_sizes, dim=1)  # W_1 (R, o i), b_1 (R, o), W_2, ...: one call for all views
        return [(weight.reshape(-1, fan_out, fan_in), bias) for (fan_out, fan_in), weight, bias
                in zip(self.layer_shapes, pieces[0::2], pieces[1::2], strict=True)]

    def _act(self, z: torch.Tensor) -> torch.Tensor:
        return F.relu(z) if self.activation == "relu" else F.leaky_relu(z, LEAKY_SLOPE)

    # -- block-aware first layer (agents/models/blocks.py): rows stored as their block's values and index ------------
    def history_fields(self) -> dict[str, tuple[int, ...]]:
        if self.block_arms is None:
            return super().history_fields()
        return {"features": (self.dim // self.block_arms,), "block": (), "rewards": ()}

    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        if self.block_arms is None:
            return super().add(features, rewards)
        rows = split_blocks(features[:, None, :], self.block_arms)
        self.data.append(features=rows.values[:, 0], block=rows.block[:, 0].float(), rewards=rewards)

    def rows(self, batch: torch.Tensor | None) -> tuple[torch.Tensor | BlockRows, torch.Tensor, float]:
        if self.block_arms is None:
            return super().rows(batch)
        x, block, r = self.data["features"], self.data["block"].long(), self.data["rewards"]  # (R, n, d / N), ...
        if batch is None:
            return BlockRows(x, block, self.block_arms), r, 1.0
        batch_d = batch[:, :, None].expand(-1, -1, x.shape[2])  # (R, B, d / N)
        rows = BlockRows(x.gather(1, batch_d), block.gather(1, batch), self.block_arms)
        return rows, r.gather(1, batch), len(self.data) / batch.shape[1]

    def _as_rows(self, x: torch.Tensor | BlockRows) -> torch.Tensor | BlockRows:
        """Inputs as the first layer takes them: dense ``(R, n, d)``, or :class:`BlockRows` with ``block_arms``
        and the kernels on (``BANDIT_GYM_KERNELS``)."""
        if self.block_arms is None:
            return x
        if not _kernels.enabled():
            return x.dense() if isinstance(x, BlockRows) else x
        return x if isinstance(x, BlockRows) else split_blocks(x, self.block_arms)

    # -- forward and backward passes -----------------------------------------------------------------------
    def forward(self, params: torch.Tensor, x: torch.Tensor | BlockRows) -> tuple[torch.Tensor, list]:
        """``f(x; theta)`` ``(R, n)`` for inputs ``(R, n, d)``, and each layer's input ``(R, n, width)``
        (the first as given, or as :class:`agents.models.blocks.BlockRows` with ``block_arms``)."""
        return self.forward_layers(self.layers(params), x)

    def forward_layers(self, layers: list[tuple[torch.Tensor, torch.Tensor]],
                       x: torch.Tensor | BlockRows) -> tuple[torch.Tensor, list]:
        """:meth:`forward` on the :meth:`layers` views already taken (a backward pass reuses them)."""
        inputs, h = [], self._as_rows(x)
        for index, (weight, bias) in enumerate(layers):
            inputs.append(h)
            if isinstance(h, BlockRows):
                z = _kernels.block_matmul(h, weight) + bias[:, None, :]  # (R, n, out): only each row's block of W
            else:
                z = torch.bmm(h, weight.transpose(1, 2)) + bias[:, None, :]  # (R, n, out)
            h = z if index == len(layers) - 1 else self._act(z)
        return h[..., 0], inputs

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return self.forward(params, contexts)[0]  # (R, K)

    def features(self, params: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The last hidden layer's output ``(R, n, hidden[-1])`` (Neural-LinUCB's features)."""
        return self.forward(params, x)[1][-1]

    # -- gradients: autograd (the definition), or agents/_kernels.py's hand-written backward pass -----------
    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        if _kernels.enabled():
            return _kernels.mlp_gradient(self, params, batch)
        return super().gradient(params, batch)

    def gradient_squares(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        if _kernels.enabled():
            return _kernels.mlp_gradient_squares(self, params, batch)
        return super().gradient_squares(params, batch)

    def arm_gradients(self, params: torch.Tensor, contexts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``f(x_k)`` ``(R, K)`` and ``g(x_k) = df(x_k; theta)/dtheta`` ``(R, K, p)`` for every arm, by one backward
        pass through a copy of ``theta_r`` per arm (the sum's gradient with respect to a copy is its arm's own)."""
        if _kernels.enabled():
            return _kernels.mlp_arm_gradients(self, params, contexts)
        contexts = self._as_rows(contexts)  # dense (the stored rows may be in block form)
        replicas, arms, dim = contexts.shape
        with torch.enable_grad():  # one copy of theta per arm: arm k's output depends on its own copy only, so the
            copies = params.detach()[:, None, :].expand(-1, arms, -1).reshape(replicas * arms, -1).requires_grad_()
            outputs = self.scores(copies, contexts.reshape(replicas * arms, 1, dim))  # (R K, 1)
            (g,) = torch.autograd.grad(outputs.sum(), copies)  # gradient of the sum is each arm's own
        return outputs.detach().reshape(replicas, arms), g.reshape(replicas, arms, -1)

    def gradient_norms(self, params: torch.Tensor, contexts: torch.Tensor,
                       weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if _kernels.enabled():
            return _kernels.mlp_gradient_norms(self, params, contexts, weights)
        return super().gradient_norms(params, contexts, weights)


class ModuleModel(_NeuralModel):
    """A user's ``nn.Module`` mapping ``(..., d) -> (...)``, as R independent copies.

    Replica ``r``'s copy is ``module`` with every submodule's ``reset_parameters()`` re-run under a
    torch seed drawn from its key's ``INIT`` stream (inside ``torch.random.fork_rng``: the global
    generator is left as it was). The copies are stacked into ``(R, p)`` and evaluated with
    ``torch.func.functional_call`` under ``vmap``; gradients come from autograd.

    Args:
        num_replicas, dim, lambda_reg, device: See :class:`agents.models.reward.RewardModel`.
        keys: The replicas' random keys ``(R,)``.
        module: The network; it must have parameters, and at least one submodule with
            ``reset_parameters`` (``nn.Linear``, ``nn.Conv2d``, ...), so that copies can differ.
    """

    def __init__(self, num_replicas: int, dim: int, lambda_reg: torch.Tensor, device: torch.device, *,
                 keys: torch.Tensor, module: torch.nn.Module) -> None:
        super().__init__(num_replicas, dim, lambda_reg, device)
        if not isinstance(module, torch.nn.Module) or not list(module.parameters()):
            raise ValueError(f"model must be an nn.Module with parameters, got {module!r}")
        if not any(hasattr(m, "reset_parameters") for m in module.modules()):
            raise ValueError(f"model {type(module).__name__} has no submodule with reset_parameters(): "
                             "its R copies could not be initialised independently")
        self.module = copy.deepcopy(module).to(device)
        self.names = [name for name, _ in self.module.named_parameters()]
        self.shapes = [p.shape for _, p in self.module.named_parameters()]
        self.keys = keys
        self._n_params = sum(math.prod(s) for s in self.shapes)

    @property
    def n_params(self) -> int:
        return self._n_params

    def initial_params(self) -> torch.Tensor:
        seeds = rng.random_words(self.keys.cpu(), Stream.INIT, 0, 1)[:, 0] & ((1 << 62) - 1)  # (R,)
        copies = []
        for seed in seeds.tolist():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                replica = copy.deepcopy(self.module).cpu()
                for submodule in replica.modules():
                    if hasattr(submodule, "reset_parameters"):
                        submodule.reset_parameters()
            copies.append(torch.cat([p.detach().flatten() for p in replica.parameters()]))
        return torch.stack(copies).to(self.device)  # (R, p)

    def _unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """One replica's ``(p,)`` parameters as the module's named tensors."""
        pieces = torch.split(flat, [math.prod(s) for s in self.shapes])
        return {name: piece.reshape(shape) for name, piece, shape in zip(self.names, pieces, self.shapes, strict=True)}

    def _single(self, flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """One replica: ``(p,), (n, d) -> (n,)``."""
        return functional_call(self.module, self._unflatten(flat), (x,))

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return vmap(self._single)(params, contexts)  # (R, K)

    def arm_gradients(self, params: torch.Tensor, contexts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``f(x_k)`` ``(R, K)`` and ``df(x_k)/dtheta`` ``(R, K, p)``: ``vmap`` over replicas and arms of ``grad``."""
        def one(flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return self._single(flat, x[None])[0]
        gradients = vmap(vmap(grad(one), in_dims=(None, 0)))(params, contexts)  # (R, K, p)
        return self.scores(params, contexts), gradients


def is_neural(model: Any) -> bool:
    """Whether an agent's ``model=`` argument names a neural model."""
    return isinstance(model, torch.nn.Module | MLP) or (isinstance(model, str) and model == "mlp")


def build_model(model: Any, model_kwargs: dict | None, num_replicas: int, dim: int, lambda_reg: torch.Tensor,
                device: torch.device, keys: torch.Tensor) -> RewardModel:
    """The reward model an agent's ``model=`` argument names: a name in ``MODELS``, an :class:`MLP`,
    or an ``nn.Module``."""
    kwargs = dict(model_kwargs or {})
    if isinstance(model, torch.nn.Module):
        return ModuleModel(num_replicas, dim, lambda_reg, device, keys=keys, module=model, **kwargs)
    if isinstance(model, MLP):
        return MLPModel(num_replicas, dim, lambda_reg, device, keys=keys, hidden=model.hidden,
                        activation=model.activation, block_arms=model.block_arms)
    model_class = MODELS[check_choice("model", model, sorted(MODELS))]
    if issubclass(model_class, _NeuralModel):
        kwargs["keys"] = keys
    return model_class(num_replicas, dim, lambda_reg, device, **kwargs)


MODELS["mlp"] = MLPModel
