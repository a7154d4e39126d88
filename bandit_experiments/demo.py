"""The default experiment: a few agents on one env, many seeds as one batch.

    bandit-gym demo [--env LinearBandit-v0] [--rounds T] [--seeds 10] [--agents NAME ...] [--quiet]

Each agent plays ``seeds`` independent runs (seeds 0, 1, ...) of ``rounds`` rounds as one
batched agent on one batched env. The demo prints each agent's cumulative regret at the
last round, as mean +- standard error over the runs, and its wall time. A progress bar
per agent shows the rounds played and the running regret (on a terminal, without ``--quiet``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from bandit_experiments import catalog

DEFAULT_ENV = "LinearBandit-v0"
DEFAULT_AGENTS = ("LMCTS", "LinTS", "LinUCB", "EpsGreedy", "UniformRandom")
DEFAULT_SEEDS = 10
#: The agent that does not learn: the reference the others should beat.
REFERENCE_AGENT = "UniformRandom"


@dataclass(frozen=True)
class AgentResult:
    """One agent's runs: the cumulative regret of each seed at the last round, and the wall time."""

    agent: str
    final_regret: np.ndarray  # (seeds,)
    seconds: float

    @property
    def mean(self) -> float:
        return float(self.final_regret.mean())

    @property
    def standard_error(self) -> float | None:
        """Standard error of the mean over the seeds; None for a single seed (it has none)."""
        seeds = len(self.final_regret)
        return float(self.final_regret.std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else None


class RegretMeter(gym.vector.VectorWrapper):
    """Passes a vector env through unchanged and sums its regret as it is played (for the progress bar).

    ``cumulative_regret`` is the mean over the replicas of the regret summed since the last reset.
    """

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.cumulative_regret = 0.0

    def reset(self, **kwargs):
        self.cumulative_regret = 0.0
        return self.env.reset(**kwargs)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.cumulative_regret += float(info["regret"].mean())
        return obs, reward, terminated, truncated, info


def default_rounds(env_id: str) -> int:
    """The horizon that ``env_id`` declares (for a dataset env, this loads the data)."""
    env = gym.make(catalog.check_env_id(env_id))
    horizon = int(env.unwrapped.horizon)
    env.close()
    return horizon


def play(env_id: str, agent_name: str, *, rounds: int | None = None, seeds: int = DEFAULT_SEEDS, seed: int = 0,
         progress: bool = False) -> AgentResult:
    """Run ``agent_name`` on ``seeds`` replicas of ``env_id`` (seeds ``seed, seed + 1, ...``) as one batch.

    Args:
        env_id: A registered bandit-gym env id.
        agent_name: An agent class of the ``agents`` package (see ``bandit-gym agents``).
        rounds: Rounds per run; None plays the env's own horizon.
        seeds: Number of independent runs (replicas of the batch), >= 1.
        seed: Seed of the first run.
        progress: Show a tqdm progress bar with the running regret on stderr.

    Returns:
        The agent's final cumulative regret per run and its wall time (env and agent together).
    """
    agent_class = catalog.agent_classes()[catalog.check_agent_name(agent_name)]
    catalog.check_env_id(env_id)
    horizon = {} if rounds is None else {"horizon": rounds}
    venv = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", **horizon)
    total = rounds if rounds is not None else int(venv.horizon)
    start = time.perf_counter()
    agent = agent_class(venv, seed=seed, device="cpu")
    if progress:
        _learn_with_progress_bar(agent, venv, total, agent_name)
    else:
        agent.learn(venv, total_timesteps=total)
    seconds = time.perf_counter() - start
    venv.close()
    final = np.asarray(agent.history["regret"], dtype=np.float64).sum(axis=0)  # (seeds,)
    return AgentResult(agent_name, final, seconds)


def _learn_with_progress_bar(agent, venv: gym.vector.VectorEnv, total: int, label: str) -> None:
    from tqdm.auto import tqdm

    meter = RegretMeter(venv)
    with tqdm(total=total, desc=f"{label:<13}", unit="round", leave=False, file=sys.stderr, mininterval=0.25) as bar:

        def advance(_agent, played: int) -> bool:
            bar.update(1)
            if played % 100 == 0 or played == total:
                bar.set_postfix_str(f"regret {meter.cumulative_regret:.1f}", refresh=False)
            return True

        agent.learn(meter, total_timesteps=total, callback=advance)


def explanation(rounds: int, seeds: int, agent_names: Sequence[str]) -> str:
    """The one line that says what the numbers are and how to read them."""
    spread = f"mean +- s.e. over {seeds} seeds" if seeds > 1 else "one seed, so no standard error"
    line = f"Cumulative regret after {rounds} rounds ({spread}): lower is better"
    if REFERENCE_AGENT in agent_names:
        line += f"; {REFERENCE_AGENT} picks arms at random, the no-learning reference"
    return line + "."


def format_row(result: AgentResult) -> str:
    error = result.standard_error
    spread = f" +- {error:7.1f}" if error is not None else " " * 11
    return f"  {result.agent:<14}{result.mean:10.1f}{spread}   {result.seconds:6.1f} s"


def progress_bar_available() -> bool:
    try:
        import tqdm  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True
