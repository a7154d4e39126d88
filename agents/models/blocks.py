"""One-hot-block rows for the MLP's block-aware first layer (``model_kwargs={"block_arms": N}``, public API).

The real-data bandits (UCI, CIFAR10) turn a ``d``-dimensional example ``x`` into ``N`` arms
``x^(j) = (0, ..., x, ..., 0)`` in ``R^{N d}``, ``x`` in block ``j``. A dense first layer
``W x^(j)``, ``W`` of shape ``(out, N d)``, multiplies ``N - 1`` blocks of zeros; only the ``d``
columns of block ``j`` touch arm ``j``: ``W x^(j) = W[:, block j] x``.

This module holds the rows' storage form (:class:`BlockRows`: a row's block values and the block's
index, a history of ``d``-long rows instead of ``N d``-long ones; an all-zero row gets block 0).
The products that use it (the same numbers up to float32 summation order, about ``N`` times fewer
multiply-adds) are speed devices in :mod:`agents._kernels` (``block_matmul``,
``block_weight_gradient``, ``block_outer_rows``); with ``BANDIT_GYM_KERNELS=0`` the MLP writes the
rows out (:meth:`BlockRows.dense`) and runs its dense first layer, the definition.
``tests/agents/test_block_first_layer.py`` compares the two.
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
