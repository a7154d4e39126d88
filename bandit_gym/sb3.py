"""Stable-Baselines3 on bandit envs: a per-arm policy and the native batched env as a ``VecEnv``.

This module imports Stable-Baselines3 and is not imported by ``import bandit_gym``;
install it with ``pip install "contextual-bandit-gym[sb3]"``.

- :class:`PerArmFeaturesExtractor` scores every arm's row ``(d,)`` of the ``(K, d)``
  observation with ONE shared network and returns the ``K`` scores. Its size does not
  depend on ``K``, and it treats every arm alike (one-hot blocks included).
- :class:`PerArmActorCriticPolicy` (PPO, A2C) uses those scores as the action logits;
  :class:`PerArmDQNPolicy` (DQN) uses them as the Q-values. Neither adds a layer whose
  size depends on ``K``.
- :class:`NativeBatchedVecEnv` hands the native batched env
  (``gym.make_vec(id, num_envs=R, vectorization_mode="vector_entry_point")``) to SB3 as a
  ``VecEnv``: the ``R`` replicas are stepped as one batch. :func:`make_batched_vec_env`
  builds one from an id.

Each round is a one-step episode by default (as with
:class:`bandit_gym.wrappers.OneStepEpisodes` on a single env), so no value target
bootstraps from the next round whatever ``gamma`` the algorithm uses.
"""

from __future__ import annotations

from typing import Any

try:
    import stable_baselines3  # noqa: F401
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
except ImportError as exc:  # an install without the extra (tested with SB3 hidden)
    raise ModuleNotFoundError(
        'bandit_gym.sb3 needs Stable-Baselines3: pip install "contextual-bandit-gym[sb3]"', name="stable_baselines3"
    ) from exc

import gymnasium as gym
import torch
from torch import nn

from bandit_gym._sb3_vec_env import NativeBatchedVecEnv, make_batched_vec_env

__all__ = [
    "PerArmFeaturesExtractor", "PerArmActorCriticPolicy", "PerArmDQNPolicy",
    "ArmPoolingValueHead", "NativeBatchedVecEnv", "make_batched_vec_env",
]


def _arm_matrix_shape(observation_space: gym.Space) -> tuple[int, int]:
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 2:
        raise ValueError(
            "observation_space must be a Box of shape (n_arms, dim), one row per arm, "
            f"got {observation_space!r}"
        )
    n_arms, dim = observation_space.shape
    return int(n_arms), int(dim)


class PerArmFeaturesExtractor(BaseFeaturesExtractor):
    """One shared network scores each arm's row: ``(B, K, d) -> (B, K)``.

    Args:
        observation_space: A ``Box`` of shape ``(K, d)`` (one row of features per arm).
        net_arch: Hidden layer widths of the shared per-arm network; ``()`` makes it linear
            (a score ``w . x + b``, the right model for a linear bandit).
        activation_fn: Activation between hidden layers.

    The parameters depend on ``d`` and ``net_arch`` only, never on ``K``.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Box,
        net_arch: tuple[int, ...] | list[int] = (64,),
        activation_fn: type[nn.Module] = nn.ReLU,
    ) -> None:
        n_arms, dim = _arm_matrix_shape(observation_space)
        if any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in net_arch):
            raise ValueError(f"net_arch must be a sequence of positive layer widths, got {net_arch!r}")
        super().__init__(observation_space, features_dim=n_arms)
        widths = [dim, *net_arch]
        layers: list[nn.Module] = []
        for width_in, width_out in zip(widths[:-1], widths[1:], strict=True):
            layers += [nn.Linear(width_in, width_out), activation_fn()]
        layers.append(nn.Linear(widths[-1], 1))
        self.arm_scorer = nn.Sequential(*layers)  # (..., d) -> (..., 1)

    @property
    def output_layer(self) -> nn.Linear:
        """The last layer, whose outputs are the arms' scores."""
        return self.arm_scorer[-1]

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.arm_scorer(observations).squeeze(-1)  # (B, K, d) -> (B, K)


class _ScoresAsLatent(nn.Module):
    """The ``mlp_extractor`` of :class:`PerArmActorCriticPolicy`: passes the per-arm scores on."""

    def __init__(self, n_arms: int) -> None:
        super().__init__()
        self.latent_dim_pi = self.latent_dim_vf = n_arms

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return features, features

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return features

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return features


class ArmPoolingValueHead(nn.Module):
    """State value from per-arm value scores ``q`` ``(B, K)``: ``a * mean(q) + b * max(q) + c``.

    Three parameters whatever ``K``: the mean is the value of playing uniformly at random,
    the max the value of playing the best-looking arm; the critic learns the blend.
    """

    def __init__(self) -> None:
        super().__init__()
        self.blend = nn.Linear(2, 1)

    def forward(self, arm_values: torch.Tensor) -> torch.Tensor:
        pooled = torch.stack([arm_values.mean(dim=-1), arm_values.amax(dim=-1)], dim=-1)  # (B, 2)
        return self.blend(pooled)  # (B, 1)


def _check_no_net_arch(net_arch: Any) -> None:
    if net_arch not in (None, [], ()):
        raise ValueError(
            "per-arm policies have no layers after the per-arm network; give its hidden widths as "
            f"features_extractor_kwargs=dict(net_arch={list(net_arch)!r}) instead of net_arch={net_arch!r}"
        )


class PerArmActorCriticPolicy(ActorCriticPolicy):
    """Actor-critic policy (PPO, A2C) whose action logits are the per-arm scores.

    The actor is a :class:`PerArmFeaturesExtractor` whose ``K`` scores are the logits
    (no layer after it). The critic is a second per-arm extractor (by default; set
    ``share_features_extractor=True`` to share the actor's) whose scores are pooled by
    :class:`ArmPoolingValueHead`. The number of parameters does not depend on ``K``.
    The per-arm network's widths are set with
    ``policy_kwargs=dict(features_extractor_kwargs=dict(net_arch=[...]))``.

    With ``ortho_init`` (SB3's default) the actor's output layer starts with SB3's small
    action-layer gain (0.01), so the first policy is close to uniform.
    """

    def __init__(self, *args: Any, net_arch: Any = None, features_extractor_class: type = PerArmFeaturesExtractor,
                 share_features_extractor: bool = False, **kwargs: Any) -> None:
        _check_no_net_arch(net_arch)
        super().__init__(*args, net_arch=[], features_extractor_class=features_extractor_class,
                         share_features_extractor=share_features_extractor, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _ScoresAsLatent(self.features_dim)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)  # builds K-sized heads and initialises the extractors
        self.action_net = nn.Identity()  # the scores are the logits
        self.value_net = ArmPoolingValueHead()
        if self.ortho_init:
            self.init_weights(self.pi_features_extractor.output_layer, gain=0.01)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


class PerArmDQNPolicy(DQNPolicy):
    """DQN policy whose Q-values are the per-arm scores: ``Q(obs, a) = f(obs[a])``.

    With one-step episodes (or ``gamma=0``) ``Q(obs, a)`` is the expected reward of arm
    ``a``, and ``f`` the shared per-arm reward model. Widths as for
    :class:`PerArmActorCriticPolicy`.
    """

    def __init__(self, *args: Any, net_arch: Any = None, features_extractor_class: type = PerArmFeaturesExtractor,
                 **kwargs: Any) -> None:
        _check_no_net_arch(net_arch)
        super().__init__(*args, net_arch=[], features_extractor_class=features_extractor_class, **kwargs)

    def make_q_net(self) -> QNetwork:
        q_net = super().make_q_net()
        q_net.q_net = nn.Identity()  # the extractor's scores are the Q-values
        return q_net

