"""The approval modal: run once, allow for the session, deny, deny on timeout."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until, until_settled


def risky_turn(upstream) -> None:
    upstream.enqueue(
        tool_reply([call("shell", {"command": "rm -rf build/", "risky": True})]),
        text_reply("Done."),
    )


@pytest.mark.parametrize(("key", "state"), [("y", "done"), ("a", "done"), ("n", "failed")])
async def test_approval_modal_decides(make_tui, upstream, key, state):
    risky_turn(upstream)
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "clean up")
        await until(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen)
            and app.screen.is_mounted
            and app.chat.transcript.query_one(ToolCard).state == "approval",
        )
        modal = app.screen
        assert modal.request.command == "rm -rf build/"
        assert app.chat.transcript.query_one(ToolCard).state == "approval"
        await pilot.press(key)
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen))
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        card = app.chat.transcript.query_one(ToolCard)
        assert card.state == state
        if state == "done":
            assert "ran: rm -rf build/" in card.result
        else:
            assert "denied" in card.error


async def test_the_modal_says_what_a_session_grant_covers(make_tui, upstream):
    risky_turn(upstream)
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "clean up")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.is_mounted)
        modal = app.screen
        assert modal.request.grant == "this exact call: rm -rf build/"
        assert "covers this exact call: rm -rf build/" in str(modal.query_one("#grant", Static).render())
        assert modal.query("#session")
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await until_settled(pilot)


async def test_an_always_ask_request_offers_no_session_grant(make_tui, upstream):
    upstream.enqueue(
        tool_reply([call("shell", {"command": "echo x >> .git/config", "risky": True, "rule": "git_internals_write"})]),
        text_reply("Done."),
    )
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "configure")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.is_mounted)
        modal = app.screen
        assert modal.request.grant is None
        assert not modal.query("#session")
        assert "Asked every time" in str(modal.query_one("#grant", Static).render())
        await pilot.press("a")  # not offered: the modal stays
        await pilot.pause()
        assert app.screen is modal
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen))
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert "ran: echo x >> .git/config" in app.chat.transcript.query_one(ToolCard).result


async def test_unanswered_approval_is_denied(make_tui, upstream, monkeypatch):
    risky_turn(upstream)
    # The modal denies by itself after 1 s. On a loaded machine it can come and go between
    # two polls, so its showing is recorded when it mounts rather than polled for.
    shown: list[str] = []
    mount = ApprovalScreen.on_mount

    def record_mount(screen: ApprovalScreen) -> None:
        shown.append(screen.request.command)
        mount(screen)

    monkeypatch.setattr(ApprovalScreen, "on_mount", record_mount)
    app = make_tui(approval_timeout=1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "clean up")
        await until(pilot, lambda: bool(shown) and not isinstance(app.screen, ApprovalScreen))
        assert shown == ["rm -rf build/"]
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert app.chat.transcript.query_one(ToolCard).state == "failed"


async def test_escape_during_approval_interrupts_and_closes_the_modal(make_tui, upstream):
    risky_turn(upstream)
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "clean up")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        app.chat.action_interrupt()
        await until(pilot, lambda: not app.chat.turns.turn_running)
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen))
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert app.chat.transcript.query_one(ToolCard).state in ("interrupted", "failed")
