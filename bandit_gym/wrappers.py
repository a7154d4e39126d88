"""Gymnasium wrappers for training episodic RL libraries on bandit envs.

A bandit run is one long episode of ``horizon`` rounds whose rounds do not
influence each other: the action of round ``t`` changes the reward of round
``t`` and nothing else. RL libraries such as Stable-Baselines3 bootstrap a
value from the next observation unless the episode ended, so on the raw env
they mix the next round's value into every target. Either train with discount
``gamma = 0`` (the bandit's own discount), or wrap the env in
:class:`OneStepEpisodes` so that every round is an episode of one step and no
target ever bootstraps, whatever ``gamma`` the library uses.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np


class OneStepEpisodes(gym.Wrapper):
    """Every round of a bandit run is an episode of one step; the run itself goes on.

    ``step`` always returns ``terminated=True``. A ``reset()`` without a seed or
    options does not start a new bandit run (no new ``theta*``): it returns the
    round of the run that is to be played next, the observation that the last
    ``step`` returned (or, with no step since, the one the last ``reset``
    returned: a reset never skips a round). Only when the run reached its horizon
    does an unseeded ``reset()`` reset the wrapped env, which then starts its next
    run. ``reset(seed=...)`` (or ``reset(options=...)``) always restarts the
    wrapped env.

    ``info`` is passed through: from ``step`` it keeps ``regret`` of the round just
    played (and ``expected_rewards`` / ``optimal_action`` of the next round's arms);
    from ``reset`` it holds ``expected_rewards`` / ``optimal_action`` of the arms it
    returns. ``truncated`` is passed through (True on the horizon's last round).

    Examples:
        >>> import gymnasium as gym, bandit_gym
        >>> from bandit_gym.wrappers import OneStepEpisodes
        >>> env = OneStepEpisodes(gym.make("LinearBandit-v0"))
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(0)
        >>> terminated, "regret" in info
        (True, True)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._next_round: tuple[Any, dict[str, Any]] | None = None  # (obs, info) to play next, if the run goes on

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is None and options is None and self._next_round is not None:
            obs, info = self._next_round  # copies: the caller may have changed what step returned
            return (obs.copy() if isinstance(obs, np.ndarray) else obs), _without_regret(info)
        obs, info = self.env.reset(seed=seed, options=options)
        self._next_round = (obs, info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        run_goes_on = not (terminated or truncated)
        self._next_round = (obs, info) if run_goes_on else None
        return obs, reward, True, truncated, info


def _without_regret(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` of a reset: what the arms are worth, without the previous round's regret."""
    return {key: (value.copy() if isinstance(value, np.ndarray) else value)
            for key, value in info.items() if key != "regret"}
