"""Sessions in the TUI: resume, the picker (search, open, rename, delete), /fork, /new, /title."""

from __future__ import annotations

import pytest

from hermes.backend import resolve_session
from hermes.errors import SessionNotFound
from hermes.testing.upstream import text_reply
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.screens.text_prompt import TextPrompt
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.history_head import HistoryHead
from hermes.tui.widgets.user_message import UserMessage

from .conftest import seed_session, send_turn, type_and_send, until, until_settled


async def test_resume_shows_history_and_continues(make_tui, upstream, store):
    sid = seed_session(store, "Trip planning", [("Where to in May?", "Try **Lisbon**."), ("And June?", "Oslo.")])
    upstream.enqueue(text_reply("July: Rome."))
    app = make_tui(session_id=sid)
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        assert [m.text for m in app.chat.transcript.query(UserMessage)] == ["Where to in May?", "And June?"]
        assert [m.text for m in app.chat.transcript.query(AssistantMessage)] == ["Try **Lisbon**.", "Oslo."]
        assert app.chat.status_bar.title == "Trip planning"
        await send_turn(pilot, "July?")
        assert app.session_id == sid
    sent = upstream.requests[0].messages
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "Where to in May?", "Try **Lisbon**.", "And June?", "Oslo.", "July?",
    ]


async def test_long_session_opens_its_tail_and_loads_more(make_tui, store):
    sid = seed_session(store, "Long", [(f"q{i}", f"a{i}") for i in range(100)])
    app = make_tui(session_id=sid)
    async with app.run_test(size=(100, 30)) as pilot:
        head = app.chat.transcript.query_one(HistoryHead)
        # the newest 8 first, then the rest of the first page (16) right after the first paint
        await until(pilot, lambda: head.hidden == 200 - 16)
        assert app.chat.transcript.query(UserMessage).first().text == "q92"
        assert app.chat.transcript.query(UserMessage).last().text == "q99"
        await pilot.press("ctrl+home")
        await until(pilot, lambda: head.hidden == 200 - 116)
        assert app.chat.transcript.query(UserMessage).first().text == "q42"
        await pilot.press("ctrl+home")
        await until(pilot, lambda: not app.chat.transcript.query(HistoryHead))
        assert app.chat.transcript.query(UserMessage).first().text == "q0"


async def test_sessions_picker_searches_content_and_resumes(make_tui, store):
    seed_session(store, "Groceries", [("milk and eggs", "Noted.")])
    target = seed_session(store, "Physics", [("explain the quokka paradox", "It is a made-up paradox.")])
    seed_session(store, "Cooking", [("pasta", "Boil water.")])
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "/sessions")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert len(picker.sessions) == 3
        for ch in "quokka":
            await pilot.press(ch)
        await until(pilot, lambda: [s.id for s in picker.sessions] == [target])
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker))
        await until(pilot, lambda: app.session_id == target and app.chat.status_bar.title == "Physics")
        await until_settled(pilot)
        assert app.session_id == target
        assert [m.text for m in app.chat.transcript.query(UserMessage)] == ["explain the quokka paradox"]
        assert app.chat.status_bar.title == "Physics"


async def test_sessions_picker_renames_and_deletes(make_tui, store):
    keep = seed_session(store, "Keep me", [("a", "b")])
    doomed = seed_session(store, "Delete me", [("c", "d")])
    app = make_tui(session_id=doomed)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert picker.sessions[0].id == doomed  # newest first
        await pilot.press("ctrl+d")
        assert store.find_session(doomed) is not None  # asks first
        await pilot.press("ctrl+d")
        await until(pilot, lambda: [s.id for s in picker.sessions] == [keep])
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press("ctrl+a", "ctrl+k")
        for ch in "Renamed":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: store.get_session(keep).title == "Renamed")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker))
        # the open session was deleted: the app starts a new one
        assert app.session_id is None
        assert not app.chat.transcript.query(UserMessage)


async def test_fork_creates_a_forked_session(make_tui, upstream, store):
    upstream.enqueue(text_reply("First answer."), text_reply("Second answer."))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "first")
        parent = app.session_id
        assert parent is not None
        await type_and_send(pilot, "/fork Experiment")
        await until(pilot, lambda: app.session_id != parent)
        child = app.session_id
        assert child != parent
        record = store.get_session(child)
        assert record.parent_session_id == parent
        assert record.title == "Experiment"
        assert app.chat.status_bar.title == "Experiment"
        await send_turn(pilot, "second")
    assert [m.content for m in store.get_messages(child)] == ["first", "First answer.", "second", "Second answer."]
    assert [m.content for m in store.get_messages(parent)] == ["first", "First answer."]


async def test_new_title_and_model_commands(make_tui, upstream, store):
    upstream.enqueue(text_reply("ok"))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "/title Named up front")
        await until(pilot, lambda: app.chat.pending_title == "Named up front")
        await type_and_send(pilot, "/model other-model")
        await until(pilot, lambda: app.chat.agent.model == "other-model")
        assert app.chat.agent.model == "other-model"
        assert app.chat.status_bar.model == "other-model"
        await send_turn(pilot, "hello")
        assert store.get_session(app.session_id).title == "Named up front"
        assert upstream.requests[0].body["model"] == "other-model"
        await type_and_send(pilot, "/new")
        await until(pilot, lambda: app.session_id is None)
        assert app.session_id is None
        assert not app.chat.transcript.query(UserMessage)


async def test_resolve_session_for_continue_and_resume(store, sessions):
    older = seed_session(store, "older", [("a", "b")], source="cli")
    newer = seed_session(store, "newer", [("c", "d")])
    assert await resolve_session(sessions, continue_last=True, resume=None) == newer
    assert await resolve_session(sessions, continue_last=False, resume=older) == older
    assert await resolve_session(sessions, continue_last=False, resume=None) is None
    with pytest.raises(SessionNotFound):
        await resolve_session(sessions, continue_last=False, resume="no-such-session")
