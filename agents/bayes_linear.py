"""The Showdown's Bayesian linear regressions: LinFullPost and NeuralLinear (Riquelme, Tucker and Snoek, 2018).

Both sample from a Normal-Inverse-Gamma (NIG) posterior of a linear model ``y = z^T beta + eps``,
``eps ~ N(0, sigma^2)``, one model per group ``g`` of arms, each on the rows played in its own group only::

    Lambda_g = lambda I + Z_g^T Z_g               posterior precision (R, G, q, q), kept as its Cholesky factor
    mu_g = Lambda_g^-1 Z_g^T y_g                  posterior mean (R, G, q)
    a_g = a0 + n_g / 2,  b_g = b0 + (y_g^T y_g - mu_g^T Lambda_g mu_g) / 2
    sigma_g^2 ~ IG(a_g, b_g),  beta_g | sigma_g^2 ~ N(mu_g, sigma_g^2 Lambda_g^-1)

and play ``argmax_k z_k^T beta_{g(k)}``. The groups (``per_arm``): one per arm (``G = K``, arm ``k``'s model on
its own row, as in the Showdown), or one shared model (``G = 1``) on every arm's features. Where the arms are
one-hot blocks (the data envs: arm ``k``'s row is the example in block ``k``), arm ``k``'s model on its row is the
model on block ``k``'s values: the other blocks are zero in all its rows, so their coefficients stay at the prior
mean 0, multiply zeros and change neither ``mu_g`` on the block, nor ``a_g``, ``b_g``, nor any score.

The ``K * initial_pulls`` first rounds play the arms in turn (round ``t`` plays arm ``(t - 1) mod K``).

Random numbers: round ``t``'s ``sigma^2`` from ``proposals`` Marsaglia-Tsang proposals per group (normals of
stream ``SAMPLE``, uniforms of stream ``ACCEPT``, :func:`gamma_draws`), ``beta``'s normals from ``SAMPLE``: replica
``r`` of a batch seeded ``s`` draws the numbers of a single run seeded ``s + r``.

One round, in the order it runs: ``_select`` (the round-robin arm, or a posterior draw per group and ``_argmax``)
and ``_observe`` (the played row added to its group's statistics and that group's Cholesky factor renewed;
NeuralLinear: the network retrained on its schedule, then every group refitted on the new features).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from agents.base import BanditAgent, chosen_rows
from agents.loop.history import History
from agents.models.mlp import MLPModel, build_model
from agents.models.reward import agent_state, load_agent_state
from agents.validation import check_bool, check_float, check_int
from bandit_gym.rng import Stream

#: Marsaglia-Tsang proposals per draw of ``sigma^2``: each is accepted with probability above 0.95 (for the
#: boosted shape ``a >= 1``), so all eight are refused with probability below ``0.05^8 = 4e-11``.
PROPOSALS = 8


def gamma_draws(shape: torch.Tensor, normals: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """``Gamma(shape, 1)`` draws from a fixed number of normals and uniforms, ``(...), (..., M), (..., M + 1) ->
    (...)``.

    Marsaglia and Tsang's method: with ``d = a - 1/3``, ``c = 1 / sqrt(9 d)``, proposal ``j`` is ``d v_j``,
    ``v_j = (1 + c x_j)^3`` for the normal ``x_j``, accepted when ``v_j > 0`` and
    ``log u_j < x_j^2 / 2 + d - d v_j + d log v_j``; the draw is the first accepted proposal (the last one if
    none is, probability below ``4e-11`` for ``M = 8``). A shape ``a < 1`` draws ``Gamma(a + 1)`` and multiplies
    it by ``U^(1/a)``, ``U = 1 - u_M`` in ``(0, 1]``. Float64.

    References:
        Marsaglia and Tsang (2000), "A simple method for generating gamma variables", ACM TOMS 26(3).
    """
    shape = shape.double()
    x, u = normals.double(), uniforms.double()
    boosted = torch.where(shape < 1, shape + 1, shape)
    d = (boosted - 1.0 / 3.0)[..., None]  # (..., 1)
    v = (1 + x / (9 * d).sqrt()) ** 3  # (..., M)
    positive = v > 0
    log_v = torch.where(positive, v, torch.ones_like(v)).log()
    accepted = positive & (u[..., :-1].log() < 0.5 * x * x + d - d * v + d * log_v)  # (..., M)
    last = torch.full_like(accepted[..., 0], x.shape[-1] - 1, dtype=torch.int64)
    first = torch.where(accepted.any(dim=-1), accepted.byte().argmax(dim=-1), last)  # (...)
    draw = (d * v).gather(-1, first[..., None])[..., 0]  # (...)
    return torch.where(shape < 1, draw * (1 - u[..., -1]) ** (1 / shape), draw)


class NormalInverseGamma:
    """The NIG posteriors of ``G`` linear models on ``q`` features for ``R`` replicas (module docstring), in float64.

    Keeps ``Lambda_g`` (``gram``), ``Z_g^T y_g`` (``moment``), ``y_g^T y_g``, ``n_g``, the Cholesky factor
    ``L_g`` of ``Lambda_g`` and ``mu_g``. :meth:`add` adds one row per replica to its group and renews only that
    group's ``L`` and ``mu``; :meth:`refit` recomputes every group from all rows.

    Args:
        num_replicas, groups, features: ``R``, ``G``, ``q``.
        lambda_reg: ``lambda`` per replica ``(R,)``; ``prior_shape``, ``prior_scale``: ``a0``, ``b0`` ``(R,)``.
    """

    def __init__(self, num_replicas: int, groups: int, features: int, lambda_reg: torch.Tensor,
                 prior_shape: torch.Tensor, prior_scale: torch.Tensor) -> None:
        self.lambda_reg, self.prior_shape, self.prior_scale = lambda_reg.double(), prior_shape.double(), \
            prior_scale.double()
        R, G, q, device = num_replicas, groups, features, lambda_reg.device
        eye = torch.eye(q, dtype=torch.float64, device=device)
        self.gram = (self.lambda_reg[:, None, None, None] * eye).expand(R, G, q, q).clone()  # Lambda (R, G, q, q)
        self.lower = (self.lambda_reg.sqrt()[:, None, None, None] * eye).expand(R, G, q, q).clone()  # L (R, G, q, q)
        self.moment = torch.zeros(R, G, q, dtype=torch.float64, device=device)  # Z^T y (R, G, q)
        self.mean = torch.zeros(R, G, q, dtype=torch.float64, device=device)  # mu (R, G, q)
        self.square_sum = torch.zeros(R, G, dtype=torch.float64, device=device)  # y^T y (R, G)
        self.count = torch.zeros(R, G, dtype=torch.float64, device=device)  # n (R, G)
        self._replicas = torch.arange(R, device=device)

    def add(self, z: torch.Tensor, groups: torch.Tensor, rewards: torch.Tensor) -> None:
        """Add row ``z`` ``(R, q)`` with reward ``(R,)`` to group ``groups`` ``(R,)`` of each replica."""
        index = (self._replicas, groups)
        z, r = z.double(), rewards.double()
        self.gram[index] += z[:, :, None] * z[:, None, :]
        self.moment[index] += r[:, None] * z
        self.square_sum[index] += r * r
        self.count[index] += 1
        lower = torch.linalg.cholesky(self.gram[index])  # (R, q, q)
        self.lower[index] = lower
        self.mean[index] = torch.cholesky_solve(self.moment[index][:, :, None], lower)[:, :, 0]

    def refit(self, z: torch.Tensor, groups: torch.Tensor, rewards: torch.Tensor) -> None:
        """Every group afresh from all rows: ``z`` ``(R, n, q)``, ``groups`` ``(R, n)``, ``rewards`` ``(R, n)``."""
        member = F.one_hot(groups, self.gram.shape[1]).double()  # (R, n, G)
        z, r = z.double(), rewards.double()
        eye = torch.eye(z.shape[-1], dtype=torch.float64, device=z.device)
        self.gram = self.lambda_reg[:, None, None, None] * eye + torch.einsum("rng,rni,rnj->rgij", member, z, z)
        self.moment = torch.einsum("rng,rni,rn->rgi", member, z, r)
        self.square_sum = torch.einsum("rng,rn->rg", member, r * r)
        self.count = member.sum(dim=1)
        self.lower = torch.linalg.cholesky(self.gram)
        self.mean = torch.cholesky_solve(self.moment[..., None], self.lower)[..., 0]

    def shape_and_scale(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``a_g`` and ``b_g`` ``(R, G)``; ``mu^T Lambda mu = mu^T Z^T y`` as ``Lambda mu = Z^T y``."""
        shape = self.prior_shape[:, None] + self.count / 2
        scale = self.prior_scale[:, None] + (self.square_sum - (self.mean * self.moment).sum(dim=-1)) / 2
        return shape, scale

    def sample(self, normals: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
        """One posterior draw of ``beta_g`` per group ``(R, G, q)`` float64, from normals ``(R, G, q + M)`` and
        uniforms ``(R, G, M + 1)``: ``sigma^2 = b / Gamma(a)`` (:func:`gamma_draws`), then ``beta = mu + sigma
        L^-T w`` (``L^-T w ~ N(0, Lambda^-1)``)."""
        q = self.mean.shape[-1]
        shape, scale = self.shape_and_scale()
        variance = scale / gamma_draws(shape, normals[..., q:], uniforms)  # sigma^2 (R, G)
        w = normals[..., :q].double()[..., None]  # (R, G, q, 1)
        deviation = torch.linalg.solve_triangular(self.lower.mT, w, upper=True)[..., 0]  # L^-T w (R, G, q)
        return self.mean + variance.sqrt()[..., None] * deviation

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"gram": self.gram, "lower": self.lower, "moment": self.moment, "mean": self.mean,
                "square_sum": self.square_sum, "count": self.count}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for name in self.state_dict():
            setattr(self, name, state[name])


class _PosteriorSampling(BanditAgent):
    """The part LinFullPost and NeuralLinear share: the hyperparameters of the NIG prior, the groups of arms, the
    round-robin warm-up and the posterior draw. A subclass gives ``_model_features(contexts) -> (R, K, q)``."""

    def _init_posterior(self, features: int, lambda_reg: Any, prior_shape: Any, prior_scale: Any,
                        initial_pulls: int, per_arm: bool | None) -> None:
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        self.prior_shape = self._hyperparameter("prior_shape", prior_shape, minimum=0, strict=True)
        self.prior_scale = self._hyperparameter("prior_scale", prior_scale, minimum=0, strict=True)
        self.initial_pulls = check_int("initial_pulls", initial_pulls, minimum=0)
        if per_arm is not None:
            check_bool("per_arm", per_arm)
        #: One model per arm (``G = K``) or one shared model (``G = 1``); None: per arm where ``K`` divides ``d``.
        self.per_arm = self.dim % self.n_arms == 0 if per_arm is None else per_arm
        self._hyperparameters.update(initial_pulls=self.initial_pulls, per_arm=per_arm)
        groups = self.n_arms if self.per_arm else 1
        self.arm_group = torch.arange(self.n_arms, device=self.device) * int(self.per_arm)  # g(k) (K,)
        self.posterior = NormalInverseGamma(self.num_replicas, groups, features, self.lambda_reg, self.prior_shape,
                                            self.prior_scale)

    def warm_up_arm(self) -> int | None:
        """The round-robin arm of this round, ``(t - 1) mod K`` for ``t <= K * initial_pulls``; None afterwards."""
        return (self.t - 1) % self.n_arms if self.t <= self.n_arms * self.initial_pulls else None

    def sample_coefficients(self, t: int | None = None) -> torch.Tensor:
        """Round ``t``'s (default: this round's) posterior draw of every group's ``beta`` ``(R, G, q)`` float64."""
        G, q = self.posterior.mean.shape[1:]
        normals = self._draws("normal", Stream.SAMPLE, (G, q + PROPOSALS), t).to(self.device)  # (R, G, q + M)
        uniforms = self._draws("uniform", Stream.ACCEPT, (G, PROPOSALS + 1), t).to(self.device)  # (R, G, M + 1)
        return self.posterior.sample(normals, uniforms)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        arm = self.warm_up_arm()
        if arm is not None:
            return torch.full((self.num_replicas,), arm, dtype=torch.int64, device=self.device)
        beta = self.sample_coefficients()[:, self.arm_group]  # beta_g(k) (R, K, q)
        z = self._model_features(contexts).double()  # (R, K, q)
        return self._argmax((z * beta).sum(dim=-1))  # (R,)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor | None:
        """The round-robin arm's one-hot in the warm-up, ``(R, K)`` float64; None (Monte Carlo) afterwards."""
        arm = self.warm_up_arm()
        if arm is None:
            return None
        probabilities = torch.zeros(self.num_replicas, self.n_arms, dtype=torch.float64, device=self.device)
        probabilities[:, arm] = 1.0
        return probabilities

    def _check_learned(self, last_round: int) -> None:
        self._check_finite(self.posterior.mean, "the posterior mean", by_round=last_round)


class LinFullPost(_PosteriorSampling):
    """Linear Thompson sampling with an unknown noise variance: per-arm Bayesian linear regression (NIG posterior).

    The Showdown's ``LinFullPost`` (module docstring): arm ``k``'s model on its features and a constant
    (``z = (x, 1)``, ``q = d + 1``: the intercept), prior ``beta ~ N(0, sigma^2 / lambda I)``,
    ``sigma^2 ~ IG(a0, b0)``; each round draws ``sigma_g^2`` and ``beta_g`` from every model's exact posterior and
    plays the best arm for the draw; the ``K * initial_pulls`` first rounds play the arms in turn. A round costs one
    Cholesky factorisation of size ``q`` (the played arm's model) and one triangular solve per model.

    Known quirks of the Showdown's code, and what this one does: its per-arm posterior uses the arm's own data
    only (kept: arm ``k``'s ``sigma^2`` is estimated from its own rewards); it refits the played arm from its whole
    history each round with an inverse (here: the same posterior from running sums and a Cholesky factor); its draws
    of ``sigma^2`` and ``beta`` come from numpy's global generator (here: counter-based streams per replica).
    With ``per_arm=False`` (default where ``d`` is not a multiple of ``K``, as on the synthetic envs, whose arms
    are feature vectors with one ``theta``) one model sees every arm's row: a shared ``beta`` and ``sigma^2``.

    When to use it:
        The Showdown's most reliable agent: classification data with one-hot-block arms (Mushroom-v0, Shuttle-v0)
        and linear rewards whose noise level is unknown; no hyperparameter scales with the reward but ``b0``.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        lambda_reg: ``lambda > 0``, the prior precision of ``beta`` in units of ``1 / sigma^2`` (the Showdown's
            ``lambda_prior``, 0.25). A number or one per replica.
        prior_shape: ``a0 > 0`` of the inverse-gamma prior of ``sigma^2`` (the Showdown's 6). A number or one per
            replica.
        prior_scale: ``b0 > 0`` of that prior (the Showdown's 6; ``E[sigma^2] = b0 / (a0 - 1) = 1.2`` before any
            data, in squared reward units). A number or one per replica.
        initial_pulls: Round-robin pulls of every arm before sampling (the Showdown's 2).
        per_arm: One model per arm (True) or one shared model (False); None (default): per arm where ``d`` is a
            multiple of ``K`` (the one-hot-block data envs).

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Riquelme, Tucker and Snoek (2018), "Deep Bayesian bandits showdown: an empirical comparison of Bayesian deep
        networks for Thompson sampling", ICLR (``LinFullPost``; defaults from its ``example_main.py``).
    """

    def __init__(self, env=None, *, lambda_reg: Any = 0.25, prior_shape: Any = 6.0, prior_scale: Any = 6.0,
                 initial_pulls: int = 2, per_arm: bool | None = None, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self._init_posterior(self.dim + 1, lambda_reg, prior_shape, prior_scale, initial_pulls, per_arm)

    def _model_features(self, contexts: torch.Tensor) -> torch.Tensor:
        """``z = (x, 1)`` of every arm: ``(R, K, d) -> (R, K, d + 1)``."""
        return torch.cat([contexts, torch.ones_like(contexts[..., :1])], dim=-1)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = chosen_rows(self._model_features(contexts), actions)  # (R, d + 1)
        self.posterior.add(z, self.arm_group[actions], rewards)

    def _state(self) -> dict[str, torch.Tensor]:
        return self.posterior.state_dict()

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.posterior.load_state_dict(state)


def rmsprop_steps(model: MLPModel, theta: torch.Tensor, square_average: torch.Tensor, step_size: torch.Tensor,
                  step_decay: float, max_grad_norm: float, batches: torch.Tensor,
                  first_step: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The Showdown's training: RMSProp steps on the mean squared error of mini-batches ``(R, S, B)``.

    Step ``s`` (counted from ``first_step``, the steps of earlier trainings) clips the gradient ``g`` of
    ``mean_batch (f(x) - r)^2`` to norm ``max_grad_norm``, then ``m <- 0.9 m + 0.1 g^2`` and
    ``theta <- theta - eta_s g / sqrt(m + 1e-10)`` with ``eta_s = eta_0 / (1 + step_decay s)`` (TensorFlow 1's
    RMSProp, whose ``m`` starts at 1, and ``inverse_time_decay``; no momentum, no weight decay).
    ``(R, p), (R, p), (R,) -> (R, p), (R, p)``.
    """
    rows = model.n_observations
    for s in range(first_step, first_step + batches.shape[1]):
        g = model.gradient(theta, batches[:, s - first_step]) / rows  # the batch mean loss (the model scales by n / B)
        g = g * (max_grad_norm / g.norm(dim=1, keepdim=True)).clamp(max=1.0)  # (R, p)
        square_average = 0.9 * square_average + 0.1 * g * g
        theta = theta - (step_size / (1 + step_decay * s))[:, None] * g / (square_average + 1e-10).sqrt()
    return theta, square_average


class NeuralLinear(_PosteriorSampling):
    """Thompson sampling on a network's features: Bayesian linear regression (NIG posterior) on its last hidden layer.

    The Showdown's ``NeuralLinear`` (module docstring): the network ``f(x)`` (:class:`agents.models.mlp.MLP`, by
    default one hidden layer of 50 ReLU units) is trained on every row so far every ``train_every`` rounds, for
    ``n_inner_steps`` RMSProp steps on mini-batches of ``batch_size`` rows (:func:`rmsprop_steps`); its last hidden
    layer ``phi(x)`` (``q`` = its width, no intercept) feeds the per-arm NIG regression of :class:`LinFullPost`,
    which learns each round's played row and is refitted on every row's new ``phi`` after each training. Rounds
    as in :class:`LinFullPost`.

    Known quirks of the Showdown's code, and what this one does: its network has one output per arm and learns
    from the played arm's output only (here one output on the arm's row, as every neural agent of this package:
    on one-hot-block arms the first layer sees arm ``k``'s block, so each arm has its own first-layer weights); its
    ``reset_lr`` builds a new learning-rate tensor that the optimizer never reads, so the rate decays over all
    trainings, ``eta_0 / (1 + c s)`` with ``s`` counting every step since round 1: kept, as the code ran (restarting
    the rate at ``eta_0`` each training, what ``reset_lr`` means, left 47 and 49 of the 50 ReLU units dead on
    every row by round 1,000 on Mushroom-v0 and the regression on ``phi`` near uniform play: measured, seed 0);
    after a training it skips the last round's arm in the refit (here every group is refitted); the weights start
    from :class:`agents.models.mlp.MLPModel`'s He initialisation, not uniform in ``+-0.3``. Mini-batch rows are
    uniform with replacement (stream ``MINIBATCH``).

    When to use it:
        Nonlinear rewards and classification data where a linear model on the raw features is not enough: the
        Showdown's best agent overall. A training every 50 rounds costs 100 mini-batch steps.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        model: ``"mlp"`` or an :class:`agents.models.mlp.MLP` (its last hidden layer is ``phi``).
        model_kwargs: Keywords of the MLP; default ``{"hidden": (50,), "activation": "relu"}`` (the Showdown's).
        lambda_reg: ``lambda > 0``, the prior precision of the coefficients on ``phi`` (as in :class:`LinFullPost`;
            the Showdown's 0.25). A number or one per replica.
        prior_shape: ``a0 > 0`` of the inverse-gamma prior of ``sigma^2`` (the Showdown's 6). A number or one per
            replica.
        prior_scale: ``b0 > 0`` of that prior (the Showdown's 6). A number or one per replica.
        initial_pulls: Round-robin pulls of every arm before sampling (the Showdown's 2).
        per_arm: One regression per arm (True) or one shared regression (False); None (default): per arm where ``d``
            is a multiple of ``K``.
        step_size: RMSProp's initial rate ``eta_0 > 0`` (the Showdown's 0.1). A number or one per replica.
        step_decay: ``c >= 0`` of ``eta_s = eta_0 / (1 + c s)``, ``s`` the steps since round 1 (the Showdown's 0.5).
        max_grad_norm: Gradients are clipped to this norm ``> 0`` (the Showdown's 5).
        n_inner_steps: RMSProp steps per training (the Showdown's ``training_epochs``, 100).
        batch_size: Rows per step (the Showdown's 512).
        train_every: Rounds between two trainings (the Showdown's ``training_freq_network``, 50).

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Riquelme, Tucker and Snoek (2018), "Deep Bayesian bandits showdown: an empirical comparison of Bayesian deep
        networks for Thompson sampling", ICLR (``NeuralLinear``; defaults from its ``example_main.py``).
    """

    def __init__(self, env=None, *, model: Any = "mlp", model_kwargs: dict | None = None, lambda_reg: Any = 0.25,
                 prior_shape: Any = 6.0, prior_scale: Any = 6.0, initial_pulls: int = 2, per_arm: bool | None = None,
                 step_size: Any = 0.1, step_decay: float = 0.5, max_grad_norm: float = 5.0, n_inner_steps: int = 100,
                 batch_size: int = 512, train_every: int = 50, **kwargs) -> None:
        super().__init__(env, **kwargs)
        kwargs_given = model_kwargs
        model_kwargs = {"hidden": (50,), "activation": "relu"} if model_kwargs is None else model_kwargs
        no_decay = torch.zeros(self.num_replicas, device=self.device)  # the Showdown's network has no weight decay
        self.model = build_model(model, model_kwargs, self.num_replicas, self.dim, no_decay, self.device, self.keys)
        if not isinstance(self.model, MLPModel):
            raise ValueError(f"model must be 'mlp' or an MLP (NeuralLinear regresses on its last hidden layer), "
                             f"got {model!r}")
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        self.step_decay = check_float("step_decay", step_decay, 0)
        self.max_grad_norm = check_float("max_grad_norm", max_grad_norm, 0, strict=True)
        self.n_inner_steps = check_int("n_inner_steps", n_inner_steps)
        self.batch_size = check_int("batch_size", batch_size)
        self.train_every = check_int("train_every", train_every)
        self._hyperparameters.update(model=model, n_inner_steps=self.n_inner_steps, batch_size=self.batch_size,
                                     train_every=self.train_every, step_decay=self.step_decay,
                                     max_grad_norm=self.max_grad_norm)
        if kwargs_given is not None:
            self._hyperparameters["model_kwargs"] = dict(kwargs_given)
        self._init_posterior(self.model.hidden[-1], lambda_reg, prior_shape, prior_scale, initial_pulls, per_arm)
        self.theta = self.model.initial_params()  # (R, p)
        self.square_average = torch.ones_like(self.theta)  # RMSProp's m (R, p), 1 at the start as in TensorFlow 1
        self.played_groups = History(self.num_replicas, {"group": ()}, self.device)  # g of every played row (R, n)

    def _model_features(self, contexts: torch.Tensor) -> torch.Tensor:
        """``phi(x)`` of every arm, the network's last hidden layer: ``(R, K, d) -> (R, K, q)``."""
        return self.model.features(self.theta, contexts)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(contexts, actions)  # (R, d)
        groups = self.arm_group[actions]  # (R,)
        self.model.add(x, rewards)
        self.played_groups.append(group=groups.float())
        if self.t % self.train_every:
            self.posterior.add(self._model_features(x[:, None, :])[:, 0], groups, rewards)
        else:
            u = self._draws("uniform", Stream.MINIBATCH, (self.n_inner_steps, self.batch_size)).to(self.device)
            self.theta, self.square_average = rmsprop_steps(
                self.model, self.theta, self.square_average, self.step_size, self.step_decay, self.max_grad_norm,
                self.model.sample_rows(u), self.n_inner_steps * (self.t // self.train_every - 1))  # (R, p), (R, p)
            self._check_finite(self.theta, "the network's parameters", self.step_size[0].item())
            rows, rewards_so_far, _ = self.model.rows(None)  # (R, n, d), (R, n)
            self.posterior.refit(self.model.features(self.theta, rows), self.played_groups["group"].long(),
                                 rewards_so_far)

    def _state(self) -> dict[str, torch.Tensor]:
        return {**agent_state(self.theta, self.model), "square_average": self.square_average,
                "played_groups": self.played_groups["group"], **self.posterior.state_dict()}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state)
        self.square_average = state["square_average"]
        self.played_groups.load_state_dict({"group": state["played_groups"]})
        self.posterior.load_state_dict(state)

