"""The TUI on PostgreSQL: a turn is stored there, the picker finds the session, resume shows it.

The app gets `storage.sessions` of a real `open_storage` PostgreSQL storage (the object
`hermes chat` gives it when `database_url` is set), and the agent writes to the same one.
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes.agent.factory import build_agent
from hermes.backend import resolve_session
from hermes.config import Settings
from hermes.store.configured import open_storage
from hermes.testing.upstream import ScriptedUpstream, text_reply
from hermes.tui.app import make_app
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.user_message import UserMessage

from .conftest import Gates, send_turn, test_tools, type_and_send, until, until_settled


async def test_turn_picker_and_resume_on_postgres(
    pg_url: str, tmp_path: Path, upstream: ScriptedUpstream, gates: Gates
) -> None:
    settings = Settings(
        home=tmp_path,
        base_url=upstream.base_url,
        model="scripted-model",
        api_key="x",
        database_url=pg_url,
        stream_stale_timeout=5.0,
    )
    upstream.enqueue(text_reply("Try **Lisbon** in May."), text_reply("Oslo in June."))
    storage = await open_storage(settings)
    try:
        assert storage.backend == "postgres"
        sessions = storage.sessions
        # another session of this folder, older (the picker opens on this folder's sessions)
        await sessions.create_session(source="cli", title="Groceries", cwd=os.path.realpath(tmp_path))
        agent = build_agent(settings, sessions, tools=test_tools(gates))
        try:
            app = make_app(agent, sessions, settings, cwd=str(tmp_path))
            async with app.run_test(size=(100, 30)) as pilot:
                await send_turn(pilot, "Where to go in May?")
                sid = app.session_id
                assert sid is not None
                await type_and_send(pilot, "/title Trip planning")
                await until(pilot, lambda: app.chat.status_bar.title == "Trip planning")
                assert (await sessions.get_session(sid)).title == "Trip planning"
                await type_and_send(pilot, "/new")
                await until(pilot, lambda: app.session_id is None)

                await pilot.press("ctrl+s")
                await until(pilot, lambda: isinstance(app.screen, SessionPicker) and len(app.screen.sessions) == 2)
                picker = app.screen
                assert isinstance(picker, SessionPicker)
                assert [s.title for s in picker.sessions] == ["Trip planning", "Groceries"]  # newest first
                for ch in "lisbon":  # message content, found by PostgreSQL's full-text search
                    await pilot.press(ch)
                await until(pilot, lambda: [s.id for s in picker.sessions] == [sid])
                assert "Lisbon" in picker._snippets[sid]
                await pilot.press("enter")
                await until(pilot, lambda: app.session_id == sid and app.chat.status_bar.title == "Trip planning")
                await until_settled(pilot)
                assert [m.text for m in app.chat.transcript.query(UserMessage)] == ["Where to go in May?"]
                assert [m.text for m in app.chat.transcript.query(AssistantMessage)] == ["Try **Lisbon** in May."]

                await send_turn(pilot, "And in June?")
                assert app.session_id == sid
            sent = upstream.requests[1].messages
            assert [m["content"] for m in sent if m["role"] != "system"] == [
                "Where to go in May?",
                "Try **Lisbon** in May.",
                "And in June?",
            ]
            stored = await sessions.get_messages(sid)
            assert [m.content for m in stored] == [
                "Where to go in May?",
                "Try **Lisbon** in May.",
                "And in June?",
                "Oslo in June.",
            ]

            # `hermes chat --continue` on PostgreSQL: the newest session opens with its history.
            assert await resolve_session(sessions, continue_last=True, resume=None) == sid
            resumed = make_app(agent, sessions, settings, session_id=sid, cwd=str(tmp_path))
            async with resumed.run_test(size=(100, 30)) as pilot:
                await until_settled(pilot)
                assert [m.text for m in resumed.chat.transcript.query(UserMessage)] == [
                    "Where to go in May?",
                    "And in June?",
                ]
                assert resumed.chat.status_bar.title == "Trip planning"
        finally:
            await agent.aclose()
    finally:
        await storage.aclose()
