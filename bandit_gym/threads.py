"""How many intra-op threads bandit-gym's own CPU loops use: the one threading policy (public API).

A bandit round is many small tensor operations. Some of them enter torch's intra-op thread pool
(one thread per core by default) at any size, and with another process busy on a core they wait
for it: on a 2-core CPU with one core busy, LinUCB on Shuttle-v0 at 10 replicas took 18 ms a
round with torch's default threads and 0.63 ms with one (``benchmarks/results/threads.md``). So
the library's own loops run on one thread unless told otherwise:

- the agents' ``learn``, ``predict`` and ``update``, the envs' ``reset`` and ``step`` (single and
  native vector envs) and the experiment runner's rounds run under :class:`policy`;
- inside, torch uses ``threads`` intra-op threads, chosen by (first that is given) the ``threads=``
  argument (``agent.learn(..., threads=4)``, ``with policy(4):``), the environment variable
  ``BANDIT_GYM_THREADS``, or the round's work: :data:`DEFAULT_THREADS` (1: fastest for small per-round ops,
  idle or busy) below :data:`LARGE_WORK` floats of arithmetic a round (``policy(work=...)``; an agent's
  ``learn`` gives its ``round_work()``), torch's own setting from there on; ``"torch"`` (argument or variable)
  leaves torch's own setting alone;
- on leaving, exception or not, ``torch.get_num_threads()`` is what it was before: the library
  never changes the user's setting for good;
- in a process forked from one that had started torch's threads (an ``AsyncVectorEnv`` worker started
  with ``fork``, Linux's default), a multi-threaded torch operation hangs for ever, whatever its size:
  there the policy runs one thread whatever is chosen (``"torch"`` included), so such workers work.

Replica groups: where a round's work is large (:data:`GROUP_WORK` and up, with nothing else chosen), the library's
own per-replica loops (the synthetic envs' arm-feature draws; the linear agents' compiled updates) run groups of
replicas on every thread of torch's own setting at once (:func:`for_each`; :func:`group_threads` says how many),
while torch's operations stay on one thread. A replica's numbers are the same on any thread, so the results do not
depend on the threads; ``threads=1`` runs everything on the calling thread.

A choice holds for the library calls made inside it: in ``with policy(4): agent.learn()`` and
``agent.learn(threads=4)``, ``env.step`` also uses 4 threads. A loop is entered once, not once per round: ``learn``
and the experiment runner's ``play_rounds`` enter the policy around their whole loop, and the round loop
(:class:`agents.loop.rounds.Rounds`) enters one per round only where no enclosing policy already holds its choice
(:func:`holds`: a bare ``for r in agent.rounds(env)`` loop, whose own code between rounds keeps the user's setting).
The choice is process-wide, as torch's setting is. Cost: ``torch.set_num_threads`` is called only when
the number differs, and a call nested in another reads nothing; an outermost call (a user's own ``env.step`` loop)
costs about 1-2 us, mostly
reading the variable (2-core CPU shared with other processes; ``benchmarks/results/threads.md``).

Examples:
    >>> import torch
    >>> from bandit_gym.threads import policy
    >>> before = torch.get_num_threads()
    >>> with policy(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import torch

__all__ = ["DEFAULT_THREADS", "ENV_VAR", "GROUP_WORK", "LARGE_WORK", "TORCH", "by_replicas", "for_each",
           "group_threads", "holds", "policy", "resolve"]

#: The environment variable that sets the library's threads: a positive integer, or ``torch``.
ENV_VAR = "BANDIT_GYM_THREADS"
#: Threads of the library's loops when nothing is chosen: one, what is fastest for per-round ops of
#: bandit sizes (up to R x K x d of about 10^5 elements) whether the other cores are idle or busy.
DEFAULT_THREADS = 1
#: Floats of arithmetic in a round (``policy(work=...)``) from which the library's loops, when nothing else is
#: chosen, use torch's own threads: where a round's products are large enough that more threads pay for entering
#: torch's pool. ``benchmarks/threads.py --work`` (LinUCB, LinTS, LMC-TS on LinearBandit-v0, K = 50, d = 20) on an
#: idle 2-core CPU found 2 threads at 0.80x to 1.13x of one thread's speed at every size it ran, R = 1 to 3,000
#: (round work 1,400 to 4.2 million floats), 5-15% slower from R = 1,000 (``benchmarks/results/threads.md``), so
#: the threshold sits above them all.
LARGE_WORK = 10_000_000
#: Floats of arithmetic in a round (``policy(work=...)``) from which, with nothing chosen, the library's replica
#: groups (:func:`group_threads`: the synthetic envs' arm-feature draws, :func:`for_each`) run on every
#: thread of torch's own setting while torch's operations stay on one. ``benchmarks/single_seed.py`` on LinearBandit-v0
#: (K = 50, d = 20, a round's work ``1,400 R``): the draws of R = 100 and 1,000 replicas in groups on 2 threads made
#: LinUCB's round 1.3x faster on an idle 2-core CPU; at R = 10 (14,000) the draws are one group.
GROUP_WORK = 100_000
#: The choice that leaves torch's own setting (``torch.set_num_threads``, ``OMP_NUM_THREADS``) alone.
TORCH = "torch"

_chosen: int | str | None = None  # the choice of the innermost policy being run (None outside any)
_groups = 1  # threads of the replica groups under the innermost policy (group_threads; 1 outside any)
_parsed_env: tuple[str | None, int | str | None] = (None, None)  # (the variable's text, its value): parsed once

F = TypeVar("F", bound=Callable[..., Any])


def _check(name: str, value: Any) -> int | str:
    if value == TORCH and isinstance(value, str):
        return TORCH
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer (torch intra-op threads) or {TORCH!r} "
                         f"(leave torch's setting), got {value!r}")
    return value


def _from_env() -> int | str | None:
    global _parsed_env
    text = os.environ.get(ENV_VAR)
    if text != _parsed_env[0]:
        value = None
        if text is not None and text.strip():
            stripped = text.strip()
            value = _check(ENV_VAR, int(stripped) if stripped.lstrip("-").isdigit() else stripped)
        _parsed_env = (text, value)
    return _parsed_env[1]


def resolve(threads: int | str | None = None, work: int | None = None) -> int | None:
    """The intra-op threads the library's loops use: ``threads``, else the enclosing :class:`policy`'s choice,
    else ``$BANDIT_GYM_THREADS``, else by ``work`` (floats of a round's arithmetic): :data:`DEFAULT_THREADS` below
    :data:`LARGE_WORK` (or with no ``work``), torch's own setting from there; None for ``"torch"``.

    Raises:
        ValueError: ``threads`` or the variable is not a positive integer or ``"torch"``.
    """
    choice = _choice(None if threads is None else _check("threads", threads), work)
    return None if choice == TORCH else choice


def holds(threads: int | str | None = None) -> bool:
    """Whether an enclosing :class:`policy` already holds the choice that ``policy(threads)`` would make: inside a
    policy, ``threads`` None or the same choice. Entering ``policy(threads)`` there would change nothing (it neither
    reads the variable nor sets torch's threads), so a loop run inside one need not enter it per round.

    Raises:
        ValueError: ``threads`` is not a positive integer or ``"torch"``.
    """
    if _chosen is None:
        return False
    return threads is None or _choice(_check("threads", threads)) == _chosen


#: True in a process forked from one that had native threads running (PyTorch's OpenMP pool): there, a
#: multi-threaded torch op hangs for ever. Set in the parent just before a fork; the parent then clears it.
_forked_after_threads = False


def _note_threads_before_fork() -> None:
    global _forked_after_threads
    try:
        _forked_after_threads = len(os.listdir("/proc/self/task")) > threading.active_count()
    except OSError:  # no /proc: nothing known
        _forked_after_threads = False


def _clear_in_parent() -> None:
    global _forked_after_threads
    _forked_after_threads = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_note_threads_before_fork, after_in_parent=_clear_in_parent)


def _group_choice(threads: int | str | None, work: int | None = None) -> int:
    """Threads of the replica groups (:func:`group_threads`) under ``policy(threads, work)``: those of the choice
    when one is given (``threads``, the enclosing policy's, the variable's; torch's own setting for ``"torch"``),
    else every thread of torch's own setting from :data:`GROUP_WORK`, else 1; always 1 in a forked child."""
    if _forked_after_threads:
        return 1
    if threads is None and _chosen is not None:
        return _groups
    given = threads if threads is not None else _from_env()
    if given is None:
        return torch.get_num_threads() if work is not None and work >= GROUP_WORK else 1
    return torch.get_num_threads() if given == TORCH else given


def group_threads() -> int:
    """Threads the library's replica groups run on now (:func:`for_each`: the synthetic envs' arm-feature
    draws): the innermost policy's choice of them (:func:`_group_choice`), 1 outside any policy."""
    return _groups


def _choice(threads: int | str | None, work: int | None = None) -> int | str:
    """``threads`` (already checked), else the enclosing policy's choice, else the variable's, else by ``work``
    (:data:`DEFAULT_THREADS`, or torch's own setting from :data:`LARGE_WORK`); always 1 in a child forked from a
    threaded parent (torch's pool would hang there)."""
    if _forked_after_threads:
        return 1
    if threads is not None:
        return threads
    if _chosen is not None:  # inside a policy: no need to read the environment again
        return _chosen
    from_env = _from_env()
    if from_env is not None:
        return from_env
    return TORCH if work is not None and work >= LARGE_WORK else DEFAULT_THREADS


class policy:  # noqa: N801  (used like a function: ``with policy():``, ``@policy()``)
    """Run a block (``with policy(threads):``) or a function (``@policy()``) on the library's threads, then put
    torch's setting back. See the module docstring for how the number is chosen.

    Args:
        threads: A positive integer, ``"torch"`` (torch's own setting), or None (the enclosing choice,
            ``$BANDIT_GYM_THREADS`` or the choice by ``work``, read on entering).
        work: Floats of arithmetic in one round of the block (an agent's ``round_work()``), or None (small):
            with nothing else chosen, :data:`DEFAULT_THREADS` below :data:`LARGE_WORK`, torch's own setting from it.

    Raises:
        ValueError: ``threads`` or ``work`` is not one of these (at once, not on entering).
    """

    __slots__ = ("threads", "work", "_saved")

    def __init__(self, threads: int | str | None = None, work: int | None = None) -> None:
        self.threads = None if threads is None else _check("threads", threads)
        if work is not None and (isinstance(work, bool) or not isinstance(work, int) or work < 0):
            raise ValueError(f"work must be None or an integer >= 0 (floats of a round's arithmetic), got {work!r}")
        self.work = work
        self._saved: list[tuple[int, int | str | None]] = []

    def __enter__(self) -> policy:
        self._saved.append(_enter(self.threads, self.work))
        return self

    def __exit__(self, *exc: object) -> None:
        _exit(self._saved.pop())

    def __call__(self, function: F) -> F:
        """Decorate ``function`` so that every call runs under this policy."""
        threads, work = self.threads, self.work

        @functools.wraps(function)
        def under_policy(*args: Any, **kwargs: Any) -> Any:
            saved = _enter(threads, work)
            try:
                return function(*args, **kwargs)
            finally:
                _exit(saved)

        return under_policy  # type: ignore[return-value]


def _enter(threads: int | str | None, work: int | None = None) -> tuple[int, int | str | None, int]:
    """Apply the policy; return what :func:`_exit` needs to undo it: ``(threads to restore or 0, outer choice,
    outer group threads)``."""
    global _chosen, _groups
    choice, groups = _choice(threads, work), _group_choice(threads, work)
    outer, _chosen = _chosen, choice  # library calls made inside use the same choice
    outer_groups, _groups = _groups, groups
    restore = 0
    if choice != TORCH:
        current = torch.get_num_threads()
        if current != choice:
            torch.set_num_threads(choice)
            restore = current
    return restore, outer, outer_groups


def _exit(saved: tuple[int, int | str | None, int]) -> None:
    global _chosen, _groups
    restore, _chosen, _groups = saved
    if restore:
        torch.set_num_threads(restore)


# -- the replica groups: for_each ----------------------------------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()
_DONE = object()


def for_each(function: Callable[[Any], None], items: Iterable[Any]) -> None:
    """``function(item)`` for every item, on :func:`group_threads` threads (at most the CPUs; the calling thread one of
    them), each taking the next item when it is done with its last (so a thread slowed by a busy core takes fewer);
    returns when all are done and raises the first exception any raised.

    One thread runs every item in order on the calling thread, with no helper. While helpers run, torch's intra-op
    threads are 1 (put back after): each item's torch calls stay on the thread that makes them (torch's pool entered
    from two threads at once spins: 2.4x the CPU time, slower than one thread). Every item must compute the same
    numbers whichever thread runs it (independent replicas), so results do not depend on the threads. The helpers are
    made once and kept; a process forked from one that had them makes its own (a fork does not copy threads).
    """
    items = list(items)
    n = min(group_threads(), os.cpu_count() or 1, len(items))
    if n <= 1:
        for item in items:
            function(item)
        return
    pending = iter(items)
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                item = next(pending, _DONE)
            if item is _DONE:
                return
            function(item)

    torch_threads = torch.get_num_threads()
    if torch_threads != 1:
        torch.set_num_threads(1)  # each item's torch calls on the thread that makes them
    try:
        helpers = [_helpers(n - 1).submit(work) for _ in range(n - 1)]
        try:
            work()
        finally:
            for helper in helpers:
                helper.result()
    finally:
        if torch_threads != 1:
            torch.set_num_threads(torch_threads)



#: Fewest floats a kernel call's arrays hold before :func:`by_replicas` splits its replicas into groups: below it a
#: call is shorter than handing it to another thread (a few tens of microseconds).
GROUP_FLOATS = 2**18
#: Groups per thread in :func:`by_replicas`: a thread slowed by a busy core takes fewer of them.
GROUPS_PER_THREAD = 4


def by_replicas(kernel: Callable[..., None], *arrays: Any) -> None:
    """``kernel(*arrays)``, a loop over the replicas (axis 0 of every numpy array, inputs and outputs; compiled, so
    that it runs without the GIL), run on groups of replicas on the replica-group threads (:func:`for_each`: one
    thread below :data:`GROUP_WORK`, or with ``threads=1``) where the arrays hold at least :data:`GROUP_FLOATS`
    floats. Each replica's numbers are computed by the same loop whatever its group."""
    n, R = group_threads(), arrays[0].shape[0]
    if n == 1 or R < 2 or sum(a.size for a in arrays) < GROUP_FLOATS:
        kernel(*arrays)
        return
    pieces = min(R, n * GROUPS_PER_THREAD)
    bounds = [R * i // pieces for i in range(pieces + 1)]
    for_each(lambda i: kernel(*(a[bounds[i]:bounds[i + 1]] for a in arrays)), range(pieces))


def _helpers(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < n:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(n, thread_name_prefix="bandit_gym"), n
        return _pool


def _forget_helpers() -> None:
    """In a forked child: the parent's helper threads do not exist here."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)
