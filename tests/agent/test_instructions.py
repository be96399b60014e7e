"""Project instructions: which AGENTS.md files, in which order, under which cap."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hermes.agent.engine import Agent
from hermes.agent.events import TurnCompleted
from hermes.agent.instructions import HEADER, load_instructions, repository_root
from hermes.agent.prompt import build_system_prompt, default_system_prompt
from hermes.agent.types import TurnRequest
from hermes.testing.provider import ScriptedProvider
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import text_reply


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """$HERMES_HOME, a repository with AGENTS.md at its root and in pkg/, and cwd = pkg/sub."""
    home = tmp_path / "home"
    repo = tmp_path / "work" / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    home.mkdir()
    (repo / ".git").mkdir()
    (tmp_path / "work" / "AGENTS.md").write_text("ABOVE THE REPOSITORY\n")  # outside the repo: ignored
    (home / "AGENTS.md").write_text("home rule: answer in English\n")
    (repo / "AGENTS.md").write_text("root rule: run pytest -q\n")
    (repo / "pkg" / "AGENTS.md").write_text("pkg rule: no new dependencies\n")
    return home, repo, cwd


def test_home_then_repository_root_then_each_folder_down_to_cwd(tmp_path: Path) -> None:
    home, repo, cwd = layout(tmp_path)

    loaded = load_instructions(home, cwd)

    assert [f.path for f in loaded.files] == [home / "AGENTS.md", repo / "AGENTS.md", repo / "pkg" / "AGENTS.md"]
    text = loaded.text
    assert text.startswith(HEADER)
    assert text.index("home rule") < text.index("root rule") < text.index("pkg rule")
    assert f"## {repo / 'pkg' / 'AGENTS.md'}\npkg rule: no new dependencies" in text
    assert "ABOVE THE REPOSITORY" not in text
    assert not loaded.truncated and loaded.notice is None
    on_disk = sum(len(f.path.read_bytes()) for f in loaded.files)
    assert loaded.included_bytes == loaded.total_bytes == on_disk


def test_a_worktree_git_file_marks_the_root_too(tmp_path: Path) -> None:
    repo = tmp_path / "wt"
    (repo / "a").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere\n")
    assert repository_root(repo / "a") == repo


def test_outside_a_repository_only_the_cwd_file_is_read(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    cwd = outer / "here"
    cwd.mkdir(parents=True)
    (outer / "AGENTS.md").write_text("parent\n")
    (cwd / "AGENTS.md").write_text("here\n")

    loaded = load_instructions(tmp_path / "no-home", cwd)

    assert [f.path for f in loaded.files] == [cwd / "AGENTS.md"]
    assert "here" in loaded.text and "parent" not in loaded.text


def test_nothing_found_adds_nothing_to_the_prompt(tmp_path: Path) -> None:
    loaded = load_instructions(tmp_path / "home", tmp_path)
    assert loaded.files == () and loaded.text == ""
    assert build_system_prompt(None, str(tmp_path), loaded, now=dt.datetime(2026, 1, 2)) == default_system_prompt(
        str(tmp_path), now=dt.datetime(2026, 1, 2)
    )


def test_the_cap_cuts_in_order_and_says_so(tmp_path: Path) -> None:
    home, repo, cwd = layout(tmp_path)
    (repo / "AGENTS.md").write_text("R" * 100 + "é" * 50)  # 200 bytes; the cut falls inside a 2-byte character
    home_size = len((home / "AGENTS.md").read_bytes())
    cap = home_size + 151

    loaded = load_instructions(home, cwd, max_bytes=cap)

    assert loaded.truncated
    home_file, root_file, pkg_file = loaded.files
    assert not home_file.truncated
    assert (root_file.size, root_file.included, root_file.truncated) == (200, 151, True)
    assert (pkg_file.included, pkg_file.truncated) == (0, True)  # nothing left for it
    assert loaded.included_bytes == cap
    assert "R" * 100 + "é" * 25 in loaded.text and "é" * 26 not in loaded.text  # never half a character
    assert "pkg rule" not in loaded.text
    assert f"[Notice: the project instructions were cut at {cap:,} bytes" in loaded.text
    assert loaded.notice is not None
    assert f"cut to {cap:,} bytes (instructions_max_bytes)" in loaded.notice
    assert str(repo / "AGENTS.md") in loaded.notice and str(repo / "pkg" / "AGENTS.md") in loaded.notice


def test_a_zero_cap_turns_instructions_off(tmp_path: Path) -> None:
    home, _, cwd = layout(tmp_path)
    loaded = load_instructions(home, cwd, max_bytes=0)
    assert loaded.files == () and loaded.text == ""


def test_a_configured_prompt_keeps_the_instructions_after_it(tmp_path: Path) -> None:
    home, _, cwd = layout(tmp_path)
    prompt = build_system_prompt("You are terse.", str(cwd), load_instructions(home, cwd))
    assert prompt.startswith("You are terse.\n\n" + HEADER)


async def test_a_resumed_session_keeps_its_stored_prompt_byte_for_byte(tmp_path: Path) -> None:
    home, repo, cwd = layout(tmp_path)
    store = open_sync_state(tmp_path / "state.db")
    provider = ScriptedProvider()
    provider.enqueue(text_reply("one"), text_reply("two"))
    first = Agent(provider, store=store.sessions, model="m", instructions=load_instructions(home, cwd))
    last = [e async for e in first.run_turn(TurnRequest(input="hi", cwd=str(cwd)))][-1]
    assert isinstance(last, TurnCompleted)
    result = last.result
    stored = store.get_session(result.session_id).system_prompt
    assert stored is not None and "pkg rule" in stored

    (repo / "pkg" / "AGENTS.md").write_text("pkg rule: CHANGED\n")  # edited between turns
    second = Agent(provider, store=store.sessions, model="m", instructions=load_instructions(home, cwd))
    [e async for e in second.run_turn(TurnRequest(input="again", session_id=result.session_id, cwd=str(cwd)))]

    assert provider.requests[1].messages[0]["content"] == stored  # the prompt cache keeps its prefix
    store.close()
