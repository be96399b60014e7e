"""`hermes chat -q "/name args"` with custom commands and skills, as a real subprocess in a
project folder (with .git) against the scripted upstream: checked on what the upstream got.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

REPO = Path(__file__).resolve().parents[2]

CLAUDE_STYLE_COMMAND = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [message]
description: Create a git commit
model: claude-3-5-haiku-20241022
---

## Context

- Current git status: !`git status`
- Current branch: !`git branch --show-current`

## Your task

Based on the above changes, create a single git commit with this message: $ARGUMENTS
"""


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def hermes(args: list[str], *, home: Path, cwd: Path, user_home: Path, upstream: ScriptedUpstream):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(
        HERMES_HOME=str(home),
        HOME=str(user_home),
        PYTHONPATH=str(REPO),
        HERMES_STREAM_STALE_TIMEOUT="5",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_SANDBOX="off",
    )
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def test_a_command_is_expanded_and_a_project_command_wins(upstream, hermes_home, project, user_home) -> None:
    write(project / ".hermes/commands/review.md", "---\ndescription: Review\n---\nReview $1 for $2 (all: $ARGUMENTS)\n")
    write(hermes_home / "commands/review.md", "USER VERSION $ARGUMENTS\n")
    write(hermes_home / "commands/greet.md", "Greet $1 warmly.\n")
    upstream.enqueue(text_reply("Reviewed."), text_reply("Hello!"))
    proc = hermes(["chat", "-q", '/review src/app.py "race conditions"'], home=hermes_home, cwd=project,
                  user_home=user_home, upstream=upstream)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Reviewed.\n"
    sent = upstream.requests[0].messages[-1]
    expected = 'Review src/app.py for race conditions (all: src/app.py "race conditions")'
    assert sent == {"role": "user", "content": expected}
    origin = f"(command: {project / '.hermes/commands/review.md'})"
    assert f'/review src/app.py "race conditions"  {origin}' in proc.stderr

    proc = hermes(["chat", "-q", "/GREET Ada"], home=hermes_home, cwd=project, user_home=user_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert upstream.requests[1].messages[-1]["content"] == "Greet Ada warmly."


def test_a_claude_code_command_file_works_as_written(upstream, hermes_home, project, user_home) -> None:
    write(project / ".claude/commands/commit.md", CLAUDE_STYLE_COMMAND)
    write(user_home / ".claude/commands/frontend/component.md", "Create a React component named $1.\n")
    upstream.enqueue(text_reply("Committed."), text_reply("Made it."))
    proc = hermes(["chat", "-q", "/commit fix: handle empty input"], home=hermes_home, cwd=project,
                  user_home=user_home, upstream=upstream)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    content = upstream.requests[0].messages[-1]["content"]
    assert content.startswith("## Context")
    assert content.endswith("create a single git commit with this message: fix: handle empty input")
    assert "allowed-tools" not in content and "---" not in content

    proc = hermes(["chat", "-q", "/frontend:component Button"], home=hermes_home, cwd=project,
                  user_home=user_home, upstream=upstream)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert upstream.requests[1].messages[-1]["content"] == "Create a React component named Button."


def test_builtin_names_and_unknown_names_are_sent_as_typed(upstream, hermes_home, project, user_home) -> None:
    write(project / ".hermes/commands/help.md", "HIJACKED\n")
    upstream.enqueue(text_reply("a"), text_reply("b"))
    proc = hermes(["chat", "-q", "/help me"], home=hermes_home, cwd=project, user_home=user_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert upstream.requests[0].messages[-1]["content"] == "/help me"
    assert "command of the TUI" in proc.stderr
    proc = hermes(["chat", "-q", "/nothing here"], home=hermes_home, cwd=project, user_home=user_home,
                  upstream=upstream)  # fmt: skip
    assert upstream.requests[1].messages[-1]["content"] == "/nothing here"
    assert "not a custom command or skill" in proc.stderr


def test_skills_are_listed_without_bodies_and_the_tool_returns_one(upstream, hermes_home, project, user_home) -> None:
    write(project / ".hermes/skills/release-notes/SKILL.md",
          "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n"
          "SECRET-BODY: group commits by type.\n")  # fmt: skip
    write(project / ".hermes/skills/release-notes/template.md", "## Added\n")
    write(user_home / ".claude/skills/api-docs/SKILL.md",
          "---\nname: api-docs\ndescription: Document an HTTP API.\n---\nAPI-BODY\n")  # fmt: skip
    write(project / ".hermes/skills/broken/SKILL.md", "no front matter\n")
    upstream.enqueue(
        tool_reply([call("skill", {"name": "release-notes"})]),
        tool_reply([call("skill", {"name": "release-notes", "file": "template.md"})]),
        tool_reply([call("skill", {"name": "../../etc/passwd"})]),
        text_reply("Notes written."),
    )
    proc = hermes(["chat", "-q", "/release-notes since v1.2"], home=hermes_home, cwd=project, user_home=user_home,
                  upstream=upstream)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first = upstream.requests[0]
    system = first.messages[0]["content"]
    assert "- api-docs: Document an HTTP API.\n- release-notes: Write release notes from the git log." in system
    assert "SECRET-BODY" not in system and "API-BODY" not in system and "broken" not in system
    assert "skill" in first.tool_names
    prompt = first.messages[-1]["content"]
    assert 'Use the skill "release-notes"' in prompt and prompt.endswith("since v1.2")

    def tool_result(index: int) -> str:
        return [m for m in upstream.requests[index].messages if m["role"] == "tool"][-1]["content"]

    body = tool_result(1)
    assert "SECRET-BODY: group commits by type." in body
    assert f"Folder: {project / '.hermes/skills/release-notes'}" in body and "- template.md" in body
    assert tool_result(2) == "## Added\n"
    assert "no skill named '../../etc/passwd'" in tool_result(3)


def test_no_skills_no_tool_and_no_section(upstream, hermes_home, project, user_home) -> None:
    upstream.enqueue(text_reply("hi"))
    proc = hermes(["chat", "-q", "hello"], home=hermes_home, cwd=project, user_home=user_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert "skill" not in upstream.requests[0].tool_names
    assert "# Skills" not in upstream.requests[0].messages[0]["content"]
