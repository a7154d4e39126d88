"""Linear baselines of the LMC-TS paper (Section 5): LinUCB, LinTS and epsilon-greedy.

All three keep ridge-regression statistics of ``R`` replicas over the model features
``z = (x, e_k)`` of arm ``k``: its ``d`` features and a one-hot ``e_k`` of its index, a constant per
arm (``intercept``: by default where the arms are one-hot blocks, as the classification bandits'
are; ``p = d + K`` entries, or ``p = d`` without the constants)::

    V_t = lambda D_t + sum_{s<t} z_s z_s^T      Gram matrix, kept as its inverse (R, p, p)
    b_t = sum_{s<t} r_s z_s                     moment vector (R, p)
    theta_hat_t = V_t^-1 b_t                    ridge estimate (R, p)

``theta_hat`` minimises ``sum_s (z_s^T theta - r_s)^2 + lambda sum_j D_jj theta_j^2``. ``D = I`` with
``scale_features=False``; with ``scale_features=True`` (default) ``D_jj`` is the mean square of feature
``j`` over the arm rows shown so far where it is nonzero (1 for a feature that has only been 0), which is
the plain ridge on features divided by their root mean square: the fit and the exploration do not change
when a feature is multiplied by a constant. Over the rows where it is nonzero, not all rows: on one-hot-block
arms a block's features are zero in the ``K - 1`` other arms' rows, and their mean square over all rows,
``1 / K`` of their size where they are present, would make the penalty of ``K`` per-arm models weaker the
more arms there are (on dense features the two are the same number). ``D`` is renewed at rounds 2, 4, 8, ...
(then ``V^-1`` is computed afresh from the kept ``sum z z^T``, in float64); between, ``V^-1`` follows each round by a
Sherman-Morrison rank-one update (O(p^2), no inverse in the loop). LinTS keeps a square root ``S`` of
``V^-1`` instead (Potter's update), which gives its posterior draws.

One round, in the order it runs: ``_select`` (the scores below, then ``_argmax``: ties at random)
and ``_observe`` (:func:`ridge_update` or :func:`potter_update` with the played arm, then the
renewal of ``D`` when the next round is a power of 2).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents import _kernels
from agents.base import BanditAgent, chosen_rows, env_horizon
from agents.loop.propensity import uniform_over_maximisers
from agents.models.reward import linear_scores, matvec
from agents.uniform import uniform_arms
from bandit_gym.rng import Stream


def ucb_scores(contexts: torch.Tensor, theta_hat: torch.Tensor, gram_inverse: torch.Tensor,
               nu: torch.Tensor) -> torch.Tensor:
    """Upper confidence bounds ``x^T theta_hat + nu sqrt(x^T V^-1 x)``.

    ``(R, K, d), (R, d), (R, d, d), (R,) -> (R, K)``.
    """
    if _kernels.enabled(contexts, theta_hat, gram_inverse, nu):
        return _kernels.ucb_scores(contexts, theta_hat, gram_inverse, nu)
    mean = linear_scores(contexts, theta_hat)  # (R, K)
    width = ((contexts @ gram_inverse) * contexts).sum(dim=-1).clamp(min=0).sqrt()  # (R, K); clamp: rounding
    return mean + nu.unsqueeze(1) * width


def sherman_morrison(gram_inverse: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)`` (Sherman-Morrison)."""
    vx = matvec(gram_inverse, x)  # V^-1 x (R, d); V^-1 is symmetric
    denominator = (vx * x).sum(dim=-1) + 1.0  # 1 + x^T V^-1 x (R,)
    # (vx_i vx_j) / denom keeps the update exactly symmetric (vx_i (vx_j / denom) would not).
    return gram_inverse - vx.unsqueeze(2) * vx.unsqueeze(1) / denominator.view(-1, 1, 1)


def ridge_update(gram_inverse: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                 rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Add ``(x, r)`` per replica: :func:`sherman_morrison`, ``b <- b + r x`` and ``theta_hat = V^-1 b``.

    ``(R, d, d), (R, d), (R, d), (R,)`` -> the new ``V^-1``, ``b`` and ``theta_hat``.
    """
    if _kernels.enabled(gram_inverse, moment, x, rewards):
        return _kernels.ridge_update(gram_inverse, moment, x, rewards)
    gram_inverse = sherman_morrison(gram_inverse, x)
    moment = moment + rewards.unsqueeze(1) * x
    return gram_inverse, moment, matvec(gram_inverse, moment)


def potter(root: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A square root ``S`` of ``V^-1`` (``S S^T = V^-1``) after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``.

    Potter's update: with ``p = S^T x`` and ``q = sqrt(1 + |p|^2)``, ``S <- S - (S p) p^T / (q (1 + q))``
    makes ``S S^T`` Sherman-Morrison's ``(V + x x^T)^-1``: O(d^2), no factorisation.

    References:
        Potter and Stern (1963); Bierman (1977), "Factorization methods for discrete sequential
        estimation", Chapter V.
    """
    p = (root * x.unsqueeze(2)).sum(dim=1)  # S^T x (R, d)
    q = ((p * p).sum(dim=-1) + 1.0).sqrt()  # (R,)
    return root - (matvec(root, p) / (q * (q + 1.0)).unsqueeze(1)).unsqueeze(2) * p.unsqueeze(1)


def potter_update(root: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`ridge_update` for a square root ``S`` of ``V^-1``: :func:`potter`, ``b <- b + r x`` and
    ``theta_hat = S (S^T b)``; returns the new ``S``, ``b`` and ``theta_hat``."""
    if _kernels.enabled(root, moment, x, rewards):
        return _kernels.potter_update(root, moment, x, rewards)
    root = potter(root, x)
    moment = moment + rewards.unsqueeze(1) * x
    return root, moment, matvec(root, (root * moment.unsqueeze(2)).sum(dim=1))


def add_outer(gram: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``V + x x^T`` in float64: ``(R, p, p)`` float64, ``(R, p)`` -> ``(R, p, p)`` float64."""
    if _kernels.enabled_with_float64(gram, x):
        return _kernels.add_outer(gram, x)
    x = x.double()
    return gram + x.unsqueeze(2) * x.unsqueeze(1)


def add_feature_sums(square_sum: torch.Tensor, nonzero_rows: torch.Tensor,
                     z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A round's rows ``z`` ``(R, K, p)`` added to each feature's sum of squares and count of nonzero entries
    ``(R, p)``."""
    if _kernels.enabled(square_sum, nonzero_rows, z):
        return _kernels.add_feature_sums(square_sum, nonzero_rows, z)
    return square_sum + (z * z).sum(dim=1), nonzero_rows + (z != 0).sum(dim=1)


def off_block_mask(n_arms: int, dim: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``(K, d)`` float: 1 where arm ``k``'s row is outside the ``k``-th of ``K`` equal blocks of columns, else 0."""
    eye = torch.eye(n_arms, device=device)
    return (1 - eye)[:, :, None].expand(n_arms, n_arms, dim // n_arms).reshape(n_arms, dim)


def one_hot_blocks(contexts: torch.Tensor, off_block: torch.Tensor | None = None) -> torch.Tensor:
    """Whether each replica's arms are one-hot blocks (arm ``k``'s row zero outside the ``k``-th of ``K``
    equal blocks of columns, as the classification bandits' are): ``(R, K, d) -> (R,)`` bool. ``off_block``:
    :func:`off_block_mask` of the contexts' sizes (made here if None; :class:`ArmFeatures` makes it once)."""
    R, K, d = contexts.shape
    if d % K:
        return torch.zeros(R, dtype=torch.bool, device=contexts.device)
    off_block = off_block_mask(K, d, contexts.device) if off_block is None else off_block
    return (contexts * off_block == 0).flatten(1).all(dim=1)


def with_intercepts(contexts: torch.Tensor, on: torch.Tensor | None = None) -> torch.Tensor:
    """Each arm's row followed by a one-hot of its index (zeros for replicas where ``on`` ``(R,)`` is False):
    ``(R, K, d) -> (R, K, d + K)``."""
    R, K, _ = contexts.shape
    eye = torch.eye(K, dtype=contexts.dtype, device=contexts.device)
    constants = eye.expand(R, K, K) if on is None else eye * on[:, None, None].to(contexts.dtype)
    return torch.cat([contexts, constants], dim=-1)


def feature_scales(square_sum: torch.Tensor, nonzero_rows: torch.Tensor) -> torch.Tensor:
    """``D``'s diagonal: each feature's mean square over the rows where it is nonzero (``nonzero_rows`` of them),
    1 where it has only been 0: ``(R, p), (R, p) -> (R, p)``."""
    mean_square = square_sum / nonzero_rows.clamp(min=1)
    return torch.where(mean_square > 0, mean_square, torch.ones_like(mean_square))


def is_power_of_two(t: int) -> bool:
    return t & (t - 1) == 0


class ArmFeatures:
    """The model features ``z`` of the linear agents and linear LMC-TS, and the mean squares that scale them.

    ``z = (x, e_k)`` for arm ``k``: its ``d`` features and a one-hot of its index, a constant per arm (module
    docstring). ``intercept``: None adds the constants where the arms are one-hot blocks (:func:`one_hot_blocks`,
    checked per replica and round; the columns exist when ``K`` divides ``d`` and are zero elsewhere), True always,
    False never. :meth:`record` keeps the sum of squares of every shown arm row's features and how many rows had
    each nonzero, and :meth:`scales` gives ``D``'s diagonal, each feature's mean square where it is nonzero
    (:func:`feature_scales`).
    """

    def __init__(self, num_replicas: int, n_arms: int, dim: int, intercept: bool | None, device: torch.device) -> None:
        if not (intercept is None or isinstance(intercept, bool)):
            raise ValueError(f"intercept must be None (one-hot-block arms only), True or False, got {intercept!r}")
        self.dim, self.intercept = dim, intercept
        with_constants = intercept is True or (intercept is None and dim % n_arms == 0)
        #: Model features per arm ``p``: ``d``, plus ``K`` per-arm constants.
        self.model_dim = dim + (n_arms if with_constants else 0)
        self.square_sum = torch.zeros(num_replicas, self.model_dim, device=device)  # sum of z_j^2 (R, p)
        self.nonzero_rows = torch.zeros(num_replicas, self.model_dim, device=device)  # rows with z_j != 0 (R, p)
        #: The per-round check's mask (:func:`off_block_mask`), made once; None where ``K`` does not divide ``d``.
        self.off_block = off_block_mask(n_arms, dim, device) if dim % n_arms == 0 else None

    def __call__(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model features ``z`` of every arm: ``(R, K, d) -> (R, K, p)``."""
        if self.model_dim == self.dim:
            return contexts
        return with_intercepts(contexts, None if self.intercept else one_hot_blocks(contexts, self.off_block))

    def record(self, z: torch.Tensor) -> None:
        """Add a round's shown rows ``z`` ``(R, K, p)`` to the sums of squares and the counts of nonzero entries."""
        self.square_sum, self.nonzero_rows = add_feature_sums(self.square_sum, self.nonzero_rows, z)

    def scales(self) -> torch.Tensor:
        """``D``'s diagonal ``(R, p)``: each feature's mean square over the rows recorded where it is nonzero, 1 where
        it has only been 0."""
        return feature_scales(self.square_sum, self.nonzero_rows)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"square_sum": self.square_sum, "nonzero_rows": self.nonzero_rows}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.square_sum = state["square_sum"]
        if "nonzero_rows" in state:
            self.nonzero_rows = state["nonzero_rows"]
        else:  # saved before 2026-11-27, with the count of all rows shown: that count for every feature seen
            rows = float(state["rows_seen"])
            self.nonzero_rows = torch.where(self.square_sum > 0, rows, 0.0).to(self.square_sum.dtype)


class _RidgeStatistics:
    """The ridge statistics over model features (``intercept``, ``scale_features``) shared by the linear agents.

    Keeps ``V = lambda D + sum z z^T`` (``gram``, float64), ``b``, ``theta_hat``, the running sum of squares of
    every shown row's features and the penalty diagonal ``lambda D`` (``prior``). Each agent's ``_set_inverse(V)``
    sets its kept form of ``V^-1`` (itself, or a square root of it) and ``theta_hat`` afresh.
    """

    def _init_statistics(self, lambda_reg: Any, intercept: bool | None, scale_features: bool) -> None:
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        if not isinstance(scale_features, bool):
            raise ValueError(f"scale_features must be True or False, got {scale_features!r}")
        self.arm_features = ArmFeatures(self.num_replicas, self.n_arms, self.dim, intercept, self.device)
        self._hyperparameters["intercept"], self._hyperparameters["scale_features"] = intercept, scale_features
        self.intercept, self.scale_features = intercept, scale_features
        #: Model features per arm ``p``: ``d``, plus ``K`` per-arm constants (module docstring).
        self.model_dim = self.arm_features.model_dim
        R, p = self.num_replicas, self.model_dim
        self.prior = self.lambda_reg[:, None].expand(R, p).contiguous()  # lambda D (R, p); D = I until rows are seen
        # V (R, p, p), float64: a float32 sum over 10,000 rounds errs by more than a small prior
        self.gram = torch.diag_embed(self.prior.double())
        self.moment = torch.zeros(R, p, device=self.device)  # b (R, p)
        self.theta_hat = torch.zeros(R, p, device=self.device)  # V^-1 b (R, p)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model features ``z`` of every arm: ``(R, K, d) -> (R, K, p)``."""
        return self.arm_features(contexts)

    def _record(self, z: torch.Tensor, x: torch.Tensor) -> None:
        """Add this round's rows ``z`` ``(R, K, p)`` and played row ``x`` ``(R, p)`` to the sums; renew ``D``
        (and ``V^-1`` from ``V``) when the next round is a power of 2."""
        self.gram = add_outer(self.gram, x)
        if not self.scale_features:
            return
        self.arm_features.record(z)
        if is_power_of_two(self.t + 1):
            prior = self.lambda_reg[:, None] * self.arm_features.scales()  # (R, p)
            # V with the new lambda D; the change in float64 (in float32, 1e-8 - 1 rounds to -1 and leaves V singular)
            self.gram = self.gram + torch.diag_embed(prior.double() - self.prior.double())
            self.prior = prior
            self._set_inverse(self.gram)

    def _check_learned(self, last_round: int) -> None:
        """The ridge estimate checked for NaN or Inf (once per :data:`agents.base.CHECK_ROUNDS` rounds in a loop:
        a NaN or Inf in the statistics stays there, so a later check still finds it)."""
        self._check_finite(self.theta_hat, "the ridge estimate theta_hat", by_round=last_round)

    def _statistics_state(self) -> dict[str, torch.Tensor]:
        return {"gram": self.gram, "prior": self.prior, "moment": self.moment, "theta_hat": self.theta_hat,
                **self.arm_features.state_dict()}

    def _load_statistics(self, state: dict[str, torch.Tensor]) -> None:
        self.gram, self.prior, self.moment, self.theta_hat = state["gram"], state["prior"], state["moment"], \
            state["theta_hat"]
        self.arm_features.load_state_dict(state)


class _RidgeAgent(_RidgeStatistics, BanditAgent):
    """Ridge statistics ``V^-1``, ``b`` and ``theta_hat`` (Sherman-Morrison), shared by LinUCB and EpsGreedy.

    Args:
        env: The env (sizes and replica count come from its spaces), or None with the sizes.
        exploration_scale: ``c >= 0`` (its meaning depends on the agent), a number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0``, ``V_1 = lambda I``; a number or one per replica.
        intercept: Add a constant per arm (a one-hot of the arm's index) to the features: None where the
            arms are one-hot blocks, True always, False never.
        scale_features: Penalise each feature by its mean square (``D`` above) instead of 1.

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    def __init__(self, env=None, *, exploration_scale: Any, lambda_reg: Any = 1.0, intercept: bool | None = None,
                 scale_features: bool = True, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self._init_statistics(lambda_reg, intercept, scale_features)
        self.gram_inverse = torch.diag_embed(1.0 / self.prior)  # V^-1 (R, p, p)

    def _set_inverse(self, gram: torch.Tensor) -> None:
        inverse = torch.cholesky_inverse(torch.linalg.cholesky(gram))  # (R, p, p) float64
        self.gram_inverse = inverse.float()
        self.theta_hat = (inverse @ self.moment.double()[:, :, None])[:, :, 0].float()

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        self.gram_inverse, self.moment, self.theta_hat = ridge_update(self.gram_inverse, self.moment, x, rewards)
        self._record(z, x)

    def _state(self) -> dict[str, torch.Tensor]:
        return {"gram_inverse": self.gram_inverse, **self._statistics_state()}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.gram_inverse = state["gram_inverse"]
        self._load_statistics(state)


class LinUCB(_RidgeAgent):
    """LinUCB: play the arm with the largest upper confidence bound on its mean reward.

    Round ``t`` plays ``argmax_z z^T theta_hat + nu_t sqrt(z^T V^-1 z)`` with ``nu_t = c sqrt(log t)``
    (ties at random), ``z`` the arm's model features (module docstring). ``nu_t`` does not grow with
    the dimension: the width ``sqrt(z^T V^-1 z)`` already does (the paper's ``c sqrt(d log t)`` with
    ``c`` tuned at ``d = 20`` over-explored one-hot-block arms of ``d = 63``). In round 1,
    ``log 1 = 0`` and ``theta_hat = 0``: the first arm is uniformly random.

    When to use it:
        Linear rewards with a new arm set every round (LinearBandit-v0), where it is the lowest at its defaults, and
        your own features whose scales are unknown. One of the cheapest rounds. Measured: docs/agents.md, "Choosing an
        agent".

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``nu_t``, in units of the reward; 0 plays greedily. A number or
            one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        intercept: Add a constant per arm to its features: None (default) where the arms are one-hot
            blocks (:func:`one_hot_blocks`, checked each round), True always, False never.
        scale_features: Penalise each feature by its mean square over the rows shown (default True).

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Li, Chu, Langford and Schapire (2010), "A contextual-bandit approach to personalized news
        article recommendation". Abbasi-Yadkori, Pal and Szepesvari (2011), "Improved algorithms
        for linear stochastic bandits". Xu et al. (2022), "Langevin Monte Carlo for contextual
        bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.5, lambda_reg: Any = 1.0, intercept: bool | None = None,
                 scale_features: bool = True, **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, lambda_reg=lambda_reg, intercept=intercept,
                         scale_features=scale_features, **kwargs)

    def bonus_scale(self, t: int | None = None) -> torch.Tensor:
        """``nu_t = c sqrt(log t)`` per replica for round ``t`` (default: the current round), ``(R,)``."""
        return self.exploration_scale * math.sqrt(math.log(self.t if t is None else t))

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        z = self.features(contexts)
        return self._argmax(ucb_scores(z, self.theta_hat, self.gram_inverse, self.bonus_scale()))  # (R,)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor:
        """``1 / #maximisers`` of the upper confidence bound, else 0, ``(R, K)`` float64."""
        z = self.features(contexts)
        return uniform_over_maximisers(ucb_scores(z, self.theta_hat, self.gram_inverse, self.bonus_scale()))


class EpsilonGreedyRule:
    """The epsilon-greedy rule of :class:`EpsGreedy` and :class:`agents.neural.NeuralEpsGreedy` (a mixin for a
    :class:`agents.base.BanditAgent` with ``exploration_scale`` ``c`` per replica): round ``t`` plays an arm
    drawn uniformly at random with probability ``epsilon_t = min(1, c / sqrt(t))``, else the greedy arm.
    Coin and arm are this round's two uniforms of stream ``EXPLORE``."""

    def exploration_rate(self, t: int | None = None) -> torch.Tensor:
        """``epsilon_t = min(1, c / sqrt(t))`` per replica for round ``t`` (default: the current round), ``(R,)``."""
        return (self.exploration_scale / math.sqrt(self.t if t is None else t)).clamp(max=1.0)

    def _epsilon_greedy(self, greedy: torch.Tensor) -> torch.Tensor:
        """A uniformly random arm with probability ``epsilon_t``, else ``greedy`` ``(R,)``, per replica."""
        u = self._draws("uniform", Stream.EXPLORE, (2,)).to(self.device)  # (R, 2): coin, arm
        return torch.where(u[:, 0] < self.exploration_rate(), uniform_arms(u[:, 1], self.n_arms), greedy)


class EpsGreedy(EpsilonGreedyRule, _RidgeAgent):
    """Epsilon-greedy on the ridge estimate: explore with probability ``min(1, c / sqrt(t))``.

    Round ``t`` plays an arm drawn uniformly at random with probability ``epsilon_t = min(1, c / sqrt(t))``
    and otherwise ``argmax_z z^T theta_hat`` (ties at random). ``c`` is validated, never clipped; the
    ``min`` is part of the schedule.

    When to use it:
        A simple baseline for linear rewards. With a fixed arm set some of its seeds stay on a wrong arm for thousands
        of rounds: prefer LinUCB or LinTS there. Measured: docs/agents.md, "Choosing an agent".

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``epsilon_t``; 0 is pure greedy. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        intercept: Add a constant per arm to its features: None (default) where the arms are one-hot
            blocks (:func:`one_hot_blocks`, checked each round), True always, False never.
        scale_features: Penalise each feature by its mean square over the rows shown (default True).

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Sutton and Barto (2018), "Reinforcement learning: an introduction", Section 2.2.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.3, lambda_reg: Any = 1.0, intercept: bool | None = None,
                 scale_features: bool = True, **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, lambda_reg=lambda_reg, intercept=intercept,
                         scale_features=scale_features, **kwargs)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._epsilon_greedy(self._argmax(linear_scores(self.features(contexts), self.theta_hat)))  # (R,)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor:
        """``epsilon_t / K + (1 - epsilon_t) 1[k greedy] / #greedy``, ``(R, K)`` float64 (the random arm is
        ``floor(u K)`` with ``u`` a multiple of ``2^-24``: uniform up to ``K 2^-24``)."""
        epsilon = self.exploration_rate().double()[:, None]  # (R, 1)
        greedy = uniform_over_maximisers(linear_scores(self.features(contexts), self.theta_hat))  # (R, K)
        return epsilon / contexts.shape[1] + (1 - epsilon) * greedy


class LinTS(_RidgeStatistics, BanditAgent):
    """Linear Thompson sampling: play the best arm for a draw from ``N(theta_hat, v^2 V^-1)``.

    Round ``t`` draws ``theta_t = theta_hat + v S w``, ``w ~ N(0, I)``, with ``S S^T = V^-1``
    (kept by :func:`potter_update`), and plays ``argmax_z z^T theta_t``, ``z`` the arm's model
    features (module docstring). ``v = c sqrt(log T)`` with ``T`` the horizon: ``c`` is in units of
    the reward and ``v`` does not grow with the dimension.

    When to use it:
        Linear rewards, in particular with a fixed arm set (LinearBanditFixed-v0), where only LMC-TS is lower at the
        defaults; a round as cheap as LinUCB's. Measured: docs/agents.md, "Choosing an agent".

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``v``; 0 plays greedily. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        horizon: ``T`` in ``v``; default: the env's horizon. A number or one per replica.
        intercept: Add a constant per arm to its features: None (default) where the arms are one-hot
            blocks (:func:`one_hot_blocks`, checked each round), True always, False never.
        scale_features: Penalise each feature by its mean square over the rows shown (default True).

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Agrawal and Goyal (2013), "Thompson sampling for contextual bandits with linear payoffs".
        Xu et al. (2022), "Langevin Monte Carlo for contextual bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.1, lambda_reg: Any = 1.0, horizon: Any = None,
                 intercept: bool | None = None, scale_features: bool = True, **kwargs) -> None:
        super().__init__(env, **kwargs)
        horizon = env_horizon(env) if horizon is None else horizon
        if horizon is None:
            raise ValueError("horizon must be given (an integer >= 2) when the env does not define one, got None")
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self._init_statistics(lambda_reg, intercept, scale_features)
        self.horizon = self._hyperparameter("horizon", horizon, integer=True, minimum=2)
        #: ``v = c sqrt(log T)`` per replica, the scale of the posterior draw, ``(R,)``.
        self.posterior_scale = self.exploration_scale * self.horizon.double().log().sqrt().float()
        self.gram_inverse_root = torch.diag_embed(self.prior.rsqrt())  # S, S S^T = V^-1 (R, p, p)

    def _set_inverse(self, gram: torch.Tensor) -> None:
        lower = torch.linalg.cholesky(gram)  # V = L L^T, so S = L^-T has S S^T = V^-1
        eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device).expand_as(gram)
        root = torch.linalg.solve_triangular(lower.mT, eye, upper=True)  # (R, p, p) float64
        self.gram_inverse_root = root.float()
        self.theta_hat = (root @ (root.mT @ self.moment.double()[:, :, None]))[:, :, 0].float()

    def sample_theta(self) -> torch.Tensor:
        """This round's posterior draw ``theta_t = theta_hat + v S w``, ``(R, p)``; no state change."""
        w = self._draws("normal", Stream.SAMPLE, (self.model_dim,)).to(self.device)  # (R, p)
        return self.theta_hat + self.posterior_scale.unsqueeze(1) * matvec(self.gram_inverse_root, w)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        theta = self.sample_theta()  # (R, p)
        return self._argmax(linear_scores(self.features(contexts), theta))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        self.gram_inverse_root, self.moment, self.theta_hat = potter_update(self.gram_inverse_root, self.moment, x,
                                                                            rewards)
        self._record(z, x)

    def _state(self) -> dict[str, torch.Tensor]:
        return {"gram_inverse_root": self.gram_inverse_root, **self._statistics_state()}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.gram_inverse_root = state["gram_inverse_root"]
        self._load_statistics(state)
