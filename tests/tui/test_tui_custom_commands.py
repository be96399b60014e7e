"""Custom commands and skills in the local TUI (Pilot): completion, running one, /help, /skills.

The chat's folder is tmp_path (the app's cwd, and the process's, so the agent finds the
skills there too); HOME is a folder of its own (for ~/.claude).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from .conftest import send_turn, type_and_send, until, until_settled


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.chdir(tmp_path)
    review = "---\ndescription: Review a file for bugs\nargument-hint: [file] [focus]\n---\nReview $1, focus on $2.\n"
    write(tmp_path / ".hermes/commands/review.md", review)
    write(tmp_path / ".hermes/commands/help.md", "HIJACK\n")
    write(user / ".claude/commands/git/commit.md", "Commit: $ARGUMENTS\n")
    write(tmp_path / ".hermes/skills/release-notes/SKILL.md",
          "---\nname: release-notes\ndescription: Write release notes.\n---\nNOTES-BODY\n")  # fmt: skip
    write(tmp_path / ".claude/skills/bad/SKILL.md", "---\nname: Not Valid\ndescription: x\n---\n")
    return tmp_path


def shown(app) -> list[str]:
    return [getattr(n, "text", None) or str(n.render()) for n in app.chat.transcript.query(Notice)]


async def test_a_custom_command_completes_and_runs(make_tui, folder: Path, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("Reviewed."))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash", "r", "e", "v")
        await until(pilot, lambda: app.chat.menu.is_open and app.chat.chat_input.text == "/rev")
        assert [c.name for c in app.chat.menu._commands] == ["review"]
        assert app.chat.menu.selected().usage == "/review [file] [focus]"
        await pilot.press("tab")
        await until(pilot, lambda: app.chat.chat_input.text == "/review ")
        await pilot.press("ctrl+a", "ctrl+k")
        await pilot.press("slash", "g")
        await until(pilot, lambda: app.chat.menu.is_open and app.chat.chat_input.text == "/g")
        assert [c.name for c in app.chat.menu._commands] == ["git:commit"]
        await pilot.press("ctrl+a", "ctrl+k")
        await send_turn(pilot, '/review src/app.py "error handling"')
        await until_settled(pilot)
        (message,) = app.chat.transcript.query(UserMessage)
        assert message.text == "Review src/app.py, focus on error handling."
        source = folder / ".hermes/commands/review.md"
        assert message.origin == f'/review src/app.py "error handling"  (command: {source})'
        assert "▸ /review" in str(message.render())
    assert upstream.requests[0].messages[-1] == {
        "role": "user",
        "content": "Review src/app.py, focus on error handling.",
    }


async def test_a_skill_runs_as_a_command_and_its_tool_answers(
    make_tui, folder: Path, upstream: ScriptedUpstream
) -> None:
    upstream.enqueue(tool_reply([call("skill", {"name": "release-notes"})]), text_reply("Notes."))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "/release-notes for v2")
        await until_settled(pilot)
    first, second = upstream.requests
    assert "- release-notes: Write release notes." in first.messages[0]["content"]
    assert "NOTES-BODY" not in first.messages[0]["content"]
    assert first.messages[-1]["content"].startswith('Use the skill "release-notes"')
    tool = [m for m in second.messages if m["role"] == "tool"][0]
    assert "NOTES-BODY" in tool["content"]


async def test_help_and_skills_list_them_and_a_builtin_is_never_shadowed(make_tui, folder: Path) -> None:
    app = make_tui()
    async with app.run_test(size=(140, 40)) as pilot:
        await type_and_send(pilot, "/help")
        await until(pilot, lambda: any("Custom commands and skills" in t for t in shown(app)))
        text = next(t for t in shown(app) if "Custom commands and skills" in t)
        assert "/review [file] [focus]" in text and "Review a file for bugs" in text
        assert "/git:commit" in text and "/release-notes [request]" in text
        assert f"/help ({folder / '.hermes/commands/help.md'}) is ignored: a built-in command has that name" in text
        assert "Keys" in text  # /help is still the built-in one
        await type_and_send(pilot, "/skills")
        await until(pilot, lambda: any("Skills (" in t for t in shown(app)))
        report = next(t for t in shown(app) if "Skills (" in t)
        assert "release-notes  Write release notes." in report
        assert f"project: {folder / '.hermes/skills'}" in report
        assert "skipped" in report and "bad name 'Not Valid'" in report
        assert not app.chat.transcript.query(UserMessage)  # nothing was sent to the model
