"""The feel-good term of FG-TS as a term of the potential: :class:`FeelGood` wraps a reward model.

``FeelGood(model, ...)`` is what a chain (:mod:`agents.chains`) samples from in place of the model: its loss is the
model's minus ``lambda_fg sum_s min(b, max_x f(x_s; theta))`` over the arm sets of the rounds played
(:class:`_ArmSets`, each replica's run of equal sets stored once).

References:
    Zhang (2022), "Feel-Good Thompson Sampling for Contextual Bandits and Reinforcement Learning", SIAM Journal on
    Mathematics of Data Science.
"""

from __future__ import annotations

from typing import Any

import torch

from agents import _kernels
from agents.models.reward import LinearModel, LogisticModel, RewardModel
from agents.validation import check_float, check_int


class _ArmSets:
    """The arm sets of the rounds played, each replica's run of equal sets stored once.

    A round whose arm set equals the replica's previous one (fixed-arm bandits: ``LinearBanditFixed-v0``,
    ``LogisticBandit-v0``) stores only its id; a new set is appended to that replica's distinct sets. So a fixed
    arm set costs ``O(K d)`` memory, not ``O(n K d)``, and the feel-good term can score it once per step
    (:meth:`FeelGood.feel_good_gradient`). That is a speed device (row ``feel_good_gradient-fixed`` of
    ``benchmarks/results/speed_devices.md``): with ``BANDIT_GYM_KERNELS=0`` every round's set is stored, the
    same numbers. The buffers double in capacity when full (as :class:`agents.loop.history.History`'s).

    Attributes:
        sets: ``(R, capacity, K, d)``, replica ``r``'s distinct sets in slots ``0 .. n_sets[r] - 1``.
        n_sets: Distinct sets per replica ``(R,)``, int64.
        ids: ``(R, capacity)`` int64, round ``s``'s set in its replica's slots (the first ``len(self)`` columns).
        counts: ``(R, capacity)``, the rounds stored with each slot's set.
    """

    def __init__(self, num_replicas: int, n_arms: int, dim: int, device: torch.device, capacity: int = 16) -> None:
        self.sets = torch.zeros(num_replicas, capacity, n_arms, dim, device=device)
        self.n_sets = torch.zeros(num_replicas, dtype=torch.int64, device=device)
        self.ids = torch.zeros(num_replicas, capacity, dtype=torch.int64, device=device)
        self.counts = torch.zeros(num_replicas, capacity, device=device)
        self._length, self._max_sets = 0, 0

    def __len__(self) -> int:
        """Rounds stored per replica."""
        return self._length

    @property
    def max_sets(self) -> int:
        """The most distinct sets of any replica: the slots in use."""
        return self._max_sets

    def append(self, contexts: torch.Tensor) -> None:
        """Add one round's arm sets ``(R, K, d)``."""
        R = contexts.shape[0]
        rows = torch.arange(R, device=contexts.device)
        if _kernels.enabled():  # a speed device: a set equal to the replica's last one is not stored again
            last = self.sets[rows, (self.n_sets - 1).clamp(min=0)]  # (R, K, d)
            new = (self.n_sets == 0) | (last != contexts).flatten(1).any(dim=1)  # (R,)
        else:  # the definition: every round's set stored
            new = torch.ones(R, dtype=torch.bool, device=contexts.device)
        if self._max_sets == self.sets.shape[1]:
            self.sets = torch.cat([self.sets, torch.zeros_like(self.sets)], dim=1)
            self.counts = torch.cat([self.counts, torch.zeros_like(self.counts)], dim=1)
        slot = self.n_sets  # (R,): the next free slot, written only where the set is new
        self.sets[rows, slot] = torch.where(new[:, None, None], contexts, self.sets[rows, slot])
        self.n_sets = self.n_sets + new
        self._max_sets = int(self.n_sets.max())
        if self._length == self.ids.shape[1]:
            self.ids = torch.cat([self.ids, torch.zeros_like(self.ids)], dim=1)
        self.ids[:, self._length] = self.n_sets - 1
        self.counts[rows, self.n_sets - 1] += 1
        self._length += 1

    def set_ids(self, batch: torch.Tensor | None) -> torch.Tensor:
        """The set of each round of ``batch`` ``(R, B)`` (row indices), or of every round (None): ``(R, B or n)``."""
        ids = self.ids[:, : self._length]
        return ids if batch is None else ids.gather(1, batch)

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """The sets of ``ids`` ``(R, S)``: ``(R, S, K, d)`` (whole sets copied by ``index_select``)."""
        R, capacity, K, d = self.sets.shape
        flat = ids + capacity * torch.arange(R, device=ids.device)[:, None]  # (R, S) rows of the flattened buffer
        return self.sets.reshape(R * capacity, K, d).index_select(0, flat.reshape(-1)).reshape(R, -1, K, d)

    def rows(self, batch: torch.Tensor | None = None) -> torch.Tensor:
        """The arm sets of the rounds of ``batch`` ``(R, B)``, or of every round: ``(R, B or n, K, d)``."""
        return self.gather(self.set_ids(batch))

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Every round's arm set, ``{"contexts": (R, n, K, d)}`` (the saved format of every history: one row per
        round; the runs of equal sets are found again on load)."""
        return {"contexts": self.rows()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Replace the contents by ``state`` (as :meth:`state_dict` writes it), appending its rounds in order."""
        R, _, K, d = self.sets.shape
        self.__init__(R, K, d, self.sets.device)
        for contexts in state["contexts"].to(self.sets.device).unbind(dim=1):
            self.append(contexts)


def _best_arms(x: torch.Tensor, params: torch.Tensor, cap: float) -> torch.Tensor:
    """``[max_a x_a . theta < b] x_*`` per arm set, ``x_*`` its best arm for ``theta``: ``(R, S, K, d) -> (R, S, d)``.
    The gradient of ``min(b, max_a x_a . theta)`` in ``theta`` (zero above the cap)."""
    scores = (x * params[:, None, None, :]).sum(dim=3)  # (R, S, K): x . theta
    best, arm = scores.max(dim=2)  # (R, S)
    rows = torch.take_along_dim(x, arm[:, :, None, None], dim=2)[:, :, 0]  # (R, S, d)
    return (best < cap).to(params.dtype)[:, :, None] * rows


class FeelGood:
    """The potential of FG-TS: ``L_t(theta) - lambda_fg sum_s min(b, max_x f(x_s; theta))``, a model wrapper.

    The sum runs over the arm sets ``x_s`` of the rounds played (or a mini-batch of them, times ``n / B``).
    Everything else is the model's (attributes pass through), so a chain takes it where it takes the model.

    Args:
        model: The reward model ``f`` and its loss ``L_t``.
        contexts: The arm sets of the rounds played, in the model's features.
        lambda_fg: ``lambda_fg >= 0`` per replica ``(R,)``.
        cap: ``b``.
        own_batches: Whether the model has mini-batches of its own (then the term uses them too); False: the
            round's batches are the term's alone (``batch_size``) and the model's loss is full-batch.
        batch_size: The term's own mini-batch size when the model has none, or None (every round).
    """

    def __init__(self, model: RewardModel, contexts: _ArmSets, lambda_fg: torch.Tensor, cap: float,
                 own_batches: bool, batch_size: int | None) -> None:
        self.model, self.contexts, self.lambda_fg, self.cap = model, contexts, lambda_fg, cap
        self.own_batches = own_batches
        self.batch_size = None if own_batches else batch_size

    @classmethod
    def for_agent(cls, agent: Any, lambda_fg: Any, cap: Any, batch_size: Any) -> FeelGood:
        """The term of an LMC-TS agent (:class:`agents.samplers.FGLMCTS`) on its model, its arm sets stored in the
        model's features: ``lambda_fg >= 0`` (a number or one per replica), ``cap`` ``b``, and ``batch_size`` (an
        int >= 1 or None), each checked and recorded as the agent's hyperparameter."""
        lambda_fg = agent._hyperparameter("lambda_fg", lambda_fg, minimum=0)  # (R,)
        cap = check_float("feel_good_cap", cap)
        batch_size = None if batch_size is None else check_int("feel_good_batch_size", batch_size)
        agent._hyperparameters.update(feel_good_cap=cap, feel_good_batch_size=batch_size)
        contexts = _ArmSets(agent.num_replicas, agent.n_arms, agent.model_dim, agent.device)
        return cls(agent.model, contexts, lambda_fg, cap, own_batches=agent.batch_size is not None,
                   batch_size=batch_size)

    def observe(self, features: torch.Tensor) -> None:
        """Keep a round's arm set ``(R, K, p)``, in the model's features."""
        self.contexts.append(features)

    def current(self) -> FeelGood | RewardModel:
        """This potential, or the model alone while the term is zero (no round yet, or every ``lambda_fg = 0``)."""
        return self if len(self.contexts) > 0 and bool((self.lambda_fg > 0).any()) else self.model

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The term's arm sets (:meth:`_ArmSets.state_dict`; the model's state is the agent's to save)."""
        return self.contexts.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s arm sets."""
        self.contexts.load_state_dict(state)

    def _model_batch(self, batch: torch.Tensor | None) -> torch.Tensor | None:
        return batch if self.own_batches else None

    def gradient_squares(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.gradient_squares(params, self._model_batch(batch))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def _scale(self, batch: torch.Tensor | None) -> float:
        """``n / B``: makes a mini-batch's sum estimate the sum over all ``n`` rounds (1 for all rounds)."""
        return 1.0 if batch is None else len(self.contexts) / batch.shape[1]

    def feel_good(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``lambda_fg sum_s min(b, max_x f(x_s; params))`` per replica ``(R,)``: the definition."""
        x = self.contexts.rows(batch)  # (R, n, K, d)
        R, n, K, d = x.shape
        f = self.model.scores(params, x.reshape(R, n * K, d)).reshape(R, n, K)
        return self.lambda_fg * self._scale(batch) * f.amax(dim=2).clamp(max=self.cap).sum(dim=1)

    def feel_good_gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``grad`` of :meth:`feel_good`, ``(R, p)``: autograd; for scores ``x . theta`` (linear and logistic
        models) the closed form ``lambda_fg sum_s [max_x x_s . theta < b] x_s*``, ``x_s*`` the best arm of round
        ``s`` (tested equal to autograd). Each distinct arm set is scored once per step when there are fewer
        distinct sets than rounds in the sum (a fixed arm set: ``K d`` per step, not ``B K d``); otherwise the
        rounds' sets are gathered and scored. The closed form is a speed device (rows ``feel_good_gradient`` of
        ``benchmarks/results/speed_devices.md``): ``BANDIT_GYM_KERNELS=0`` switches it off, to autograd."""
        if not (isinstance(self.model, LinearModel | LogisticModel) and _kernels.enabled(params)):
            with torch.enable_grad():
                p = params.detach().requires_grad_()
                (gradient,) = torch.autograd.grad(self.feel_good(p, batch).sum(), p)
            return gradient
        sets, m = self.contexts, self.contexts.max_sets
        ids = sets.set_ids(batch)  # (R, S): the set of each round in the sum
        if m <= ids.shape[1]:  # score every distinct set once, times the rounds of the sum that have it
            if batch is None:
                counts = sets.counts[:, :m]  # (R, m)
            else:
                counts = torch.zeros(ids.shape[0], m, dtype=params.dtype, device=ids.device)
                counts.scatter_add_(1, ids, torch.ones(ids.shape, dtype=params.dtype, device=ids.device))
            total = (counts[:, :, None] * _best_arms(sets.sets[:, :m], params, self.cap)).sum(dim=1)  # (R, d)
        else:  # more distinct sets than rounds in the sum: score the rounds' sets
            total = _best_arms(sets.gather(ids), params, self.cap).sum(dim=1)  # (R, d)
        return (self.lambda_fg * self._scale(batch))[:, None] * total

    def loss(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        model_batch = self._model_batch(batch)
        model_loss = self.model.loss(params) if model_batch is None else self.model.loss(params, model_batch)
        return model_loss - self.feel_good(params, batch)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.gradient(params, self._model_batch(batch)) - self.feel_good_gradient(params, batch)
