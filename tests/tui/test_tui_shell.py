"""`!` shell mode in the TUI: the command runs in the working folder through the terminal
tool's gate and launcher, its output shows live in a card, and command and output are
stored as the user's context for the next turn (no model call); Esc stops it; a dangerous
command asks first; a remote session refuses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.agent.shell_passthrough import CONTEXT_HEAD
from hermes.testing.upstream import text_reply
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.shell_card import ShellCard

from .conftest import send_turn, type_and_send, until


def _cards(app) -> list[ShellCard]:
    return list(app.chat.transcript.query(ShellCard))


def _running(marker: str) -> bool:
    """Whether a live process has `marker` in its command line."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X") and "pytest" not in cmdline:
            return True
    return False


@pytest.fixture
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TUI's working folder, outside HERMES_HOME (tmp_path: hidden from every command)."""
    return tmp_path_factory.mktemp("work")


async def test_a_shell_command_becomes_context_for_the_next_turn(make_tui, upstream, store, work: Path):
    (work / "greet.py").write_text("print('hi')\n")
    upstream.enqueue(text_reply("It lists greet.py."), text_reply("Still know."))
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!ls && echo done-$((40+2))")
        await until(pilot, lambda: _cards(app) and "added to the conversation" in _cards(app)[0].text, timeout=30)
        card = _cards(app)[0]
        assert "greet.py" in card.text and "done-42" in card.text and "exit code: 0" in card.text
        assert upstream.requests == []  # no model call
        session_id = app.chat.session_id
        assert session_id is not None
        (stored,) = store.history(session_id)
        assert stored["role"] == "user" and stored["content"].startswith(CONTEXT_HEAD)
        assert "$ ls && echo done-$((40+2))" in stored["content"] and "done-42" in stored["content"]
        await send_turn(pilot, "what is here?")
        sent = upstream.requests[0].messages
        assert [m["role"] for m in sent] == ["system", "user", "user"]
        assert sent[1]["content"] == stored["content"] and sent[2]["content"] == "what is here?"
        await send_turn(pilot, "and now?")
        again = [m for m in upstream.requests[1].messages if CONTEXT_HEAD in str(m.get("content"))]
        assert len(again) == 1  # in the history once, never added again


async def test_the_context_survives_a_resume(make_tui, upstream, store, work: Path):
    upstream.enqueue(text_reply("ok"))
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!echo remembered-$((6*7))")
        await until(pilot, lambda: _cards(app) and "added to the conversation" in _cards(app)[0].text, timeout=30)
        session_id = app.chat.session_id
    resumed = make_tui(session_id=session_id, cwd=str(work))
    async with resumed.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: any("remembered-42" in card.text for card in _cards(resumed)))
        (card,) = _cards(resumed)  # shown as the card it was, not as a prompt
        assert card.command == "echo remembered-$((6*7))" and card.where == str(work)
        assert "exit code: 0" in card.text
        await send_turn(pilot, "what did it print?")
    sent = upstream.requests[0].messages
    assert "remembered-42" in sent[1]["content"] and sent[-1]["content"] == "what did it print?"


async def test_output_shows_live_and_esc_stops_the_command(make_tui, upstream, store, work: Path):
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!echo live-$((6*7)); sleep 61.4242; echo never-$((1+1))")
        await until(pilot, lambda: _cards(app) and "live-42" in _cards(app)[0].text, timeout=30)
        assert app.chat.shell.running, _cards(app)[0].text  # the output arrived while the command still runs
        await until(pilot, lambda: _running("61.4242"))
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.shell.running, timeout=15)
        card = _cards(app)[0]
        assert "stopped" in card.text and "never-2" not in card.text
        assert app.chat.session_id is None and upstream.requests == []  # nothing added anywhere
    assert not _running("61.4242")  # the command's processes were ended


async def test_a_dangerous_command_asks_and_a_denial_runs_nothing(make_tui, upstream, store, work: Path):
    (work / "build").mkdir()
    (work / "build" / "out.o").write_text("x")
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!rm -rf build")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=15)
        await pilot.press("n")
        await until(pilot, lambda: _cards(app) and "not run" in _cards(app)[0].text, timeout=15)
        assert (work / "build" / "out.o").exists()
        assert app.chat.session_id is None
        # Blocked outright, never asked: a delete of the root.
        await type_and_send(pilot, "!rm -rf /")
        await until(pilot, lambda: len(_cards(app)) == 2 and "BLOCKED" in _cards(app)[1].text, timeout=15)
        assert not isinstance(app.screen, ApprovalScreen)


async def test_a_prompt_while_a_command_runs_waits_in_the_prompt_box(make_tui, upstream, work: Path):
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!echo go-$((6*7)); sleep 60")
        await until(pilot, lambda: _cards(app) and "go-42" in _cards(app)[0].text, timeout=30)
        await type_and_send(pilot, "hello")
        await until(pilot, lambda: app.chat.chat_input.text == "hello")
        assert upstream.requests == [] and app.chat.turns.turn_worker is None
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.shell.running, timeout=15)


async def test_a_remote_session_refuses_shell_commands(make_tui, upstream, work: Path):
    app = make_tui(remote="http://127.0.0.1:9", cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "!touch made.txt")
        await until(pilot, lambda: any("not run with --server" in n.text for n in app.chat.transcript.query(Notice)))
        assert not _cards(app) and not (work / "made.txt").exists() and upstream.requests == []
