"""Every ```python block of README.md and docs/*.md runs as pasted, in order.

Each file's blocks run one after the other in one namespace (as a reader pastes them into
one session), in a temporary working directory. A block opts out with an HTML comment on
the line just before its fence (blank lines between are allowed):

    <!-- snippet: skip (why) -->        never run (a fragment, or it needs a GPU or the internet)
    <!-- snippet: needs-data -->        run only where the shared OpenML cache is found (see the
                                         README's "Tests" section); OPENML_CACHE_DIR points at it

A block runs only after every earlier block of its file ran (or opted out with ``skip``):
after a failure, a skip for missing data or a deselection, the later blocks of the file skip.
Blocks known to fail are listed in KNOWN_FAILING with the reason; they are strict xfails, so
one that starts to pass must be taken off the list. Files whose blocks take long are listed
in SLOW_FILES: all their blocks run only with ``-m slow``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"  # as in tests/datasets/conftest.py

_FENCE = re.compile(r"^```python\s*$")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(skip|needs-data)\b.*-->\s*$")

#: (file, the block's first line of code) -> why it fails today. Strict: a block that runs must leave the list.
KNOWN_FAILING: dict[tuple[str, str], str] = {}


#: file -> why its blocks are too slow for the default suite (they get the ``slow`` mark).
SLOW_FILES: dict[str, str] = {
    "docs/integration.md": "trains Stable-Baselines3 PPO (1-2 minutes on a busy 2-core CPU)",
}


@dataclass(frozen=True)
class Snippet:
    path: Path
    index: int  # position among the file's blocks, from 0
    line: int  # first line of the code, 1-based
    code: str
    marker: str | None  # "skip", "needs-data" or None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def snippets(path: Path) -> list[Snippet]:
    """The ```python blocks of a Markdown file, with the opt-out marker before each, if any."""
    lines = path.read_text().splitlines()
    found, index = [], 0
    while index < len(lines):
        if not _FENCE.match(lines[index]):
            index += 1
            continue
        before = index - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = _MARKER.match(lines[before]) if before >= 0 else None
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        found.append(Snippet(path, len(found), index + 2, "\n".join(lines[index + 1:end]) + "\n",
                             marker.group(1) if marker else None))
        index = end + 1
    return found


def _shared_cache() -> Path | None:
    """``$BANDIT_GYM_TEST_OPENML_CACHE``, else ``<clone>/../shared/datasets/openml_cache``, if it holds data."""
    source = Path(os.environ.get(SHARED_CACHE_ENV_VAR) or REPO.parent / "shared" / "datasets" / "openml_cache")
    return source if (source / "org" / "openml" / "www" / "datasets").is_dir() else None


_ALL = [snippet for path in DOCS for snippet in snippets(path)]
_NAMESPACES: dict[Path, dict] = {}
_DONE: dict[Path, int] = {}  # file -> number of its blocks that ran (or opted out), in order


def _params() -> list:
    params = []
    for snippet in _ALL:
        slow = str(snippet.path.relative_to(REPO)) in SLOW_FILES
        params.append(pytest.param(snippet, id=snippet.name, marks=[pytest.mark.slow] if slow else []))
    return params


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("snippets")


@pytest.mark.parametrize("snippet", _params())
def test_snippet_runs_as_pasted(snippet: Snippet, workdir: Path, monkeypatch: pytest.MonkeyPatch):
    if _DONE.get(snippet.path, 0) != snippet.index:
        pytest.skip("an earlier snippet of this file did not run")
    if snippet.marker == "skip":
        _DONE[snippet.path] = snippet.index + 1
        pytest.skip("marked <!-- snippet: skip -->")
    if snippet.marker == "needs-data":
        cache = _shared_cache()
        if cache is None:
            pytest.skip(f"needs the shared OpenML cache (set {SHARED_CACHE_ENV_VAR})")
        monkeypatch.setenv("OPENML_CACHE_DIR", str(cache))
    reason = KNOWN_FAILING.get((str(snippet.path.relative_to(REPO)), snippet.code.splitlines()[0]))
    monkeypatch.chdir(workdir)
    namespace = _NAMESPACES.setdefault(snippet.path, {"__name__": "__main__"})  # as in the reader's session
    try:
        exec(compile(snippet.code, snippet.name, "exec"), namespace)
    except Exception:
        if reason is not None:
            pytest.xfail(reason)
        raise
    _DONE[snippet.path] = snippet.index + 1
    if reason is not None:
        pytest.fail(f"{snippet.name} runs now: take it off KNOWN_FAILING ({reason})")


def test_the_harness_finds_the_blocks_and_their_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\n<!-- snippet: skip (a fragment) -->\n\n```python\ny\n```\n"
                    "<!-- snippet: needs-data -->\n```python\nz = 2\n```\n```bash\nls\n```\n")
    found = snippets(page)
    assert [s.index for s in found] == [0, 1, 2]
    assert [(s.line, s.code, s.marker) for s in found] == [(4, "x = 1\n", None), (10, "y\n", "skip"),
                                                            (14, "z = 2\n", "needs-data")]
    assert sum(len(snippets(path)) for path in DOCS) == len(_ALL) > 0


def test_the_lists_of_exceptions_name_existing_blocks():
    blocks = {(str(snippet.path.relative_to(REPO)), snippet.code.splitlines()[0]) for snippet in _ALL}
    assert set(KNOWN_FAILING) <= blocks
    assert set(SLOW_FILES) <= {str(path.relative_to(REPO)) for path in DOCS}
