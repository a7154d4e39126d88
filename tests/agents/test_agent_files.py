"""Agent files: ``load`` refuses a damaged file with one line naming the file and what is wrong (an empty or
foreign file, a missing key, sizes that are not integers or would not fit in memory, NaN state values), before
it builds an agent; ``save`` to a place that cannot be written names the path given, not its temporary file."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
import torch

from agents import LinUCB

SIZES = {"n_arms": 4, "dim": 3}


@pytest.fixture
def saved(tmp_path):
    """A LinUCB of 2 replicas after 3 rounds, saved; ``(path, payload)``."""
    agent = LinUCB(None, **SIZES, num_replicas=2, seed=0, device="cpu")
    contexts = torch.linspace(-1, 1, 3 * 2 * 4 * 3).reshape(3, 2, 4, 3)
    for x in contexts:
        agent.update(x, torch.tensor([0, 1]), torch.tensor([0.5, 1.0]))
    path = tmp_path / "agent.pt"
    agent.save(path)
    return path, torch.load(path, weights_only=True)


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("key", ["class", "hyperparameters", "sizes", "seed", "t", "state"])
def test_load_refuses_a_file_without_one_of_its_keys(saved, key):
    path, payload = saved
    torch.save({k: v for k, v in payload.items() if k != key}, path)
    with pytest.raises(ValueError, match=rf"agent\.pt is not a complete agent file: it lacks the key '{key}' ") as e:
        LinUCB.load(path)
    one_line(e)


def test_load_refuses_an_empty_file(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.pt is not an agent file written by save: torch\.load cannot "
                                         r"read it \(EOFError: the file ends early\)") as e:
        LinUCB.load(path)
    one_line(e)


def test_load_refuses_files_that_are_not_agent_files(tmp_path):
    numpy_file = tmp_path / "array.npy"
    np.save(numpy_file, np.zeros(3))
    with pytest.raises(ValueError, match=r"array\.npy is not an agent file written by save: torch\.load cannot read "
                                         r"it \(UnpicklingError: ") as e:
        LinUCB.load(numpy_file)
    one_line(e)
    a_list = tmp_path / "list.pt"
    torch.save([1, 2], a_list)
    with pytest.raises(ValueError, match=r"list\.pt is not an agent file written by save: it holds a list, not a dict"):
        LinUCB.load(a_list)


@pytest.mark.parametrize(("sizes", "message"), [
    ({"n_arms": 4, "dim": 0, "num_replicas": 2}, r"the saved size 'dim' must be an integer >= 1, got 0"),
    ({"n_arms": 4.5, "dim": 3, "num_replicas": 2}, r"the saved size 'n_arms' must be an integer >= 1, got 4\.5"),
    ({"n_arms": 4, "dim": 3}, r"the saved 'sizes' must be a dict with the keys n_arms, dim, num_replicas"),
])
def test_load_refuses_saved_sizes_that_are_not_sizes(saved, sizes, message):
    path, payload = saved
    torch.save({**payload, "sizes": sizes}, path)
    with pytest.raises(ValueError, match=message):
        LinUCB.load(path)


def test_load_refuses_a_huge_saved_dim_before_building_the_agent(saved):
    """``dim = 10**9`` asks for (2, 10**9, 10**9) statistics: refused by the estimate, before any allocation (built,
    the agent allocated until the system ended the process)."""
    path, payload = saved
    torch.save({**payload, "sizes": {**payload["sizes"], "dim": 10**9}}, path)
    with pytest.raises(MemoryError, match=r"agent\.pt: an agent of the saved sizes \(n_arms=4, dim=1000000000, "
                                          r"num_replicas=2; a damaged file\?\) needs about [0-9,.]+ GiB") as e:
        LinUCB.load(path)
    one_line(e)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_load_refuses_nan_or_inf_state_values(saved, bad):
    path, payload = saved
    state = {name: value.clone() for name, value in payload["state"].items()}
    state["gram_inverse"][1, 0, 2] = bad
    state["gram_inverse"][0, 1, 1] = bad
    torch.save({**payload, "state": state}, path)
    with pytest.raises(ValueError, match=r"agent\.pt: state tensor 'gram_inverse' has 2 NaN or Inf values "
                                         r"\(a damaged file, or an agent saved after its parameters diverged\)"):
        LinUCB.load(path)
    torch.save(payload, path)
    assert LinUCB.load(path).t == 4  # the undamaged file loads


def test_save_into_a_folder_path_names_the_path_and_leaves_no_temporary_file(saved, tmp_path):
    path, _ = saved
    agent = LinUCB.load(path)
    folder = tmp_path / "a folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        agent.save(folder)
    assert one_line(e) == (f"[Errno 21] cannot write {str(folder)!r}: the written file cannot replace it "
                           f"(Is a directory)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a folder", "agent.pt"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc takes no new files on Linux")
def test_save_where_no_file_can_be_made_names_the_path_given():
    agent = LinUCB(None, **SIZES, seed=0, device="cpu")
    with pytest.raises(OSError) as e:
        agent.save("/proc/x.pt")
    message = one_line(e)
    assert re.fullmatch(r"\[Errno \d+\] cannot write '/proc/x\.pt': its folder '/proc' takes no new file \(.+\)",
                        message), message
    assert ".tmp" not in message
