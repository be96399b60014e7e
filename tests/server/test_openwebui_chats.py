"""Open WebUI chats (its chat id in `X-OpenWebUI-Chat-Id` or `metadata.chat_id`): an edit
or a regeneration forks the chat's session and the key follows the fork, the abandoned
branch stays in the old session only, and the model is sent the conversation the user
sees, without the tool cards hermes drew (raw HTTP against the app on loopback, the
scripted upstream as the model; assertions on what that upstream received)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _api_harness import Server, parse_sse

from hermes.ids import keyed_session_id
from hermes.server.openai.openwebui import strip_tool_cards, tool_card
from hermes.testing.upstream import call, text_reply, tool_reply

CHAT = "/v1/chat/completions"
PLACEMENT = "X-Hermes-Session-Placement"
SESSION = "X-Hermes-Session-Id"


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def transcript(server: Server, session_id: str) -> list[tuple[str, Any]]:
    return [(m.role, m.content) for m in server.sessions.get_messages(session_id)]


def sent(server: Server) -> list[tuple[str, Any]]:
    """The user and assistant messages of the upstream's last request."""
    return [(m["role"], m["content"]) for m in server.upstream.requests[-1].messages if m["role"] != "system"]


class Chat:
    """One Open WebUI chat: its id by header or in the body's metadata."""

    def __init__(self, server: Server, chat_id: str, how: str) -> None:
        self.server, self.chat_id, self.how = server, chat_id, how

    async def send(self, messages: list[dict[str, Any]], *, stream: bool = True) -> Any:
        body: dict[str, Any] = {"messages": messages, "stream": stream}
        headers = {"X-OpenWebUI-User-Id": "u-1"}
        if self.how == "header":
            headers["X-OpenWebUI-Chat-Id"] = self.chat_id
        else:
            body["metadata"] = {"chat_id": self.chat_id}
        resp = await self.server.client.post(CHAT, json=body, headers=headers)
        assert resp.status == 200, await resp.text()
        resp.body_text = await resp.text()
        return resp


HOW = pytest.mark.parametrize("how", ["header", "metadata"])


@HOW
async def test_an_edit_of_an_earlier_message_forks_and_the_key_follows_the_fork(server: Server, how: str) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "A2.", "A3.", "E2.", "A4.", "F2.")))
    chat = Chat(server, "chat-edit", how)
    keyed = keyed_session_id("chat-edit")
    await chat.send([user("u1")])
    await chat.send([user("u1"), assistant("A1."), user("u2")])
    third = await chat.send([user("u1"), assistant("A1."), user("u2"), assistant("A2."), user("u3")])
    assert (third.headers[SESSION], third.headers[PLACEMENT]) == (keyed, "keyed")
    old = transcript(server, keyed)
    assert len(old) == 6

    edited = await chat.send([user("u1"), assistant("A1."), user("u2 edited")])
    fork = edited.headers[SESSION]
    assert fork != keyed and edited.headers[PLACEMENT] == "forked"
    assert sent(server) == [("user", "u1"), ("assistant", "A1."), ("user", "u2 edited")]
    assert transcript(server, fork) == [
        ("user", "u1"), ("assistant", "A1."), ("user", "u2 edited"), ("assistant", "E2.")
    ]  # fmt: skip
    assert transcript(server, keyed) == old  # the abandoned branch stays there, only there

    # The key now names the fork: the chat's next turn continues it.
    on = await chat.send([user("u1"), assistant("A1."), user("u2 edited"), assistant("E2."), user("u4")])
    assert (on.headers[SESSION], on.headers[PLACEMENT]) == (fork, "keyed")
    assert [text for _, text in transcript(server, fork)][-2:] == ["u4", "A4."]
    assert transcript(server, keyed) == old

    # An edit inside the fork, before its own first turn: the fork took its parent's marks.
    again = await chat.send([user("u1"), assistant("A1."), user("u2 once more")])
    fork2 = again.headers[SESSION]
    assert fork2 not in (fork, keyed) and again.headers[PLACEMENT] == "forked"
    assert transcript(server, fork2) == [
        ("user", "u1"), ("assistant", "A1."), ("user", "u2 once more"), ("assistant", "F2.")
    ]  # fmt: skip
    assert len(transcript(server, fork)) == 6 and transcript(server, keyed) == old


@HOW
async def test_a_regenerated_answer_forks_and_the_next_turn_follows_it(server: Server, how: str) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "A2.", "R2.", "A3.")))
    chat = Chat(server, "chat-regen", how)
    keyed = keyed_session_id("chat-regen")
    await chat.send([user("u1")], stream=False)
    await chat.send([user("u1"), assistant("A1."), user("u2")], stream=False)
    regenerated = await chat.send([user("u1"), assistant("A1."), user("u2")], stream=False)
    fork = regenerated.headers[SESSION]
    assert fork != keyed and regenerated.headers[PLACEMENT] == "forked"
    assert sent(server) == [("user", "u1"), ("assistant", "A1."), ("user", "u2")]  # A2 was abandoned
    assert transcript(server, keyed)[-1] == ("assistant", "A2.")
    assert transcript(server, fork) == [("user", "u1"), ("assistant", "A1."), ("user", "u2"), ("assistant", "R2.")]
    on = await chat.send([user("u1"), assistant("A1."), user("u2"), assistant("R2."), user("u3")], stream=False)
    assert (on.headers[SESSION], on.headers[PLACEMENT]) == (fork, "keyed")
    assert sent(server) == [("user", "u1"), ("assistant", "A1."), ("user", "u2"), ("assistant", "R2."), ("user", "u3")]
    assert "A2." not in [text for _, text in transcript(server, fork)]


async def test_an_edited_first_message_starts_a_new_session_the_key_follows(server: Server) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "B1.", "B2.")))
    chat = Chat(server, "chat-first", "header")
    keyed = keyed_session_id("chat-first")
    await chat.send([user("first")])
    edited = await chat.send([user("first, edited")])
    new = edited.headers[SESSION]
    assert new != keyed and edited.headers[PLACEMENT] == "forked"
    assert transcript(server, keyed) == [("user", "first"), ("assistant", "A1.")]
    on = await chat.send([user("first, edited"), assistant("B1."), user("second")])
    assert (on.headers[SESSION], on.headers[PLACEMENT]) == (new, "keyed")
    assert [text for _, text in transcript(server, new)] == ["first, edited", "B1.", "second", "B2."]


async def test_a_deleted_fork_gives_the_chat_back_its_old_session(server: Server) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "A2.", "R2.", "A3.")))
    chat = Chat(server, "chat-del", "header")
    keyed = keyed_session_id("chat-del")
    await chat.send([user("u1")])
    await chat.send([user("u1"), assistant("A1."), user("u2")])
    fork = (await chat.send([user("u1"), assistant("A1."), user("u2")])).headers[SESSION]
    server.sessions.delete_session(fork)
    back = await chat.send([user("u1"), assistant("A1."), user("u2"), assistant("A2."), user("u3")])
    assert (back.headers[SESSION], back.headers[PLACEMENT]) == (keyed, "keyed")


async def test_a_resent_tool_card_never_reaches_the_model(server: Server, tmp_path: Path, monkeypatch) -> None:
    """A 10,000-character tool result: Open WebUI shows it as a card and resends the card
    in the assistant message; the model's next request carries the text around it only,
    and the session holds the real call and result."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.txt").write_text("x" * 10_000)
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "big.txt"}, id="call_big")], text="Reading it."),
        text_reply("It is all x."),
        text_reply("Yes, 10,000 of them."),
    )
    chat = Chat(server, "chat-cards", "header")
    first = await chat.send([user("read big.txt")])
    shown = "".join(
        f.json()["choices"][0]["delta"].get("content") or ""
        for f in parse_sse(first.body_text)
        if f.data and f.data != "[DONE]" and f.json().get("choices")
    )
    assert '<details type="tool_calls"' in shown and len(shown) > 20_000
    second = await chat.send([user("read big.txt"), assistant(shown), user("all x?")])
    assert (second.headers[SESSION], second.headers[PLACEMENT]) == (first.headers[SESSION], "keyed")
    request = server.upstream.requests[-1]
    assert sum(len(str(m.get("content") or "")) for m in request.messages if m["role"] != "system") < 200
    assert sent(server) == [
        ("user", "read big.txt"), ("assistant", "Reading it.\n\nIt is all x."), ("user", "all x?")
    ]  # fmt: skip
    stored = server.sessions.get_messages(first.headers[SESSION])
    assert any(m.role == "tool" and m.content == "x" * 10_000 for m in stored)
    assert any(m.role == "assistant" and m.tool_calls for m in stored)


async def test_a_running_tool_is_open_webuis_status_line(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("sleep", {"seconds": 0.05}, id="call_s")], text="Wait."), text_reply("Done.")
    )
    chat = Chat(server, "chat-status", "header")
    resp = await chat.send([user("sleep a bit")])
    frames = [f.json() for f in parse_sse(resp.body_text) if f.data and f.data != "[DONE]" and not f.event]
    kinds = []
    for frame in frames:
        assert frame["object"] == "chat.completion.chunk"  # every frame is a valid chunk
        if "event" in frame:
            assert frame["choices"] == []
            kinds.append(("status", frame["event"]["type"], frame["event"]["data"]["done"]))
        elif "<details" in (frame["choices"][0]["delta"].get("content") or ""):
            kinds.append(("card",))
    assert kinds == [("status", "status", False), ("status", "status", True), ("card",)]
    running = next(f["event"]["data"]["description"] for f in frames if "event" in f)
    assert "0.05" in running  # the tool's preview


async def test_other_clients_get_no_status_frames(server: Server) -> None:
    server.upstream.enqueue(tool_reply([call("sleep", {"seconds": 0.01})]), text_reply("Done."))
    resp = await server.client.post(CHAT, json={"messages": [user("sleep")], "stream": True})
    assert '"event"' not in await resp.text()


def test_strip_tool_cards_keeps_everything_else() -> None:
    card = tool_card(call_id="c1", name="read_file", arguments={"path": "a"}, result="r" * 50, is_error=False)
    assert strip_tool_cards(f"Before.{card}After.") == "Before.\n\nAfter."
    assert strip_tool_cards(f"{card}Only after.") == "Only after."
    assert strip_tool_cards('Text.\n\n<details type="tool_calls" done="false" id="x">\n<summary>Ex') == "Text."
    reasoning = '<details type="reasoning" done="true">\n<summary>Thought</summary>\nhmm\n</details>\nAnswer.'
    assert strip_tool_cards(reasoning) == reasoning
    image = {"type": "image_url", "image_url": {"url": "u"}}
    assert strip_tool_cards([{"type": "text", "text": f"A.{card}B."}, image]) == [
        {"type": "text", "text": "A.\n\nB."}, image
    ]  # fmt: skip
