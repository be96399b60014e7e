"""Compose in $EDITOR: Ctrl+X Ctrl+E and /editor run the editor on the prompt's text, and
what it saved comes back as the prompt. The editor is a real script; Textual's headless
test driver cannot suspend, so the editor runs without suspending there (see
`hermes.tui.external_editor`)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hermes.tui.widgets.notice import Notice

from .conftest import type_and_send, until, until_settled


def editor_script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-editor"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


async def test_ctrl_x_ctrl_e_edits_the_prompt_in_the_editor(make_tui, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The "editor" appends a second paragraph to what it was given, as a person would.
    script = editor_script(
        tmp_path, '{ cat "$1"; printf "\\n\\nKeep the public API.\\n"; } > "$1.new" && mv "$1.new" "$1"\n'
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        app.chat.chat_input.insert("Refactor the parser")
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: app.chat.chat_input.text != "Refactor the parser", what="the edited prompt")
        assert app.chat.chat_input.text == "Refactor the parser\n\nKeep the public API."
        assert app.chat.chat_input.has_focus


async def test_editor_command_and_visual_wins(make_tui, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = editor_script(tmp_path, 'printf "written in %s" "$0" > "$2"\n')
    monkeypatch.setenv("VISUAL", f"{script} --wait")  # split like a shell word list
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        await type_and_send(pilot, "/editor")
        await until(pilot, lambda: app.chat.chat_input.text == f"written in {script}", what="the editor's text")


async def test_no_editor_is_a_one_line_notice(make_tui, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        app.chat.chat_input.insert("keep me")
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: any("set $VISUAL or $EDITOR" in n.text for n in app.chat.query(Notice)))
        assert app.chat.chat_input.text == "keep me"


async def test_a_failing_editor_leaves_the_prompt(make_tui, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = editor_script(tmp_path, 'echo ruined > "$1"; exit 3\n')
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        app.chat.chat_input.insert("my draft")
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: any("exited with status 3" in n.text for n in app.chat.query(Notice)))
        assert app.chat.chat_input.text == "my draft"


async def test_ctrl_x_then_another_key_still_cuts(make_tui):
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        chat_input = app.chat.chat_input
        chat_input.insert("hello")
        chat_input.select_all()
        await pilot.press("ctrl+x", "a")
        assert chat_input.text == "a"
