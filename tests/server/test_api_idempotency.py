"""Idempotency-Key on chat completions and responses (JSON and SSE), end to end: a retry replays
the answer and touches no session."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _api_harness import Server
from _runs_fixtures import wait_for

from hermes.testing.upstream import Reply, Sleep, text_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"


def slow(text: str) -> Reply:
    reply = text_reply(text)
    return Reply([Sleep(0.3), *reply.steps])


async def test_concurrent_identical_chat_requests_run_once(server: Server) -> None:
    server.upstream.enqueue(slow("once"))
    body = {"messages": [{"role": "user", "content": "hi"}]}
    headers = {"Idempotency-Key": "key-1"}
    r1, r2 = await asyncio.gather(
        server.client.post("/v1/chat/completions", json=body, headers=headers),
        server.client.post("/v1/chat/completions", json=body, headers=headers),
    )
    d1, d2 = await r1.json(), await r2.json()
    assert d1 == d2
    assert d1["choices"][0]["message"]["content"] == "once"
    assert len(server.upstream.requests) == 1
    # a later replay is served from the cache
    r3 = await server.client.post("/v1/chat/completions", json=body, headers=headers)
    assert await r3.json() == d1
    assert r3.headers["X-Hermes-Session-Id"] == r1.headers["X-Hermes-Session-Id"]
    assert len(server.upstream.requests) == 1


async def test_different_payload_same_key_runs_again(server: Server) -> None:
    server.upstream.enqueue(text_reply("a"), text_reply("b"))
    headers = {"Idempotency-Key": "key-2"}
    r1 = await server.client.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": "a"}]}, headers=headers
    )
    r2 = await server.client.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": "b"}]}, headers=headers
    )
    assert (await r1.json())["choices"][0]["message"]["content"] == "a"
    assert (await r2.json())["choices"][0]["message"]["content"] == "b"
    assert len(server.upstream.requests) == 2


async def test_responses_replay_returns_same_response_and_stores_once(server: Server) -> None:
    server.upstream.enqueue(slow("stored once"))
    headers = {"Idempotency-Key": "resp-key"}
    r1, r2 = await asyncio.gather(
        server.client.post("/v1/responses", json={"input": "hi"}, headers=headers),
        server.client.post("/v1/responses", json={"input": "hi"}, headers=headers),
    )
    d1, d2 = await r1.json(), await r2.json()
    assert d1["id"] == d2["id"]
    assert len(server.upstream.requests) == 1
    assert len(server.responses) == 1


async def test_cancelled_waiter_does_not_cancel_shared_turn(server: Server) -> None:
    server.upstream.enqueue(slow("survives"))
    body = {"messages": [{"role": "user", "content": "keep going"}]}
    headers = {"Idempotency-Key": "key-3"}
    first = asyncio.ensure_future(server.client.post("/v1/chat/completions", json=body, headers=headers))
    for _ in range(200):
        if server.upstream.requests:
            break
        await asyncio.sleep(0.01)
    first.cancel()  # the client gives up; the shared turn keeps running
    r2 = await server.client.post("/v1/chat/completions", json=body, headers=headers)
    assert (await r2.json())["choices"][0]["message"]["content"] == "survives"
    assert len(server.upstream.requests) == 1
    assert server.upstream.requests[0].client_disconnected is False


async def test_a_streamed_retry_replays_the_recorded_stream(server: Server) -> None:
    server.upstream.enqueue(text_reply("one"))
    body = {"messages": [{"role": "user", "content": "s"}], "stream": True}
    headers = {"Idempotency-Key": "stream-key"}
    first = await server.client.post("/v1/chat/completions", json=body, headers=headers)
    again = await server.client.post("/v1/chat/completions", json=body, headers=headers)
    text = await first.text()
    assert "one" in text and text.rstrip().endswith("data: [DONE]")
    assert await again.text() == text
    assert again.headers["Content-Type"].startswith("text/event-stream")
    assert again.headers["X-Hermes-Session-Id"] == first.headers["X-Hermes-Session-Id"]
    assert len(server.upstream.requests) == 1


def _continuation(url: str, stream: bool) -> dict[str, Any]:
    if url == CHAT:
        messages = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "A1."}]
        return {"messages": [*messages, {"role": "user", "content": "u2"}], "stream": stream}
    items = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "A1."}]
    return {"input": [*items, {"role": "user", "content": "u2"}], "stream": stream}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("url", [CHAT, RESPONSES], ids=["chat", "responses"])
async def test_a_retried_continuation_replays_and_makes_no_fork(server: Server, url: str, stream: bool) -> None:
    server.upstream.enqueue(text_reply("A1."), text_reply("A2."))
    opening = {"messages": [{"role": "user", "content": "u1"}]} if url == CHAT else {"input": "u1"}
    sid = (await server.client.post(url, json=opening)).headers["X-Hermes-Session-Id"]
    headers = {"Idempotency-Key": f"retry-{url}-{stream}"}
    first = await server.client.post(url, json=_continuation(url, stream), headers=headers)
    answer = await first.read()
    assert first.status == 200 and first.headers["X-Hermes-Session-Placement"] == "continued"
    assert first.headers["X-Hermes-Session-Id"] == sid
    sessions, messages = server.sessions.count_sessions(), len(server.sessions.get_messages(sid))

    retry = await server.client.post(url, json=_continuation(url, stream), headers=headers)
    assert retry.status == 200 and await retry.read() == answer
    assert retry.headers["X-Hermes-Session-Id"] == sid
    assert server.sessions.count_sessions() == sessions  # no fork, no new session
    assert len(server.sessions.get_messages(sid)) == messages
    assert len(server.upstream.requests) == 2


@pytest.mark.parametrize("url", [CHAT, RESPONSES], ids=["chat", "responses"])
async def test_a_streamed_retry_while_the_first_still_streams_waits_for_its_answer(server: Server, url: str) -> None:
    server.upstream.enqueue(slow("streamed once"))
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "in flight"}]} if url == CHAT else {
        "input": "in flight"
    }
    headers = {"Idempotency-Key": f"in-flight-{url}"}

    async def post() -> tuple[int, str, str]:
        resp = await server.client.post(url, json={**body, "stream": True}, headers=headers)
        return resp.status, await resp.text(), resp.headers["X-Hermes-Session-Id"]

    first = asyncio.ensure_future(post())
    await wait_for(lambda: server.upstream.requests)  # the first is running its turn
    retried = await post()
    answered = await first
    assert answered[0] == 200 and "streamed once" in answered[1]
    assert retried == answered  # the same stream, the same session
    assert len(server.upstream.requests) == 1
    assert server.sessions.count_sessions() == 1


RUNS = "/v1/runs"


def _request(url: str, text: str) -> dict[str, Any]:
    if url == CHAT:
        return {"messages": [{"role": "user", "content": text}]}
    return {"input": text}


async def _answered(server: Server, url: str, resp: Any) -> str:
    """The id of what answered (a completion, a response, a run), once its work is done."""
    assert resp.status == (202 if url == RUNS else 200), await resp.text()
    data = await resp.json()
    if url != RUNS:
        return str(data["id"])
    await (await server.client.get(f"{RUNS}/{data['run_id']}/events")).text()
    return str(data["run_id"])


@pytest.mark.parametrize("url", [CHAT, RESPONSES, RUNS])
async def test_one_idempotency_rule_for_chat_responses_and_runs(server: Server, url: str) -> None:
    """The same key and payload: one piece of work, shared by concurrent requests and
    replayed later; the same key with another payload: new work, which the key then
    replays, and the first payload again is new work once more, except for runs, which
    refuse another payload under a used key (409 `idempotency_key_conflict`)."""
    server.upstream.enqueue(slow("a"), text_reply("b"), text_reply("a again"))
    headers = {"Idempotency-Key": "one-rule"}

    async def post(text: str) -> Any:
        return await server.client.post(url, json=_request(url, text), headers=headers)

    first, second = await asyncio.gather(post("a"), post("a"))
    ids = {await _answered(server, url, first), await _answered(server, url, second)}
    assert len(ids) == 1 and len(server.upstream.requests) == 1
    (a_id,) = ids
    later = await post("a")
    assert await _answered(server, url, later) == a_id
    assert len(server.upstream.requests) == 1
    if url == RUNS:  # a run's replay says so, and shows the run as it is now
        assert later.headers["Idempotency-Replayed"] == "true"
        assert (await later.json())["status"] == "completed"

    other = await post("b")
    if url == RUNS:
        assert other.status == 409
        assert (await other.json())["error"]["code"] == "idempotency_key_conflict"
        assert len(server.upstream.requests) == 1
        return
    b_id = await _answered(server, url, other)
    assert b_id != a_id and len(server.upstream.requests) == 2
    assert await _answered(server, url, await post("b")) == b_id
    assert await _answered(server, url, await post("a")) not in (a_id, b_id)
    assert len(server.upstream.requests) == 3
