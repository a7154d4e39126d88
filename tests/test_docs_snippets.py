"""Every ```python block of README.md and docs/*.md runs as pasted, in order.

A page runs the way it says it runs. By default its blocks run one after the other in one
namespace (as a reader pastes them into one Python session), in a temporary working directory.
A page with the line ``<!-- snippets: script -->`` says that its blocks, pasted in order into
one file, make one script: they are written to one ``.py`` file and run with ``python FILE`` in
a new process, so that what differs in a script happens as for a user (``__file__``, and the
workers of ``multiprocessing``'s ``"spawn"`` start method importing the script again).

A block opts out with an HTML comment on the line just before its fence (blank lines between
are allowed):

    <!-- snippet: skip (why) -->        never run (a fragment, or it needs a GPU or the internet)
    <!-- snippet: needs-data -->        run only where the shared OpenML cache is found (see the
                                         README's "Tests" section); OPENML_CACHE_DIR points at it
    <!-- snippet: own-script -->        (script pages) a complete script of its own: left out of
                                         the page's script and run on its own, as a file

A block runs only after every earlier block of its file ran (or opted out with ``skip``):
after a failure, a skip for missing data or a deselection, the later blocks of the file skip;
a script page without the data cache runs the blocks before its first ``needs-data`` block.
Blocks known to fail are listed in KNOWN_FAILING with the reason; they are strict xfails, so
one that starts to pass must be taken off the list. Files whose blocks take long are listed
in SLOW_FILES: all their blocks run only with ``-m slow``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHARED_CACHE_ENV_VAR = "BANDIT_GYM_TEST_OPENML_CACHE"  # as in tests/datasets/conftest.py

_FENCE = re.compile(r"^```python\s*$")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(skip|needs-data|own-script)\b.*-->\s*$")
_SCRIPT_PAGE = re.compile(r"^<!--\s*snippets:\s*script\s*-->\s*$", flags=re.M)
SCRIPT_TIMEOUT_S = 1200  # a script page's run; docs/integration.md's takes 1-3 minutes on a busy 2-core CPU

#: (file, the block's first line of code) -> why it fails today. Strict: a block that runs must leave the list.
KNOWN_FAILING: dict[tuple[str, str], str] = {}


#: file -> why its blocks are too slow for the default suite (they get the ``slow`` mark).
SLOW_FILES: dict[str, str] = {
    "docs/integration.md": "trains Stable-Baselines3 PPO (1-3 minutes on a busy 2-core CPU)",
}


@dataclass(frozen=True)
class Snippet:
    path: Path
    index: int  # position among the file's blocks, from 0
    line: int  # first line of the code, 1-based
    code: str
    marker: str | None  # "skip", "needs-data", "own-script" or None

    @property
    def name(self) -> str:
        page = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path.name
        return f"{page}:{self.line}"


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


def runs_as_script(path: Path) -> bool:
    """Whether the page says that its blocks, pasted in order into one file, make one script."""
    return _SCRIPT_PAGE.search(path.read_text()) is not None


def script_of(blocks: list[Snippet]) -> str:
    """The blocks pasted in order into one file, each after a comment naming where it comes from."""
    return "".join(f"# {block.name}\n{block.code}\n" for block in blocks)


def run_script(code: str, file: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python FILE`` on ``code`` saved as ``file``, in ``file``'s folder, as a reader runs a script."""
    file.write_text(code)
    return subprocess.run([sys.executable, file.name], cwd=file.parent, capture_output=True, text=True,
                          timeout=SCRIPT_TIMEOUT_S, env={**os.environ, **(env or {})})


def _check_ran(result: subprocess.CompletedProcess, what: str) -> None:
    assert result.returncode == 0, (f"{what} failed (exit {result.returncode}):\n{result.stdout[-3000:]}\n"
                                    f"{result.stderr[-6000:]}")


_ALL = [snippet for path in DOCS for snippet in snippets(path)]
_SESSION = [snippet for snippet in _ALL if not runs_as_script(snippet.path)]
_SCRIPT_PAGES = [path for path in DOCS if runs_as_script(path)]
_NAMESPACES: dict[Path, dict] = {}
_DONE: dict[Path, int] = {}  # file -> number of its blocks that ran (or opted out), in order


def _marks(path: Path) -> list:
    return [pytest.mark.slow] if str(path.relative_to(REPO)) in SLOW_FILES else []


def _params() -> list:
    return [pytest.param(snippet, id=snippet.name, marks=_marks(snippet.path)) for snippet in _SESSION]


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


@pytest.mark.parametrize("page", [pytest.param(path, id=str(path.relative_to(REPO)), marks=_marks(path))
                                  for path in _SCRIPT_PAGES])
def test_script_page_runs_as_one_pasted_script(page: Path, tmp_path: Path):
    """A script page's blocks in order in one file, run with ``python``; then each ``own-script`` block alone."""
    blocks = [block for block in snippets(page) if block.marker != "skip"]
    assert not [block.name for block in blocks if (str(page.relative_to(REPO)), block.code.splitlines()[0])
                in KNOWN_FAILING], "a script page runs whole: fix the block instead of listing it in KNOWN_FAILING"
    cache = _shared_cache()
    env = {"OPENML_CACHE_DIR": str(cache)} if cache is not None else {}
    first_needing_data = next((i for i, block in enumerate(blocks) if block.marker == "needs-data"), len(blocks))
    runnable = blocks if cache is not None else blocks[:first_needing_data]
    for block in [block for block in runnable if block.marker == "own-script"]:
        _check_ran(run_script(block.code, tmp_path / f"own_script_{block.line}.py", env), block.name)
    script = [block for block in runnable if block.marker != "own-script"]
    _check_ran(run_script(script_of(script), tmp_path / f"{page.stem}.py", env), f"{page.name} as one script")
    if len(runnable) < len(blocks):
        pytest.skip(f"ran {len(runnable)} of {len(blocks)} blocks: the others need the shared OpenML cache "
                    f"(set {SHARED_CACHE_ENV_VAR})")


def test_the_harness_finds_the_blocks_and_their_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\n<!-- snippet: skip (a fragment) -->\n\n```python\ny\n```\n"
                    "<!-- snippet: needs-data -->\n```python\nz = 2\n```\n```bash\nls\n```\n"
                    "<!-- snippet: own-script -->\n```python\nw = 3\n```\n")
    found = snippets(page)
    assert [s.index for s in found] == [0, 1, 2, 3]
    assert [(s.line, s.code, s.marker) for s in found] == [
        (4, "x = 1\n", None), (10, "y\n", "skip"), (14, "z = 2\n", "needs-data"), (21, "w = 3\n", "own-script")]
    assert not runs_as_script(page)
    page.write_text("# t\n\n<!-- snippets: script -->\n\n```python\nx = 1\n```\n")
    assert runs_as_script(page)
    assert sum(len(snippets(path)) for path in DOCS) == len(_ALL) > 0


def test_the_harness_runs_a_script_page_as_a_user_runs_a_script(tmp_path):
    """The blocks run as one file in a new process: a ``"spawn"`` worker imports that file again (as
    ``__mp_main__``) and runs its top level, as it does for a user's script."""
    page = tmp_path / "page.md"
    page.write_text("<!-- snippets: script -->\n\n```python\nimport multiprocessing\n\n"
                    "print('top level:', __name__, flush=True)\n```\n\n```python\nif __name__ == '__main__':\n"
                    "    worker = multiprocessing.get_context('spawn').Process(target=int)\n"
                    "    worker.start()\n    worker.join()\n```\n")
    result = run_script(script_of(snippets(page)), tmp_path / "page.py")
    _check_ran(result, "the toy page")
    assert result.stdout.splitlines() == ["top level: __main__", "top level: __mp_main__"]
    assert f"# {snippets(page)[1].name}\n" in (tmp_path / "page.py").read_text()


def test_the_lists_of_exceptions_name_existing_blocks():
    blocks = {(str(snippet.path.relative_to(REPO)), snippet.code.splitlines()[0]) for snippet in _ALL}
    assert set(KNOWN_FAILING) <= blocks
    assert set(SLOW_FILES) <= {str(path.relative_to(REPO)) for path in DOCS}
