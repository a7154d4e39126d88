"""The documentation site: ``mkdocs build --strict`` passes, every agent has its page, and the README lists them.

The build needs the ``docs`` extra (``pip install -e ".[docs]"``) and skips without it; the README's list, the
agent pages' sections and their examples are checked without it (``docs/gen_agent_pages.py`` needs only the
packages).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 900  # about a minute on a busy 2-core CPU


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_agent_pages", REPO / "docs" / "gen_agent_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _load_generator()
AGENTS = list(GENERATOR.agent_classes())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built with ``mkdocs build --strict`` into a temporary directory."""
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "material"):
        pytest.importorskip(module, reason=f'{module} is not installed (the docs extra: pip install -e ".[docs]")')
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return out


def test_docs_site_has_one_page_per_agent(site):
    pages = {path.parent.name for path in (site / "agents").glob("*/index.html")}
    assert pages == set(AGENTS)
    for name in AGENTS:
        html = (site / "agents" / name / "index.html").read_text()
        assert f'id="agents.{name}"' in html, f"agents/{name}: the API reference of agents.{name} was not rendered"
        for section in ("When to use it", "Example", "Parameters", "Results", "API reference"):
            assert f">{section}<" in html, f"agents/{name}: no section {section!r}"


def test_docs_site_api_reference_renders_every_export(site):
    import agents
    import bandit_gym

    for package, page in ((bandit_gym, "api/bandit_gym"), (agents, "api/agents")):
        html = (site / page / "index.html").read_text()
        for name in package.__all__:
            if (package is agents and name in AGENTS) or name.startswith("_"):
                continue  # on its own page; or private (``__version__``), which the reference leaves out
            assert f'id="{package.__name__}.{name}"' in html, f"{page}: {package.__name__}.{name} is not rendered"


def test_docs_site_publishes_every_benchmark_record(site):
    records = sorted(path.stem for path in (REPO / "benchmarks" / "results").glob("*.md"))
    assert records and sorted(path.parent.name for path in (site / "results").glob("*/index.html")) == records


def test_readme_lists_every_agent():
    text = (REPO / "README.md").read_text()
    missing = [name for name in AGENTS if f"- `{name}`:" not in text]
    assert not missing, f"README.md does not list {missing}: run python docs/gen_agent_pages.py --readme"
    assert GENERATOR.readme_with_list(text) == text, "README.md's agent list is out of date: run " \
        "python docs/gen_agent_pages.py --readme"


@pytest.mark.parametrize("name", AGENTS)
def test_agent_docstring_says_when_to_use_it(name):
    when = GENERATOR.docstring_section(GENERATOR.agent_classes()[name], GENERATOR.WHEN_TO_USE)
    assert when, f"agents.{name}'s docstring has no {GENERATOR.WHEN_TO_USE!r} section (its page needs one)"


@pytest.mark.parametrize("name", AGENTS)
def test_agent_page_lists_every_hyperparameter(name):
    from bandit_experiments.catalog import resolved_defaults

    page = GENERATOR.agent_page(name, GENERATOR.agent_classes()[name])
    table = page.split("## Parameters", 1)[1].split("## Results", 1)[0]
    for key, value in resolved_defaults(GENERATOR.agent_classes()[name]).items():
        assert f"| `{key}` | `{value!r}`" in table, f"agents/{name}: {key}={value!r} is not in the table"


@pytest.mark.slow  # 100 rounds of every agent, single and batched: 1-70 s each on a busy 2-core CPU
@pytest.mark.parametrize("name", AGENTS)
def test_agent_page_example_runs(name):
    code = GENERATOR.example(name, GENERATOR.agent_classes()[name])
    namespace: dict = {}
    exec(compile(code, f"<agents/{name}.md example>", "exec"), namespace)
    assert namespace["agent"].history["regret"].shape == (100,)
    assert namespace["batch"].history["regret"].shape == (100, 4)
