"""Replica groups on the library's threads (``bandit_gym.threads.for_each``): every item
runs, on several threads where the policy gives them, torch's threads come back as they were, and the arm features
drawn in groups are the same bits on one thread or two."""

from __future__ import annotations

import multiprocessing
import os
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinUCB
from bandit_gym import _rng_kernels, threads
from bandit_gym.threads import GROUP_WORK, for_each, group_threads, policy

KEYS = torch.arange(40, dtype=torch.int64) * 7919 + 12345


@pytest.fixture(autouse=True)
def nothing_chosen(monkeypatch):
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")


def test_group_threads_follow_the_policy():
    """1 outside any policy and below GROUP_WORK; torch's own setting from it; a given number wins; nested policies
    inherit; leaving puts the outer value back."""
    own = torch.get_num_threads()
    assert group_threads() == 1
    with policy(work=GROUP_WORK - 1):
        assert group_threads() == 1
    with policy(work=GROUP_WORK):
        assert group_threads() == own and torch.get_num_threads() == 1  # torch's operations stay on one
        with policy():
            assert group_threads() == own
        with policy(1):
            assert group_threads() == 1
        assert group_threads() == own
    with policy(2, work=0):
        assert group_threads() == 2
    with policy("torch"):
        assert group_threads() == own
    assert group_threads() == 1


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 CPUs (for_each uses at most the CPUs)")
def test_for_each_runs_every_item_on_two_threads_at_once():
    """Two items that each wait for the other (a barrier of 2) finish only if two threads run them at once."""
    barrier, seen = threading.Barrier(2, timeout=10), []

    def item(i):
        barrier.wait()
        seen.append((i, threading.get_ident()))

    before = torch.get_num_threads()
    with policy(2):
        for_each(item, [0, 1])
    assert sorted(i for i, _ in seen) == [0, 1] and len({ident for _, ident in seen}) == 2
    assert torch.get_num_threads() == before


def test_for_each_on_one_thread_runs_in_order_on_the_caller():
    seen = []
    for_each(lambda i: seen.append((i, threading.get_ident())), range(5))
    assert seen == [(i, threading.get_ident()) for i in range(5)]


def test_for_each_raises_what_an_item_raised_and_restores_torch_threads():
    before = torch.get_num_threads()

    def item(i):
        if i == 3:
            raise ValueError("item 3")

    with policy(2), pytest.raises(ValueError, match="item 3"):
        for_each(item, range(8))
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("pass_words", [64, 16384])
def test_unit_normal_draws_the_same_bits_on_one_thread_or_two(monkeypatch, pass_words):
    """Passes of a few replicas (64 words: one replica each) or the default size, on 1 and 2 threads: equal."""
    monkeypatch.setattr(_rng_kernels, "_PASS_WORDS", pass_words)
    with policy(1):
        one = _rng_kernels.unit_normal(KEYS, [5, 6], (3, 10, 4))
    with policy(2):
        two = _rng_kernels.unit_normal(KEYS, [5, 6], (3, 10, 4))
    monkeypatch.setattr(_rng_kernels, "_PASS_WORDS", 2**30)  # one pass of every replica
    with policy(1):
        whole = _rng_kernels.unit_normal(KEYS, [5, 6], (3, 10, 4))
    assert torch.equal(one, two) and torch.equal(one, whole)
    assert torch.allclose(one.norm(dim=-1), torch.ones(()), atol=1e-6)  # unit rows: the draws were made


def test_learn_by_work_plays_the_numbers_of_one_thread():
    """LinUCB at R = 100 on LinearBandit-v0 (work 140,000 >= GROUP_WORK: the draws in groups on every thread) plays the
    rounds of threads=1, bit for bit."""
    regrets = []
    for chosen in (1, None):
        env = gym.make_vec("LinearBandit-v0", num_envs=100, vectorization_mode="vector_entry_point", horizon=40)
        agent = LinUCB(env, seed=0)
        assert agent.round_work() >= GROUP_WORK
        regrets.append(agent.learn(40, threads=chosen).history["regret"])
    np.testing.assert_array_equal(regrets[0], regrets[1])


def _draw_in_child(queue):
    with policy(2):
        queue.put(_rng_kernels.unit_normal(KEYS, [5], (3, 10, 4)).numpy())


def test_a_forked_child_draws_in_groups_without_the_parents_helpers():
    """The parent's helper threads are not copied by a fork: a child makes its own (or runs on one) and finishes."""
    with policy(2):
        want = _rng_kernels.unit_normal(KEYS, [5], (3, 10, 4)).numpy()  # the parent's helpers now exist
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_draw_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(got, want)
