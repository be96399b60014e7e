"""Sessions follow the conversation: raw HTTP and the openai SDK against the app on
loopback, the scripted upstream as the model (`hermes.server.openai.conversation`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest
from _api_harness import SERVER_KEY, MakeServer, Server

from hermes.ids import derived_session_id, keyed_session_id
from hermes.server.openai.conversation import ConversationLocks, place_conversation, unseen_after
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.testing.upstream import call, text_reply, tool_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
PLACEMENT = "X-Hermes-Session-Placement"


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def transcript(server: Server, session_id: str) -> list[tuple[str, Any]]:
    return [(m.role, m.content) for m in server.sessions.get_messages(session_id)]


async def chat(server: Server, messages: list[dict[str, str]], *, stream: bool = False, **extra: Any) -> Any:
    headers = extra.pop("headers", {})
    resp = await server.client.post(CHAT, json={"messages": messages, "stream": stream, **extra}, headers=headers)
    assert resp.status == 200, await resp.text()
    await resp.read()
    return resp


async def test_two_chats_with_the_same_opening_are_two_sessions(server: Server) -> None:
    server.upstream.enqueue(text_reply("First answer."), text_reply("Second answer."))
    first = await chat(server, [user("plain check one")])
    second = await chat(server, [user("plain check one")], stream=True)
    a, b = first.headers["X-Hermes-Session-Id"], second.headers["X-Hermes-Session-Id"]
    assert a == derived_session_id(None, "plain check one")  # the first keeps the derived id
    assert b != a and (first.headers[PLACEMENT], second.headers[PLACEMENT]) == ("derived", "new")
    assert transcript(server, a) == [("user", "plain check one"), ("assistant", "First answer.")]
    assert transcript(server, b) == [("user", "plain check one"), ("assistant", "Second answer.")]


async def test_a_resent_history_continues_and_an_edit_or_a_regeneration_forks(server: Server) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "A2.", "Edited A2.", "Regenerated A2.", "A3.")))
    one = await chat(server, [user("u1")])
    sid = one.headers["X-Hermes-Session-Id"]
    two = await chat(server, [user("u1"), assistant("A1."), user("u2")], stream=True)
    assert (two.headers["X-Hermes-Session-Id"], two.headers[PLACEMENT]) == (sid, "continued")

    edited = await chat(server, [user("u1"), assistant("A1."), user("u2 edited")])
    assert edited.headers[PLACEMENT] == "forked" and edited.headers["X-Hermes-Session-Id"] != sid
    assert transcript(server, edited.headers["X-Hermes-Session-Id"]) == [
        ("user", "u1"), ("assistant", "A1."), ("user", "u2 edited"), ("assistant", "Edited A2."),
    ]  # fmt: skip

    regenerated = await chat(server, [user("u1"), assistant("A1."), user("u2")], stream=True)
    regen_sid = regenerated.headers["X-Hermes-Session-Id"]
    assert regenerated.headers[PLACEMENT] == "forked" and regen_sid not in (sid, edited.headers["X-Hermes-Session-Id"])
    assert transcript(server, regen_sid)[-2:] == [("user", "u2"), ("assistant", "Regenerated A2.")]
    assert transcript(server, sid) == [("user", "u1"), ("assistant", "A1."), ("user", "u2"), ("assistant", "A2.")]

    # The original branch goes on where it ended (whitespace and rendering do not matter).
    three = await chat(server, [user("u1"), assistant("A1.\n"), user("u2"), assistant(" A2."), user("u3")])
    assert (three.headers["X-Hermes-Session-Id"], three.headers[PLACEMENT]) == (sid, "continued")
    assert len(transcript(server, sid)) == 6


async def test_concurrent_continuations_never_interleave(server: Server) -> None:
    server.upstream.enqueue(text_reply("A1."))
    sid = (await chat(server, [user("u1")])).headers["X-Hermes-Session-Id"]
    server.upstream.enqueue(text_reply("slow answer one two three", chunk_delay=0.02), text_reply("B answer."))
    history = [user("u1"), assistant("A1.")]
    first, second = await asyncio.gather(
        chat(server, [*history, user("from tab A")], stream=True), chat(server, [*history, user("from tab B")])
    )
    sessions = {first.headers["X-Hermes-Session-Id"], second.headers["X-Hermes-Session-Id"]}
    assert sid in sessions and len(sessions) == 2
    assert sorted((first.headers[PLACEMENT], second.headers[PLACEMENT])) == ["continued", "forked"]
    for session_id in sessions:
        roles = [role for role, _ in transcript(server, session_id)]
        assert roles == ["user", "assistant", "user", "assistant"]


async def test_concurrent_requests_of_one_keyed_chat_take_turns(server: Server) -> None:
    server.upstream.enqueue(text_reply("slow answer one two three", chunk_delay=0.02), text_reply("Second."))
    headers = {"X-OpenWebUI-Chat-Id": "chat-42"}
    first, second = await asyncio.gather(
        chat(server, [user("q1")], stream=True, headers=headers), chat(server, [user("q2")], headers=headers)
    )
    # The second waited for the first; then, its first message being another, it started
    # the chat's new branch: each transcript holds one whole turn.
    assert first.headers["X-Hermes-Session-Id"] == keyed_session_id("chat-42")
    assert transcript(server, keyed_session_id("chat-42")) == [
        ("user", "q1"), ("assistant", "slow answer one two three")
    ]  # fmt: skip
    assert transcript(server, second.headers["X-Hermes-Session-Id"]) == [("user", "q2"), ("assistant", "Second.")]


@pytest.mark.parametrize("how", ["header", "metadata"])
async def test_the_clients_chat_id_keys_the_session(server: Server, how: str) -> None:
    server.upstream.enqueue(*(text_reply(f"R{i}.") for i in range(3)))

    def keyed(chat_id: str) -> dict[str, Any]:
        if how == "header":
            return {"headers": {"X-OpenWebUI-Chat-Id": chat_id}}
        return {"metadata": {"chat_id": chat_id}}

    one = await chat(server, [user("same opening")], **keyed("chat-a"))
    other = await chat(server, [user("same opening")], **keyed("chat-b"))
    again = await chat(server, [user("same opening"), assistant("R0."), user("next")], **keyed("chat-a"))
    assert one.headers["X-Hermes-Session-Id"] == again.headers["X-Hermes-Session-Id"] == keyed_session_id("chat-a")
    assert other.headers["X-Hermes-Session-Id"] == keyed_session_id("chat-b")
    assert one.headers[PLACEMENT] == again.headers[PLACEMENT] == "keyed"
    assert [role for role, _ in transcript(server, keyed_session_id("chat-a"))] == ["user", "assistant"] * 2


async def test_responses_resending_the_input_stay_in_one_session(server: Server) -> None:
    server.upstream.enqueue(text_reply("R1."), text_reply("R2."), text_reply("R3."))
    history: list[dict[str, Any]] = []
    session_ids = []
    for index, question in enumerate(("q1", "q2", "q3")):
        history.append({"role": "user", "content": [{"type": "input_text", "text": question}]})
        resp = await server.client.post(RESPONSES, json={"input": history, "stream": index == 1})
        assert resp.status == 200
        body = await resp.text()
        session_ids.append(resp.headers["X-Hermes-Session-Id"])
        answer = f"R{index + 1}."
        assert answer in body
        history.append({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": answer}]})  # fmt: skip
    assert len(set(session_ids)) == 1
    assert [role for role, _ in transcript(server, session_ids[0])] == ["user", "assistant"] * 3
    # The whole context is in the session: what `hermes chat -r` resumes from.
    history_sent = server.upstream.requests[-1].messages
    assert [m["role"] for m in history_sent[1:]] == ["user", "assistant", "user", "assistant", "user"]


# ---- the openai SDK -------------------------------------------------------------------------


@pytest.fixture
async def sdk(make_server: MakeServer) -> Any:
    server = await make_server(server_key=SERVER_KEY)
    client = openai.AsyncOpenAI(base_url=server.base_url + "v1", api_key=SERVER_KEY, max_retries=0)
    yield server, client
    await client.close()


async def test_sdk_chat_sessions_follow_the_conversation(sdk: Any) -> None:
    server, client = sdk
    server.upstream.enqueue(text_reply("One."), text_reply("Two."), text_reply("Three."))
    first = await client.chat.completions.with_raw_response.create(model="hermes-agent", messages=[user("hello")])
    second = await client.chat.completions.with_raw_response.create(model="hermes-agent", messages=[user("hello")])
    answer = first.parse().choices[0].message.content
    follow = await client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[user("hello"), assistant(answer), user("and then?")]
    )
    a, b, c = (r.headers["X-Hermes-Session-Id"] for r in (first, second, follow))
    assert a != b and c == a


async def test_sdk_responses_without_previous_response_id_keep_one_session(sdk: Any) -> None:
    server, client = sdk
    server.upstream.enqueue(text_reply("Alpha."), text_reply("Beta."))
    items: list[Any] = [{"role": "user", "content": "first"}]
    one = await client.responses.with_raw_response.create(model="hermes-agent", input=items)
    items += [{"role": "assistant", "content": one.parse().output_text}, {"role": "user", "content": "second"}]
    two = await client.responses.with_raw_response.create(model="hermes-agent", input=items)
    assert one.headers["X-Hermes-Session-Id"] == two.headers["X-Hermes-Session-Id"]
    assert two.parse().output_text == "Beta."


async def test_a_client_tool_continuation_with_the_whole_input_stays_in_its_session(server: Server) -> None:
    tool = {"type": "function", "name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}  # fmt: skip
    server.upstream.enqueue(
        tool_reply([call("get_weather", {"city": "Rome"}, id="call_r")], text="Looking."), text_reply("Warm."),
        text_reply("Bring a hat."),
    )  # fmt: skip
    first = await server.client.post(RESPONSES, json={"input": "rome?", "tools": [tool]})
    output = (await first.json())["output"]
    items: list[Any] = [{"role": "user", "content": "rome?"}, *output,
                        {"type": "function_call_output", "call_id": "call_r", "output": "30 C"}]  # fmt: skip
    second = await server.client.post(RESPONSES, json={"input": items, "tools": [tool]})
    answer = (await second.json())["output"][-1]
    assert answer["content"][0]["text"] == "Warm."
    third = await server.client.post(
        RESPONSES, json={"input": [*items, answer, {"role": "user", "content": "and tomorrow?"}], "tools": [tool]}
    )
    assert third.status == 200
    sids = {r.headers["X-Hermes-Session-Id"] for r in (first, second, third)}
    assert len(sids) == 1 and third.headers[PLACEMENT] == "continued"


@pytest.mark.parametrize("url", [CHAT, RESPONSES], ids=["chat", "responses"])
async def test_a_new_session_keeps_the_history_hermes_never_saw(server: Server, url: str) -> None:
    server.upstream.enqueue(text_reply("A4."), text_reply("A5."))
    prior = [user("u1"), assistant("A1."), user("u2"), assistant("A2."), user("u3"), assistant("A3.")]

    def body(messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"messages": messages} if url == CHAT else {"input": messages}

    first = await server.client.post(url, json=body([*prior, user("u4")]))
    assert first.status == 200, await first.text()
    sid = first.headers["X-Hermes-Session-Id"]
    assert first.headers[PLACEMENT] in ("derived", "new")
    page = await (await server.client.get(f"/api/sessions/{sid}/messages")).json()
    whole = [*prior, user("u4"), assistant("A4.")]
    assert [(m["role"], m["content"]) for m in page["data"]] == [(m["role"], m["content"]) for m in whole]
    assert [m["finish_reason"] for m in page["data"][:6]] == ["imported"] * 6
    assert page["data"][7]["finish_reason"] != "imported"
    sent = [(m["role"], m["content"]) for m in server.upstream.requests[0].messages[1:]]
    assert sent == [(m["role"], m["content"]) for m in [*prior, user("u4")]]  # the history once

    # The next turn resends the conversation: it continues that session, and the model
    # again gets every earlier message once.
    second = await server.client.post(url, json=body([*whole, user("u5")]))
    assert (second.headers["X-Hermes-Session-Id"], second.headers[PLACEMENT]) == (sid, "continued")
    sent = [(m["role"], m["content"]) for m in server.upstream.requests[1].messages[1:]]
    assert sent == [(m["role"], m["content"]) for m in [*whole, user("u5")]]
    assert len(transcript(server, sid)) == 10


@pytest.mark.parametrize("url", [CHAT, RESPONSES], ids=["chat", "responses"])
async def test_a_fork_keeps_the_branch_hermes_never_saw(server: Server, url: str) -> None:
    server.upstream.enqueue(*(text_reply(t) for t in ("A1.", "A2.", "A3 on the branch.", "A4.")))

    def body(messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"messages": messages} if url == CHAT else {"input": messages}

    async def post(messages: list[dict[str, str]]) -> Any:
        resp = await server.client.post(url, json=body(messages))
        assert resp.status == 200, await resp.text()
        await resp.read()
        return resp

    sid = (await post([user("u1")])).headers["X-Hermes-Session-Id"]
    await post([user("u1"), assistant("A1."), user("u2")])
    # The client edited the second answer (or branched elsewhere) and goes on from there.
    branch = [user("u1"), assistant("A1."), user("u2"), assistant("A2 edited by hand."), user("u3")]
    forked = await post(branch)
    fork = forked.headers["X-Hermes-Session-Id"]
    assert forked.headers[PLACEMENT] == "forked" and fork != sid
    page = await (await server.client.get(f"/api/sessions/{fork}/messages")).json()
    whole = [*branch, assistant("A3 on the branch.")]
    assert [(m["role"], m["content"]) for m in page["data"]] == [(m["role"], m["content"]) for m in whole]
    assert [m["finish_reason"] == "imported" for m in page["data"]] == [False, False, True, True, False, False]
    sent = [(m["role"], m["content"]) for m in server.upstream.requests[2].messages[1:]]
    assert sent == [(m["role"], m["content"]) for m in branch]  # each message once
    assert transcript(server, sid) == [("user", "u1"), ("assistant", "A1."), ("user", "u2"), ("assistant", "A2.")]

    # The branch goes on in the fork, whose transcript is the conversation the client resends.
    again = await post([*whole, user("u4")])
    assert (again.headers["X-Hermes-Session-Id"], again.headers[PLACEMENT]) == (fork, "continued")
    sent = [(m["role"], m["content"]) for m in server.upstream.requests[3].messages[1:]]
    assert sent == [(m["role"], m["content"]) for m in [*whole, user("u4")]]
    assert len(transcript(server, fork)) == 8


async def test_sdk_a_fork_with_an_edited_answer_shows_the_whole_branch(sdk: Any) -> None:
    server, client = sdk
    server.upstream.enqueue(text_reply("One."), text_reply("Two."), text_reply("Three."))
    await client.chat.completions.create(model="hermes-agent", messages=[user("hi")])
    await client.chat.completions.create(model="hermes-agent", messages=[user("hi"), assistant("One."), user("next")])
    branch = [user("hi"), assistant("One."), user("next"), assistant("Not two."), user("why?")]
    raw = await client.chat.completions.with_raw_response.create(model="hermes-agent", messages=branch)
    assert raw.headers[PLACEMENT] == "forked" and raw.parse().choices[0].message.content == "Three."
    fork = raw.headers["X-Hermes-Session-Id"]
    assert transcript(server, fork) == [(m["role"], m["content"]) for m in [*branch, assistant("Three.")]]


def test_what_follows_a_matched_prefix_starts_at_the_next_message_of_the_conversation() -> None:
    calls = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"}, user("u1"), calls, result, assistant("A1."), assistant("more"),
        user(""), user("u2"), assistant("A2."),
    ]  # fmt: skip
    assert unseen_after(history, 0) == history[1:]
    assert unseen_after(history, 1) == history[4:]  # messages without text go with the matched turn
    assert unseen_after(history, 2) == history[7:]  # one answer in two messages; an empty one is no message
    assert unseen_after(history, 3) == history[8:]
    assert unseen_after(history, 4) == []


async def test_a_derived_placement_that_landed_in_a_fresh_session_lets_go_of_the_derived_id(tmp_path: Path) -> None:
    storage = open_sqlite_storage(tmp_path / "home")
    locks = ConversationLocks()
    derived = derived_session_id(None, "hi there")
    try:
        async with place_conversation(
            storage.sessions, locks, history=[], key=None, opening=(None, "hi there")
        ) as placement:
            assert (placement.session_id, placement.how, placement.fresh_if_taken) == (derived, "derived", True)
            assert placement.landed(derived) is placement and locks.lock(derived).locked()
            moved = placement.landed("fresh-one")  # the turn found the derived id taken
            assert (moved.session_id, moved.how, moved.fresh_if_taken) == ("fresh-one", "new", False)
            assert not locks.lock(derived).locked()  # a continuation of that session need not wait
        assert not locks.lock(derived).locked()  # leaving the block releases nothing twice
    finally:
        await storage.aclose()
