"""The block-aware first layer of the MLP, for one-hot-block arm features (public API).

The real-data bandits (UCI, CIFAR10) turn a ``d``-dimensional example ``x`` into ``N`` arms
``x^(j) = (0, ..., x, ..., 0)`` in ``R^{N d}``, ``x`` in block ``j``. A dense first layer
``W x^(j)``, ``W`` of shape ``(out, N d)``, multiplies ``N - 1`` blocks of zeros; only the ``d``
columns of block ``j`` touch arm ``j``: ``W x^(j) = W[:, block j] x``. The functions here compute
exactly that (the same numbers up to float32 summation order, about ``N`` times fewer
multiply-adds, and a history of ``d``-long rows instead of ``N d``-long ones). The dense product
in :class:`agents.mlp.MLPModel` stays the definition; ``tests/agents/test_block_first_layer.py``
compares the two (forward pass, loss gradient, per-arm gradient features).

Switched on with ``model_kwargs={"block_arms": N}`` (see ``docs/agents.md``). A row is stored as
its block's ``d`` values and the block's index; an all-zero row gets block 0 (any block gives
the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class BlockRows:
    """Rows in one-hot-block form: ``values`` ``(R, n, d)`` sitting in block ``block`` ``(R, n)`` of ``n_blocks``."""

    values: torch.Tensor
    block: torch.Tensor
    n_blocks: int

    @property
    def shape(self) -> tuple[int, int, int]:
        """The shape of the dense rows, ``(R, n, N d)``."""
        R, n, d = self.values.shape
        return R, n, self.n_blocks * d

    def dense(self) -> torch.Tensor:
        """The rows written out, ``(R, n, N d)`` (zeros outside each row's block)."""
        R, n, d = self.values.shape
        onehot = F.one_hot(self.block, self.n_blocks).to(self.values.dtype)  # (R, n, N)
        return (onehot[..., None] * self.values[:, :, None, :]).reshape(R, n, self.n_blocks * d)


def split_blocks(x: torch.Tensor, n_blocks: int) -> BlockRows:
    """Dense one-hot-block rows ``(R, n, N d)`` as :class:`BlockRows`; a ValueError if a row has non-zeros in two
    blocks."""
    R, n, D = x.shape
    blocks = x.reshape(R, n, n_blocks, D // n_blocks)  # (R, n, N, d)
    used = blocks.count_nonzero(dim=-1) > 0  # (R, n, N)
    if bool((used.sum(dim=-1) > 1).any()):
        raise ValueError(f"model_kwargs block_arms={n_blocks} needs one-hot-block features (each arm's features in "
                         f"one block of {D // n_blocks} of its {D} columns, zeros elsewhere), got a row with non-zeros "
                         "in several blocks; leave block_arms out for other features")
    block = (used * torch.arange(n_blocks, device=x.device)).sum(dim=-1)  # (R, n): the one used block, or 0
    values = blocks.gather(2, block[:, :, None, None].expand(-1, -1, 1, D // n_blocks))[:, :, 0]  # (R, n, d)
    return BlockRows(values, block, n_blocks)


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
