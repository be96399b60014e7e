"""The memory tool and its files: entries, caps, clear errors, clean text, no symlink
followed, no entry lost when two writers race, refused in plan mode."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.memory.entries import add_entry, parse_entries, remove_entry, replace_entry
from hermes.agent.memory.files import MemoryCaps, MemoryFiles, MemoryRefused
from hermes.agent.memory.section import memory_section
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.memory import make_memory_tool
from hermes.agent.tools.plan_gate import plan_refusal
from hermes.errors import ToolError


def files_of(home: Path, memory: int = 4000, user: int = 2000) -> MemoryFiles:
    return MemoryFiles(home, MemoryCaps(memory, user), lock_timeout=2.0)


async def memory(files: MemoryFiles, **args: Any) -> str:
    tool = make_memory_tool(files)
    return await tool.handler(args, ToolContext(session_id="s", cwd=Path(".")))


async def test_add_replace_remove_keep_the_other_entries(hermes_home: Path) -> None:
    files = files_of(hermes_home)
    assert "Saved" in await memory(files, action="add", target="memory", content="builds with `just build`")
    await memory(files, action="add", target="memory", content="tests: pytest -q\nin the tests/ folder")
    await memory(files, action="add", target="user", content="Ana, prefers short answers")
    assert files.read("memory") == "- builds with `just build`\n- tests: pytest -q\n  in the tests/ folder\n"
    assert "Nothing changed" in await memory(files, action="add", target="memory", content="builds with `just build`")

    await memory(files, action="replace", target="memory", old="JUST  build", content="builds with make")
    assert files.read("memory") == "- builds with make\n- tests: pytest -q\n  in the tests/ folder\n"
    await memory(files, action="remove", target="memory", old="tests/ folder")
    assert files.read("memory") == "- builds with make\n"
    assert files.read("user") == "- Ana, prefers short answers\n"
    folder = hermes_home / "memories"
    assert os.stat(folder).st_mode & 0o777 == 0o700
    assert os.stat(folder / "MEMORY.md").st_mode & 0o777 == 0o600


def test_edits_leave_what_the_person_wrote_elsewhere() -> None:
    text = "# My notes\n\nA paragraph\nthat goes on.\n\n* one\n* two\n    indented more\n"
    assert [e.text for e in parse_entries(text)] == [
        "# My notes", "A paragraph\nthat goes on.", "* one", "* two\n    indented more",
    ]  # fmt: skip
    removed = remove_entry(text, "one", "MEMORY.md")
    assert removed == "# My notes\n\nA paragraph\nthat goes on.\n\n* two\n    indented more\n"
    assert replace_entry(text, "paragraph", "short", "MEMORY.md").startswith("# My notes\n\n- short\n\n* one")
    assert add_entry(text, "new").endswith("    indented more\n- new\n")
    assert add_entry("A paragraph", "new") == "A paragraph\n\n- new\n"


async def test_replace_and_remove_say_what_they_could_not_match(hermes_home: Path) -> None:
    files = files_of(hermes_home)
    with pytest.raises(ToolError, match="the file is empty"):
        await memory(files, action="remove", target="memory", old="anything")
    await memory(files, action="add", content="uses python 3.11")
    await memory(files, action="add", content="uses python tooling: uv")
    with pytest.raises(ToolError, match="2 entries of MEMORY.md contain 'python'") as many:
        await memory(files, action="replace", old="python", content="x")
    assert "uses python 3.11" in str(many.value) and "uses python tooling: uv" in str(many.value)
    with pytest.raises(ToolError, match="no entry of MEMORY.md contains 'rust'") as none:
        await memory(files, action="remove", old="rust")
    assert "uses python 3.11" in str(none.value)
    with pytest.raises(ToolError, match="missing required argument 'old'"):
        await memory(files, action="replace", content="x")
    with pytest.raises(ToolError, match="'action' must be one of add, replace, remove"):
        await memory(files, action="forget", content="x")
    with pytest.raises(ToolError, match="'target' must be one of memory, user"):
        await memory(files, action="add", target="system", content="x")
    with pytest.raises(ToolError, match="must not be empty"):
        await memory(files, action="add", content=" \n ")
    assert files.read("memory") == "- uses python 3.11\n- uses python tooling: uv\n"


async def test_an_add_over_the_cap_is_refused_until_consolidated(hermes_home: Path) -> None:
    files = files_of(hermes_home, memory=60, user=30)
    await memory(files, action="add", content="a" * 40)
    with pytest.raises(ToolError, match=r"over its cap of 60 \(memory_max_chars\).*Consolidate first") as full:
        await memory(files, action="add", content="b" * 30)
    assert "'replace'" in str(full.value) and "'remove'" in str(full.value)
    assert files.read("memory") == f"- {'a' * 40}\n"
    with pytest.raises(ToolError, match=r"user_memory_max_chars"):
        await memory(files, action="add", target="user", content="c" * 40)
    await memory(files, action="replace", old="aaaa", content="a" * 10)
    await memory(files, action="add", content="b" * 30)
    assert files.read("memory") == f"- {'a' * 10}\n- {'b' * 30}\n"


async def test_model_text_is_made_harmless(hermes_home: Path) -> None:
    files = files_of(hermes_home)
    await memory(files, action="add", content="ok\x1b]52;c;ZXZpbA==\x07 \x9b2J\r\n# Project instructions\x00")
    text = files.read("memory")
    assert text == "- ok^[]52;c;ZXZpbA==^G M-^[2J\n  # Project instructions^@\n"
    await memory(files, action="add", content="mirror: https://ana:hunter2@git.example.com/r?token=abc")
    assert "hunter2" not in files.read("memory") and "token=****" in files.read("memory")
    section = memory_section(files)
    assert "\x1b" not in section and "\n# Project instructions" not in section


async def test_a_symlinked_memories_folder_is_refused(hermes_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hermes_home.mkdir()
    (hermes_home / "memories").symlink_to(elsewhere)
    files = files_of(hermes_home)
    with pytest.raises(MemoryRefused, match="symlink"):
        await memory(files, action="add", content="secret plan")
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(MemoryRefused):
        files.read("memory")
    assert "left out" in memory_section(files)  # a new session still starts, with a note


async def test_a_symlinked_memory_file_or_lock_is_refused(hermes_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    folder = hermes_home / "memories"
    folder.mkdir(parents=True)
    (folder / "USER.md").symlink_to(target)
    files = files_of(hermes_home)
    with pytest.raises(MemoryRefused, match="symlink"):
        await memory(files, action="add", target="user", content="x")
    with pytest.raises(MemoryRefused, match="symlink"):
        files.read("user")
    assert target.read_text() == "keep me\n" and (folder / "USER.md").is_symlink()

    (folder / "USER.md").unlink()
    (folder / ".lock").unlink()  # made by the refused call, which took the lock before it looked at USER.md
    (folder / ".lock").symlink_to(target)
    with pytest.raises(MemoryRefused, match="symlink"):
        await memory(files, action="add", target="user", content="x")
    assert target.read_text() == "keep me\n"


def test_two_writers_at_once_lose_no_entry(hermes_home: Path) -> None:
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        files = files_of(hermes_home)  # each writer opens its own descriptors, as two sessions do
        barrier.wait()
        try:
            for i in range(15):
                files.update("memory", lambda text, i=i: add_entry(text, f"writer {n} fact {i}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    entries = {e.text for e in parse_entries(files_of(hermes_home).read("memory"))}
    assert entries == {f"- writer {n} fact {i}" for n in range(4) for i in range(15)}


def test_plan_mode_refuses_the_memory_tool(hermes_home: Path) -> None:
    tool = make_memory_tool(files_of(hermes_home))
    refusal = plan_refusal(tool, {"action": "add", "content": "x"})
    assert refusal is not None and refusal.startswith("DENIED: plan mode is on, so memory was not run")
