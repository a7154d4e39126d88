"""What a config may import and how it says so: a config is code (its ``imports:``, ``env: module:EnvId`` and
``agent: module:ClassName`` run those modules), so every module is named by dotted identifiers and announced on
stderr before any is imported; a file that is not YAML text, a count that is not an integer and a wrapper list
that :func:`bandit_gym.feedback.apply_wrappers` refuses are each one line."""

from __future__ import annotations

import re
import sys

import gymnasium as gym
import pytest

import bandit_gym  # noqa: F401  (registers the ids)
from bandit_experiments import cli
from bandit_experiments.config import ConfigError, load_config
from bandit_gym.feedback import apply_wrappers

#: A module that says when it runs (on stderr, as the announcement is) and registers an env.
SENTINEL = '''
import sys

import gymnasium as gym

print("{name} ran", file=sys.stderr, flush=True)
base = gym.registry["LinearBandit-v0"]
if "H37Env-v0" not in gym.registry:
    gym.register("H37Env-v0", entry_point=base.entry_point, vector_entry_point=base.vector_entry_point,
                 kwargs={{**base.kwargs, "n_arms": 5, "dim": 3}})
'''
AGENTS = '''
import sys

from agents import LinUCB

print("{name} ran", file=sys.stderr, flush=True)


class MyUCB(LinUCB):
    """LinUCB under another name."""
'''
TAIL = "horizon: 5\nseeds: 1\n"


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Modules ``h37_envs``, ``h37_pkg.sub`` (both :data:`SENTINEL`) and ``h37_agents`` in ``tmp_path/modules`` on
    ``sys.path``, not yet imported (and forgotten again after the test)."""
    folder = tmp_path / "modules"
    (folder / "h37_pkg").mkdir(parents=True)
    (folder / "h37_envs.py").write_text(SENTINEL.format(name="h37_envs"))
    (folder / "h37_pkg" / "__init__.py").write_text("")
    (folder / "h37_pkg" / "sub.py").write_text(SENTINEL.format(name="h37_pkg.sub"))
    (folder / "h37_agents.py").write_text(AGENTS.format(name="h37_agents"))
    monkeypatch.syspath_prepend(str(folder))
    for name in ("h37_envs", "h37_pkg", "h37_pkg.sub", "h37_agents"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield folder
    for name in ("h37_envs", "h37_pkg", "h37_pkg.sub", "h37_agents"):
        sys.modules.pop(name, None)


def test_load_config_announces_every_module_once_before_importing_any(modules, write_config, capsys):
    path = write_config("imports: [h37_envs, h37_pkg.sub, h37_envs]\nenv: 'h37_pkg.sub:H37Env-v0'\n" + TAIL
                        + "agents:\n  A: {agent: 'h37_agents:MyUCB'}\n  B: {agent: 'h37_agents:MyUCB'}\n", "c.yaml")
    load_config(path, check_agents=False)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"config {path} imports (runs) modules: h37_envs, h37_pkg.sub, h37_agents",
                     "h37_envs ran", "h37_pkg.sub ran", "h37_agents ran"]


def test_load_config_announces_nothing_for_the_librarys_own_names(write_config, capsys):
    load_config(write_config("env: LinearBandit-v0\n" + TAIL + "agents: {LinUCB: {}}\n", "c.yaml"),
                check_agents=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("body", "message"), [
    ("imports: [h37_envs, ../../x]\nenv: LinearBandit-v0\n" + TAIL + "agents: {LinUCB: {}}\n",
     r"c.yaml:1: imports.1: '../../x' is not a module name \(accepted: dotted identifiers, such as 'my_pkg.envs'; "
     r"not a relative name or a file path\)$"),
    ("imports: [h37_envs, .relative]\nenv: LinearBandit-v0\n" + TAIL + "agents: {LinUCB: {}}\n",
     r"c.yaml:1: imports.1: '.relative' is not a module name"),
    ("imports: [h37_envs]\nenv: '../envs:H37Env-v0'\n" + TAIL + "agents: {LinUCB: {}}\n",
     r"c.yaml:2: env: env '../envs:H37Env-v0': the module '../envs' is not a module name \(accepted: dotted "
     r"identifiers, such as 'my_pkg.envs:MyBandit-v0'"),
    ("imports: [h37_envs]\nenv: LinearBandit-v0\n" + TAIL + "agents:\n  Mine: {agent: '.h37_agents:MyUCB'}\n",
     r"c.yaml:6: agents.Mine.agent: agent '.h37_agents:MyUCB': the module '.h37_agents' is not a module name"),
    ("imports: [h37_envs]\nenv: LinearBandit-v0\n" + TAIL + "agents:\n  Mine: {agent: 'h37 agents:MyUCB'}\n",
     r"c.yaml:6: agents.Mine.agent: agent 'h37 agents:MyUCB': the module 'h37 agents' is not a module name"),
])
def test_load_config_refuses_a_module_that_is_not_a_dotted_name_before_importing_any(modules, write_config, capsys,
                                                                                   body, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(body, "c.yaml"), check_agents=False)
    assert "h37_envs" not in sys.modules  # listed first, but nothing is imported before every name is checked
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("wrappers", [
    "[DelayedFeedback, Drift]",  # Drift wraps the bandit env itself: first or nowhere
    "[{BatchedFeedback: {batch_size: 2}}, {Drift: {every: 5}}]",
    "[OneStepEpisodes]",  # a wrapper of bandit_gym, but not a feedback setting
    "[{BatchedFeedback: {size: 2}}]",
    "[{DelayedFeedback: 3}]",
    "[[DelayedFeedback]]",
    "[Drift, DelayedFeedback]",
    "[{Drift: {every: 5}}, {DelayedFeedback: {delay: 2}}]",
    "[{DelayedFeedback: null}]",
])
def test_load_config_refuses_exactly_the_wrappers_that_apply_wrappers_refuses(write_config, wrappers):
    import yaml

    try:
        apply_wrappers(gym.make("LinearBandit-v0"), yaml.safe_load(wrappers))
        refused = None
    except ValueError as exc:
        refused = str(exc)
    path = write_config(f"env: LinearBandit-v0\n{TAIL}wrappers: {wrappers}\nagents: {{LinUCB: {{}}}}\n", "c.yaml")
    if refused is None:
        assert load_config(path, check_agents=False).wrappers
        return
    index, reason = re.fullmatch(r"wrappers\[(\d+)\]: (.*)", refused).groups()
    with pytest.raises(ConfigError) as caught:
        load_config(path, check_agents=False)
    assert str(caught.value) == f"{path}:4: wrappers.{index}: {reason}"


def test_load_config_names_a_binary_file_in_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"env: LinearBandit-v0\n\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(ConfigError, match=r"^\S*c.yaml:2: not a YAML text file: the byte 0x89 at offset 21 is not "
                                          r"UTF-8 \(a config is YAML text, UTF-8 encoded\)$"):
        load_config(path)
    path.write_bytes(b"env: LinearBandit-v0\nhorizon: 5\x00\n")  # UTF-8, but a control character
    with pytest.raises(ConfigError, match=r"^\S*c.yaml:2: not a YAML text file: the character #x0000 is not "
                                          r"accepted \(a config is YAML text: printable characters"):
        load_config(path)


@pytest.mark.parametrize(("line", "message"), [
    ("seeds: 1e8", r"c.yaml:3: seeds: must be an integer >= 1, got 100000000.0 \(a number with a point or an "
                   r"exponent is a float; write the integer's digits: 100000000\)$"),
    ("seeds: 1.5", r"c.yaml:3: seeds: must be an integer >= 1, got 1.5$"),
    ("seeds: 0.0", r"c.yaml:3: seeds: must be an integer >= 1, got 0.0$"),
])
def test_load_config_says_a_float_count_is_not_an_integer(write_config, line, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(f"env: LinearBandit-v0\nhorizon: 5\n{line}\nagents: {{LinUCB: {{}}}}\n", "c.yaml"))


def test_load_config_blames_a_batch_too_large_for_the_memory_on_the_seeds(write_config):
    """10^8 replicas of LinearBandit-v0 (50 arms x dim 20) need about 9 TB: refused before allocating."""
    path = write_config("env: LinearBandit-v0\nhorizon: 5\nseeds: 100000000\nagents: {LinUCB: {}}\n", "c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml:3: seeds: LinearBandit-v0 cannot be made for 100,000,000 "
                                          r"replicas \(100,000,000 seeds x 1 grid points of LinUCB\): .*GiB of memory"):
        load_config(path)
    small = write_config("env: LinearBandit-v0\nhorizon: 5\nseeds: 2\nagents: {LinUCB: {}}\n", "small.yaml")
    with pytest.raises(ConfigError, match=r"^argument --seeds: LinearBandit-v0 cannot be made for 100,000,000"):
        load_config(small, seeds=100_000_000)


@pytest.mark.parametrize(("content", "message"), [
    (b"\xff\xfe binary", "c.yaml:1: not a YAML text file: the byte 0xff at offset 0 is not UTF-8"),
    (b"imports: [../../x]\nenv: LinearBandit-v0\nhorizon: 5\nseeds: 1\nagents: {LinUCB: {}}\n",
     "c.yaml:1: imports.0: '../../x' is not a module name"),
    (b"env: LinearBandit-v0\nhorizon: 5\nseeds: 100000000\nagents: {LinUCB: {}}\n",
     "c.yaml:3: seeds: LinearBandit-v0 cannot be made for 100,000,000 replicas"),
])
def test_bandit_gym_run_reports_a_config_error_in_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"bandit-gym run: error: {tmp_path}/{message}")
    assert not (tmp_path / "out").exists()
