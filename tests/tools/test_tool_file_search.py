"""list_files and search_files over real folder trees."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from hermes.agent.tools import file_search
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.file_search import (
    LIST_FILES_TOOL,
    MAX_LISTED,
    SEARCH_FILES_TOOL,
    list_files,
    search_files,
)
from hermes.errors import ToolError


def _ctx(cwd: Path) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "README.md": "# Project\nhello world\n",
        "setup.py": "from setuptools import setup\nsetup()\n",
        "src/app.py": "def main():\n    print('hello')\n",
        "src/util/helpers.py": "HELLO = 1\n",
        "src/util/notes.md": "nothing here\n",
        "docs/guide.md": "Say hello to the guide.\n",
        ".git/config": "hello from git\n",
        "node_modules/lib/index.js": "hello from node\n",
        "src/__pycache__/app.cpython-311.pyc": "hello cache\n",
        ".venv/lib/site.py": "hello venv\n",
    }
    for rel, text in files.items():
        path = tmp_path / "proj" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "proj" / "logo.png").write_bytes(b"\x89PNG\x00hello")
    return tmp_path / "proj"


# --- list_files ------------------------------------------------------------------------


async def test_list_all_files_sorted_without_junk(tree: Path) -> None:
    result = await list_files({}, _ctx(tree))
    assert result.splitlines() == [
        f"7 files under {tree} matching '**/*':",
        "README.md",
        "docs/guide.md",
        "logo.png",
        "setup.py",
        "src/app.py",
        "src/util/helpers.py",
        "src/util/notes.md",
    ]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["setup.py", "src/app.py", "src/util/helpers.py"]),
        ("src/*.py", ["src/app.py"]),
        ("src/**/*.py", ["src/app.py", "src/util/helpers.py"]),
        ("**/*.md", ["README.md", "docs/guide.md", "src/util/notes.md"]),
        ("./docs/*", ["docs/guide.md"]),
        ("src/util/[hx]*", ["src/util/helpers.py"]),
        ("src/util/[!h]*", ["src/util/notes.md"]),
        ("?????.py", ["setup.py"]),
    ],
)
async def test_list_glob_patterns(tree: Path, pattern: str, expected: list[str]) -> None:
    result = await list_files({"pattern": pattern}, _ctx(tree))
    assert result.splitlines()[1:] == expected


async def test_list_with_path_argument(tree: Path) -> None:
    result = await list_files({"path": "src", "pattern": "*.py"}, _ctx(tree))
    assert result.splitlines()[1:] == ["app.py", "util/helpers.py"]


async def test_list_can_start_inside_a_skipped_folder(tree: Path) -> None:
    result = await list_files({"path": "node_modules"}, _ctx(tree))
    assert result.splitlines()[1:] == ["lib/index.js"]


async def test_list_no_match(tree: Path) -> None:
    assert await list_files({"pattern": "*.rs"}, _ctx(tree)) == f"No files under {tree} match '*.rs'."


async def test_list_is_capped(tmp_path: Path) -> None:
    for i in range(MAX_LISTED + 37):
        (tmp_path / f"f{i:04d}.txt").write_text("")
    lines = (await list_files({}, _ctx(tmp_path))).splitlines()
    assert lines[0].startswith(f"{MAX_LISTED + 37} files")
    assert len(lines) == MAX_LISTED + 2
    assert lines[1] == "f0000.txt"
    assert lines[-1] == "[… and 37 more; narrow the pattern or path to see them.]"


async def test_list_errors(tree: Path) -> None:
    with pytest.raises(ToolError, match="not found"):
        await list_files({"path": "missing"}, _ctx(tree))
    with pytest.raises(ToolError, match="is a file"):
        await list_files({"path": "setup.py"}, _ctx(tree))
    with pytest.raises(ToolError, match="must be a string"):
        await list_files({"pattern": ["*.py"]}, _ctx(tree))


# --- search_files ----------------------------------------------------------------------


async def test_search_finds_lines_and_skips_junk_and_binaries(tree: Path) -> None:
    result = await search_files({"pattern": "hello"}, _ctx(tree))
    assert result.splitlines() == [
        f"3 matches for /hello/ in {tree} (paths relative to {tree}):",
        "README.md:2: hello world",
        "docs/guide.md:1: Say hello to the guide.",
        "src/app.py:2: print('hello')",
    ]


async def test_search_regex_and_case(tree: Path) -> None:
    result = await search_files({"pattern": r"(?i)^hello\b"}, _ctx(tree))
    assert result.splitlines()[1:] == ["README.md:2: hello world", "src/util/helpers.py:1: HELLO = 1"]


async def test_search_glob_filter(tree: Path) -> None:
    result = await search_files({"pattern": "hello", "glob": "*.md"}, _ctx(tree))
    assert [line.split(":")[0] for line in result.splitlines()[1:]] == ["README.md", "docs/guide.md"]
    assert "files matching '*.md'" in result.splitlines()[0]


async def test_search_single_file(tree: Path) -> None:
    result = await search_files({"pattern": "print", "path": "src/app.py"}, _ctx(tree))
    assert result.splitlines()[1:] == ["app.py:2: print('hello')"]


async def test_search_limit_reports_truncation(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("match\n" * 30)
    result = await search_files({"pattern": "match", "limit": 5}, _ctx(tmp_path))
    lines = result.splitlines()
    assert len(lines) == 7
    assert lines[-1].startswith("[Stopped at limit=5; more matches exist.")


async def test_search_exact_limit_is_not_truncated(tmp_path: Path) -> None:
    (tmp_path / "few.txt").write_text("match\n" * 5)
    result = await search_files({"pattern": "match", "limit": 5}, _ctx(tmp_path))
    assert "Stopped" not in result


async def test_search_skips_huge_files(tmp_path: Path) -> None:
    (tmp_path / "huge.log").write_text("needle\n" + "x" * (2 * 1024 * 1024))
    (tmp_path / "small.log").write_text("needle\n")
    result = await search_files({"pattern": "needle"}, _ctx(tmp_path))
    assert result.splitlines()[1:] == ["small.log:1: needle"]


async def test_search_no_match(tree: Path) -> None:
    result = await search_files({"pattern": "zebra"}, _ctx(tree))
    assert result == f"No matches for /zebra/ in {tree}; 6 files searched."


async def test_search_errors(tree: Path) -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        await search_files({"pattern": "(unclosed"}, _ctx(tree))
    with pytest.raises(ToolError, match="missing required argument 'pattern'"):
        await search_files({}, _ctx(tree))
    with pytest.raises(ToolError, match="not found"):
        await search_files({"pattern": "x", "path": "nope"}, _ctx(tree))
    with pytest.raises(ToolError, match="at least 1"):
        await search_files({"pattern": "x", "limit": 0}, _ctx(tree))


async def test_search_leaves_the_event_loop_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for d in range(4):
        folder = tmp_path / f"d{d}"
        folder.mkdir()
        for f in range(10):
            (folder / f"f{f}.txt").write_text("no match on this line\n" * 40)
    # The scan reads its first file only once the event loop has opened the gate. A scan run on
    # the loop's own thread would block the loop in the wait and fail it; one in a worker thread
    # lets the loop go on and open the gate.
    gate = threading.Event()
    readers: set[int] = set()
    read_text = file_search._text_of

    def gated(path: Path) -> str | None:
        readers.add(threading.get_ident())
        if not gate.wait(30):
            raise AssertionError("the event loop never ran while the scan was reading")
        return read_text(path)

    monkeypatch.setattr(file_search, "_text_of", gated)
    search = asyncio.create_task(search_files({"pattern": "needle"}, _ctx(tmp_path)))
    async def scan_reached_the_gate() -> None:
        while not readers:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(scan_reached_the_gate(), 30)
    gate.set()
    result = await asyncio.wait_for(search, 60)
    assert "40 files searched" in result
    assert threading.get_ident() not in readers


def test_search_tool_metadata() -> None:
    assert LIST_FILES_TOOL.read_only and SEARCH_FILES_TOOL.read_only
    assert SEARCH_FILES_TOOL.parameters["required"] == ["pattern"]
    assert LIST_FILES_TOOL.parameters["required"] == []
