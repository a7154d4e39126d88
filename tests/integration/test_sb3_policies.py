"""Stable-Baselines3's PPO, A2C and DQN on our envs; the per-arm extractor and policies."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.wrappers import OneStepEpisodes

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3 import A2C, DQN, PPO  # noqa: E402

from bandit_gym.sb3 import PerArmActorCriticPolicy, PerArmDQNPolicy, PerArmFeaturesExtractor  # noqa: E402

# Few hundred steps with the algorithms' update machinery exercised more than once; DQN's replay
# buffer is kept small (its default of 10^6 arm matrices would need gigabytes).
SMOKE_KWARGS = {PPO: {"n_steps": 64, "batch_size": 32, "n_epochs": 2}, A2C: {"n_steps": 8},
                DQN: {"learning_starts": 50, "buffer_size": 1_000, "train_freq": 4}}
PER_ARM_POLICY = {PPO: PerArmActorCriticPolicy, A2C: PerArmActorCriticPolicy, DQN: PerArmDQNPolicy}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def _parameters(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.policy.parameters()])


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("per_arm", [False, True], ids=["MlpPolicy", "per-arm"])
@pytest.mark.parametrize("algo", [PPO, A2C, DQN], ids=lambda a: a.__name__)
@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_sb3_trains_on_every_synthetic_env(env_id: str, algo, per_arm: bool) -> None:
    env = OneStepEpisodes(gym.make(env_id))
    policy = PER_ARM_POLICY[algo] if per_arm else "MlpPolicy"
    model = algo(policy, env, seed=0, device="cpu", **SMOKE_KWARGS[algo])
    before = _parameters(model)
    model.learn(320)  # a multiple of every rollout length above
    assert model.num_timesteps == 320
    assert not torch.equal(_parameters(model), before)  # it trained
    # SB3's Monitor saw one-step episodes: one round each, its reward the round's.
    assert len(model.ep_info_buffer) > 0 and all(episode["l"] == 1 for episode in model.ep_info_buffer)


def _count(model) -> int:
    return sum(p.numel() for p in model.policy.parameters())


@pytest.mark.parametrize("algo", [PPO, DQN], ids=lambda a: a.__name__)
def test_per_arm_policy_size_does_not_depend_on_the_number_of_arms(algo) -> None:
    sizes = {}
    for n_arms in (5, 50):
        env = OneStepEpisodes(gym.make("LinearBandit-v0", n_arms=n_arms))
        sizes[n_arms] = _count(algo(PER_ARM_POLICY[algo], env, device="cpu", **SMOKE_KWARGS[algo]))
    assert sizes[5] == sizes[50]
    plain = [_count(algo("MlpPolicy", OneStepEpisodes(gym.make("LinearBandit-v0", n_arms=n)), device="cpu",
                         **SMOKE_KWARGS[algo])) for n in (5, 50)]
    assert plain[0] < plain[1]  # what the per-arm policy avoids


@pytest.mark.parametrize("algo", [PPO, DQN], ids=lambda a: a.__name__)
def test_per_arm_model_saves_and_loads(algo, tmp_path) -> None:
    env = OneStepEpisodes(gym.make("LinearBandit-v0"))
    model = algo(PER_ARM_POLICY[algo], env, seed=0, device="cpu", **SMOKE_KWARGS[algo]).learn(128)
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip", device="cpu")
    obs = np.stack([env.reset(seed=s)[0] for s in range(8)])  # (8, K, d)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    torch.testing.assert_close(_parameters(loaded), _parameters(model))


def test_per_arm_logits_follow_the_arms_when_they_are_reordered() -> None:
    # One shared network scores each row: permuting the arms permutes the logits, and the
    # critic's value (pooled over arms) does not change.
    env = OneStepEpisodes(gym.make("LinearBandit-v0"))
    policy = PPO(PerArmActorCriticPolicy, env, seed=0, device="cpu", n_steps=64, batch_size=32).policy
    obs = torch.as_tensor(env.reset(seed=1)[0])[None]  # (1, K, d)
    order = torch.randperm(obs.shape[1], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = policy.get_distribution(obs).distribution.logits
        logits_reordered = policy.get_distribution(obs[:, order]).distribution.logits
        values, values_reordered = policy.predict_values(obs), policy.predict_values(obs[:, order])
    torch.testing.assert_close(logits_reordered, logits[:, order])
    torch.testing.assert_close(values_reordered, values)
    # Each logit is the shared network on that arm's row alone.
    scorer = policy.pi_features_extractor.arm_scorer
    with torch.no_grad():
        torch.testing.assert_close(logits - logits.logsumexp(-1, keepdim=True),
                                   torch.log_softmax(scorer(obs[0]).squeeze(-1), -1)[None])


def _greedy_and_uniform_regret(model, env: gym.Env, rounds: int) -> tuple[float, float]:
    """Per-round regret of the trained policy's greedy arm over the next ``rounds`` rounds of the
    same run, and of uniform random play (its expectation) on the same rounds."""
    obs, info = env.reset()
    greedy, uniform = [], []
    for _ in range(rounds):
        action, _ = model.predict(obs, deterministic=True)
        uniform.append(info["expected_rewards"].max() - info["expected_rewards"].mean())
        _, _, _, _, info = env.step(int(action))
        greedy.append(info["regret"])
        obs, info = env.reset()
    return float(np.mean(greedy)), float(np.mean(uniform))


def assert_ppo_beats_uniform_threefold(steps: int) -> None:
    """PPO with the per-arm policy, ``steps`` rounds of learning, then 2,000 greedy rounds: below 0.3x uniform's
    regret. One run, theta* fixed throughout: a horizon past PPO's rollouts and the evaluation (max_episode_steps
    too: the spec's TimeLimit would otherwise cut the run at 10,000)."""
    env = OneStepEpisodes(gym.make("LinearBandit-v0", horizon=30_000, max_episode_steps=30_000))
    model = PPO(PerArmActorCriticPolicy, env, seed=0, device="cpu")
    model.learn(steps)
    greedy, uniform = _greedy_and_uniform_regret(model, env, rounds=2_000)
    assert greedy < 0.3 * uniform, (greedy, uniform)


def test_ppo_with_per_arm_policy_beats_uniform_threefold_in_4096_steps() -> None:
    # The default suite's verdict of the 20,000-step run below (14 s against 58 s): two of PPO's 2,048-step
    # rollouts. Measured with this seed (AMD EPYC): greedy regret 0.024 per round against uniform's 0.485, 20 times
    # below it, far inside the 0.3x bound that a policy ignoring or mixing up the arms' rows would not meet.
    assert_ppo_beats_uniform_threefold(4096)


@pytest.mark.slow
def test_ppo_with_per_arm_policy_beats_uniform_threefold_in_20000_steps() -> None:
    # The issue's budget with SB3's default PPO settings (58 s on a quiet 2-core AMD EPYC: slow, with the
    # 4,096-step verdict above in the default suite). Measured with this seed: greedy regret about 0.003 per
    # round against uniform's 0.48 (benchmarks/sb3_ppo.py). A policy that ignored or mixed up the
    # arms' rows would stay near uniform, far above the 0.3x bound.
    assert_ppo_beats_uniform_threefold(20_000)


def test_sb3_check_env_finds_nothing_but_the_arm_matrix_shape() -> None:
    # SB3's checker warns about any 2-D observation; the per-arm policies need exactly that shape.
    from stable_baselines3.common.env_checker import check_env

    for env in (gym.make("LinearBandit-v0"), OneStepEpisodes(gym.make("LinearBandit-v0"))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env)
        messages = [str(w.message) for w in caught]
        assert messages and all("unconventional shape" in m for m in messages), messages


def test_per_arm_extractor_refuses_a_flat_observation_space() -> None:
    with pytest.raises(ValueError, match=r"observation_space must be a Box of shape \(n_arms, dim\)"):
        PerArmFeaturesExtractor(gym.spaces.Box(-1, 1, shape=(1000,)))
    with pytest.raises(ValueError, match="net_arch must be a sequence of positive layer widths"):
        PerArmFeaturesExtractor(gym.spaces.Box(-1, 1, shape=(5, 3)), net_arch=[0])


def test_per_arm_policy_points_net_arch_to_the_extractor() -> None:
    env = OneStepEpisodes(gym.make("LinearBandit-v0"))
    with pytest.raises(ValueError, match=r"features_extractor_kwargs=dict\(net_arch=\[32\]\)"):
        PPO(PerArmActorCriticPolicy, env, policy_kwargs={"net_arch": [32]})


def test_bandit_gym_does_not_import_sb3_and_sb3_module_names_the_extra() -> None:
    code = (
        "import sys; import bandit_gym; assert 'stable_baselines3' not in sys.modules, 'imported SB3'\n"
        "sys.modules['stable_baselines3'] = None  # as if not installed\n"
        "try:\n    import bandit_gym.sb3\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "contextual-bandit-gym[sb3]"' in out
