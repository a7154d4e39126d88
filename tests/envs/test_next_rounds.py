"""Rounds in chunks: ``next_rounds(n)`` against ``n`` steps for every registered id, single and batched, and the
agents' loop through chunks against the same loop through steps (``docs/envs.md``, "Rounds in chunks")."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS, accepted, made_up_frame  # tests/integration is on pytest's pythonpath

import agents.loop.rounds
import bandit_gym
from agents import LMCTS, LinTS, LinUCB
from bandit_gym import chunked_rounds
from bandit_gym.feedback import DelayedFeedback, Drift

ALL_IDS = list(bandit_gym.ENV_IDS)
#: Wide arms, so that the synthetic envs' drawn chunks are shorter than the horizon: next_rounds' chunks cross them.
WIDE = {"n_arms": 10, "dim": 50}
#: Chunk sizes of one episode of 40 rounds, then two steps to its end.
SIZES = (1, 7, 13, 17)


def actions_of(t: int, num: int, n_arms: int) -> np.ndarray:
    """Arms that differ between rounds and replicas ``(R,)``."""
    return (t * 3 + np.arange(num) * 5) % n_arms


def make_pair(make_env, env_id: str, num_envs: int | None, **kwargs):
    """Two envs of ``env_id`` whose drawn chunks of rounds are shorter than an episode."""
    if "dataset" not in gym.spec(env_id).kwargs:
        return [make_env(env_id, num_envs=num_envs, **accepted(env_id, WIDE), **kwargs) for _ in range(2)]
    pair = [make_env(env_id, num_envs=num_envs, **kwargs) for _ in range(2)]
    for env in pair:  # a dataset env's rounds do not depend on its chunk size ("any number will do")
        env.unwrapped.sim.chunk_rounds = min(env.unwrapped.sim.chunk_rounds, 8)
    return pair


def check_chunks_against_steps(chunked, stepped, num_envs: int | None) -> None:
    """Draw :data:`SIZES` chunks from ``chunked`` and step ``stepped`` through the same rounds (both reset with one
    seed): observations, expected rewards, scored values, rewards, regret and the state afterwards are equal, bit
    for bit."""
    vector = num_envs is not None
    R, K = num_envs or 1, chunked.unwrapped.n_arms
    chunked.reset(seed=5)
    obs, info = stepped.reset(seed=5)
    assert chunked.unwrapped.sim.chunk_rounds < sum(SIZES)  # some chunk crosses a drawn chunk's boundary
    t = 0
    for n in SIZES:
        chunk = chunked.unwrapped.next_rounds(n)
        assert chunk.first_round == t and len(chunk) == n and chunk.contexts.dtype == torch.float32
        arms = torch.as_tensor(np.stack([actions_of(t + i, R, K) for i in range(n)]))  # (n, R)
        rewards, regret = chunk.rewards_of(arms), chunk.regret_of(arms)  # (n, R)
        for i in range(n):
            assert np.array_equal(np.asarray(obs).reshape(R, K, -1), chunk.contexts[i].numpy())
            assert np.array_equal(np.asarray(info["expected_rewards"]).reshape(R, K), chunk.expected[i].numpy())
            assert np.array_equal(np.asarray(info["optimal_action"]).reshape(R), chunk.optimal_action[i].numpy())
            scored = info.get("reward_row", info["expected_rewards"])  # what a step scores: a Showdown env's row
            assert np.array_equal(np.asarray(scored).reshape(R, K), chunk.scored[i].numpy())
            action = arms[i].numpy() if vector else int(arms[i, 0])
            obs, reward, _, _, info = stepped.step(action)
            assert np.array_equal(np.asarray(reward, np.float32).reshape(R), rewards[i].numpy())
            assert np.array_equal(np.asarray(info["regret"], np.float32).reshape(R), regret[i].numpy())
            assert np.array_equal(rewards[i].numpy(), chunk.rewards[i].numpy()[np.arange(R), arms[i].numpy()])
        assert np.array_equal(np.asarray(obs).reshape(R, K, -1), chunk.next_contexts.numpy())
        t += n
    for _ in range(2):  # the chunked env's state is the stepped env's: the same steps to the horizon
        action = actions_of(t, R, K) if vector else int(actions_of(t, 1, K)[0])
        a, b = chunked.step(action), stepped.step(action)
        for x, y in zip(a[:4], b[:4], strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y))
        assert np.array_equal(np.asarray(a[4]["regret"]), np.asarray(b[4]["regret"]))
        t += 1
    assert np.all(np.asarray(b[3]))  # truncated at the horizon


@pytest.mark.parametrize("num_envs", [None, 3])
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_next_rounds_equals_steps_bit_for_bit(make_env, env_id, num_envs):
    check_chunks_against_steps(*make_pair(make_env, env_id, num_envs), num_envs)


@pytest.mark.parametrize("num_envs", [None, 3])
def test_next_rounds_equals_steps_with_kernels_off(make_env, monkeypatch, num_envs):
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")  # chunks of the definition's size: 4 rounds here
    check_chunks_against_steps(*make_pair(make_env, "LinearBandit-v0", num_envs), num_envs)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_next_rounds_equals_steps_on_cuda(make_env, env_id):
    chunked, stepped = make_pair(make_env, env_id, 4, device="cuda")
    chunked.reset(seed=2)
    obs, _ = stepped.reset(seed=2)
    for n in SIZES:
        chunk = chunked.unwrapped.next_rounds(n)
        assert chunk.rewards.device.type == "cuda"
        for i in range(n):
            arms = torch.as_tensor(actions_of(i, 4, WIDE["n_arms"]), device="cuda")
            assert torch.equal(obs, chunk.contexts[i])
            obs, reward, _, _, info = stepped.step(arms)
            assert torch.equal(reward.float(), chunk.rewards_of(arms, i))
            assert torch.equal(info["regret"].float(), chunk.regret_of(arms, i))
        assert torch.equal(obs, chunk.next_contexts)


def test_next_rounds_refuses_before_reset_past_the_episode_and_bad_counts(make_env):
    env = make_env("LinearBandit-v0").unwrapped  # horizon 40
    with pytest.raises(RuntimeError, match=r"call reset\(\) before next_rounds"):
        env.next_rounds(1)
    env.reset(seed=0)
    for bad in (0, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"n must be an integer >= 1, got"):
            env.next_rounds(bad)
    env.next_rounds(30)
    with pytest.raises(ValueError, match=r"n must be at most the 10 rounds left in the episode \(round 30 of 40\)"):
        env.next_rounds(11)
    env.next_rounds(10)
    with pytest.raises(RuntimeError, match=r"episode ended after its 40 rounds; call reset"):
        env.next_rounds(1)
    with pytest.warns(UserWarning, match="before horizon"):
        venv = make_env("LinearBandit-v0", num_envs=2, max_episode_steps=12)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"at most the 12 rounds left"):
        venv.next_rounds(13)
    venv.next_rounds(12)
    _, _, _, truncated, _ = venv.step(np.zeros(2, np.int64))  # the next step autoresets, as after 12 steps
    assert not truncated.any() and venv.unwrapped.sim.t == 0


def test_chunked_rounds_looks_through_the_wrappers_of_gym_make_only(make_env):
    env = make_env("LinearBandit-v0")
    assert chunked_rounds(env) == env.unwrapped.next_rounds  # OrderEnforcing and PassiveEnvChecker
    venv = make_env("LinearBandit-v0", num_envs=2)
    assert chunked_rounds(venv) == venv.next_rounds

    class OwnStep(type(env.unwrapped)):
        def step(self, action):
            return super().step(action)

    hiding = [gym.Wrapper(env), gym.make("LinearBandit-v0", max_episode_steps=10),
              gym.wrappers.TransformReward(env, lambda r: 2 * r), DelayedFeedback(make_env("LinearBandit-v0"), delay=1),
              Drift(make_env("LinearBandit-v0"), every=5), gym.vector.VectorWrapper(venv), OwnStep(n_arms=3, dim=2)]
    for wrapped in hiding:
        assert chunked_rounds(wrapped) is None, wrapped


class SteppedVector(gym.vector.VectorWrapper):
    """A plain vector wrapper that tells the bandit's horizon (what agents read to size a run)."""

    @property
    def horizon(self) -> int:
        return self.env.horizon


def stepped(env):
    """``env`` inside a plain wrapper, which hides ``next_rounds``: the agents' loop steps it."""
    return SteppedVector(env) if isinstance(env, gym.vector.VectorEnv) else gym.Wrapper(env)


AGENTS = {"LinUCB": lambda e: LinUCB(e, seed=3), "LinTS": lambda e: LinTS(e, seed=3),
          "LMCTS": lambda e: LMCTS(e, seed=3, n_inner_steps=3)}


def env_kinds(num_envs: int | None):
    """LinearBandit-v0 (``chunk_rounds`` shorter than a next_rounds chunk), a dataset env and a Showdown env (regret
    scored against a draw), single or batched."""
    kinds = [("LinearBandit-v0", {**WIDE, "horizon": 60}),
             ("ClassificationBandit-v0", {"X": made_up_frame(), "y": "label", "horizon": 40}),
             ("LinearShowdown-v0", {"horizon": 60})]
    if num_envs is None:
        return [lambda i=i, kw=kw: gym.make(i, **kw) for i, kw in kinds]
    return [lambda i=i, kw=kw: gym.make_vec(i, num_envs=num_envs, vectorization_mode="vector_entry_point", **kw)
            for i, kw in kinds]


@pytest.mark.parametrize("num_envs", [None, 3])
@pytest.mark.parametrize("name", list(AGENTS))
def test_learn_through_chunks_equals_learn_through_steps(monkeypatch, name, num_envs):
    monkeypatch.setattr(agents.loop.rounds, "CHUNK_ROUNDS", 7)  # several chunks per episode
    for make in env_kinds(num_envs):
        envs = {"chunks": make(), "steps": stepped(make())}
        assert chunked_rounds(envs["chunks"]) is not None and chunked_rounds(envs["steps"]) is None
        learned = {way: AGENTS[name](env).learn(env, 100) for way, env in envs.items()}  # past an episode's end
        for key in ("regret", "reward", "action"):
            assert learned["chunks"].history[key].dtype == learned["steps"].history[key].dtype
            np.testing.assert_array_equal(learned["chunks"].history[key], learned["steps"].history[key])
        states = [agent._state() for agent in learned.values()]
        assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
        bandits = [env.unwrapped for env in envs.values()]
        assert bandits[0].sim.t == bandits[1].sim.t and torch.equal(bandits[0].sim.contexts, bandits[1].sim.contexts)


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("num_envs", [None, 3])
def test_rounds_through_chunks_hand_out_what_steps_hand_out(monkeypatch, num_envs, checked):
    monkeypatch.setattr(agents.loop.rounds, "CHUNK_ROUNDS", 7)
    make = env_kinds(num_envs)[0]
    loops = [LinTS(env, seed=1).rounds(env, 70, checked=checked) for env in (make(), stepped(make()))]
    for a, b in zip(*loops, strict=True):
        assert a.round == b.round and torch.equal(a.actions, b.actions) and torch.equal(a.rewards, b.rewards)
        assert torch.equal(a.contexts, b.contexts)
        for x, y in ((a.observation, b.observation), (a.reward, b.reward), (a.terminated, b.terminated),
                     (a.truncated, b.truncated), (a.info["regret"], b.info["regret"])):
            assert type(x) is type(y) and np.array_equal(np.asarray(x), np.asarray(y))
            assert np.asarray(x).dtype == np.asarray(y).dtype


def test_runner_plays_the_same_numbers_through_chunks(monkeypatch):
    from bandit_experiments.runner import play_rounds

    monkeypatch.setattr(agents.loop.rounds, "CHUNK_ROUNDS", 7)
    make = env_kinds(3)[0]
    played = [play_rounds(LinUCB(env, seed=4), env, 50) for env in (make(), stepped(make()))]
    np.testing.assert_array_equal(played[0].regret, played[1].regret)


def test_next_rounds_chunk_is_the_callers_memory(make_env):
    env, twin = make_pair(make_env, "LinearBandit-v0", None)
    env.reset(seed=1)
    twin.reset(seed=1)
    chunk = env.unwrapped.next_rounds(3)  # within one drawn chunk: copied out of the chunk in hand
    for tensor in (chunk.contexts, chunk.expected, chunk.next_contexts, chunk.rewards):
        tensor.fill_(7.0)
    twin.unwrapped.next_rounds(3)
    assert torch.equal(env.unwrapped.sim.contexts, twin.unwrapped.sim.contexts)  # round 3's arms, as drawn
    a, b = env.step(0), twin.step(0)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1] and a[4]["regret"] == b[4]["regret"]
