"""configs/samplers_*.yaml (issue 22): every one parses, names only known agents and hyperparameters, and gives
every sampler and LMC-TS the same budget of gradient evaluations per round and a grid of the same size.

Structure only (``load_config(..., check_agents=False)``: names, keys, grids; no agent is built, no data read):
fast. tests/bandit_experiments/test_config.py builds every shipped config's agents as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bandit_experiments.config import load_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("samplers_*.yaml"))
AGENTS = {"LMCTS", "FGLMCTS", "MALATS", "HMCTS", "ULMCTS", "EnsembleSampling", "VITS"}
# Figure 1 (a)-(d) and the three UCI sets of Figure 2, as the issue lists them.
ENVS = {"LinearBanditFixed-v0", "LinearBandit-v0", "LogisticBandit-v0", "QuadraticBandit-v0", "Shuttle-v0",
        "MagicTelescope-v0", "Mushroom-v0"}


def gradients_per_round(agent: str, fixed: dict) -> int | None:
    """Gradient evaluations per round and replica (None: ensemble sampling's exact linear solve, no gradients)."""
    if agent == "EnsembleSampling":
        return None if fixed.get("model", "linear") == "linear" else fixed["n_members"] * fixed["n_inner_steps"]
    if agent == "HMCTS":
        return fixed["n_inner_steps"] * fixed["n_leapfrog"]
    if agent == "VITS":  # an antithetic pair of gradients per step
        return 2 * fixed["n_inner_steps"]
    return fixed["n_inner_steps"]


def test_the_configs_cover_the_papers_problems():
    assert {load_config(path, check_agents=False).env for path in CONFIGS} == ENVS


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_a_samplers_config_compares_every_sampler_at_one_budget(path):
    config = load_config(path, check_agents=False)  # raises on an unknown agent or hyperparameter name
    assert config.seeds == 10
    assert {spec.agent for spec in config.agents} == AGENTS
    assert len({len(spec.points()) for spec in config.agents}) == 1  # the same grid size for every agent
    assert all(len(spec.points()) > 1 for spec in config.agents)
    budgets = {gradients_per_round(spec.agent, spec.fixed) for spec in config.agents} - {None}
    assert len(budgets) == 1, budgets
    models = {str(spec.fixed.get("model")) for spec in config.agents}
    assert len(models) == 1, models  # the same reward model for every agent
    batches = {spec.fixed.get("batch_size") for spec in config.agents if "batch_size" in spec.fixed}
    assert batches <= {None}  # no agent gets mini-batches where MALA and HMC (full history) cannot
