"""Keys typed before the prompt box is ready go into it (a whole first prompt is sent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual import events

from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.upstream import text_reply
from hermes.tui.early_keys import EarlyKeys
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.user_message import UserMessage

from .conftest import seed_session, until, until_settled


class SlowSessions(SqliteSessions):
    """Opening a session takes a while: `typing` (the user at the keyboard) runs meanwhile."""

    def __init__(self, store: Any) -> None:
        super().__init__(store.state)
        self.typing: Callable[[], Awaitable[None]] | None = None

    async def get_messages(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        if self.typing is not None:
            typing, self.typing = self.typing, None
            await typing()
        return await super().get_messages(session_id, *args, **kwargs)


CHARACTERS = {"space": " ", "backspace": "\x7f", "enter": "\r"}
"""What a terminal sends for these keys (Textual's driver keeps it as the key's character)."""


def keys(text: str) -> list[str]:
    return ["space" if ch == " " else ch for ch in text]


async def test_keys_typed_while_the_session_opens_go_into_the_prompt(make_tui, store, upstream) -> None:
    sid = seed_session(store, "Earlier", [("hello", "Hi there.")])
    upstream.enqueue(text_reply("Sent in time."))
    sessions = SlowSessions(store)
    app = make_tui(session_id=sid, sessions=sessions)

    # Made outside the app, as the driver's input thread makes them (no sender).
    typed = [events.Key(key, CHARACTERS.get(key, key)) for key in [*keys("nexx"), "backspace", *keys("t one"), "enter"]]
    typed += [events.Key(key, key) for key in "draft"]

    async def typing() -> None:
        # As the terminal delivers them while the session loads: to the app, which is busy
        # mounting the screen and reads them once it is done.
        for event in typed:
            app.post_message(event)

    sessions.typing = typing
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: "Sent in time." in [a.text for a in app.chat.transcript.query(AssistantMessage)])
        await until_settled(pilot)
        prompts = [m.text for m in app.chat.transcript.query(UserMessage)]
        assert prompts == ["hello", "next one"]
        assert app.chat.chat_input.text == "draft"
        assert upstream.requests[-1].body["messages"][-1]["content"] == "next one"


def test_only_typing_is_held() -> None:
    held = EarlyKeys()
    assert held.hold(events.Key("a", "a")) and held.hold(events.Key("enter", "\r"))
    assert not held.hold(events.Key("ctrl+c", None))  # Ctrl+C still stops and quits
    assert not held.hold(events.Key("ctrl+s", None))
