"""POST /v1/chat/completions over the real engine and a scripted upstream."""

from __future__ import annotations

import asyncio
import json

import pytest
from _api_harness import MakeServer, Server, parse_sse
from aiohttp.test_utils import make_mocked_request

from hermes.agent.events import ToolCompleted, ToolStarted
from hermes.ids import derived_session_id
from hermes.server.http.errors import PermissionDenied, RequestValidationError
from hermes.server.http.request_session import session_key
from hermes.server.http.state import LIMITER
from hermes.server.openai.chat import ToolProgress
from hermes.testing.upstream import (
    Chunk,
    Reply,
    Stall,
    call,
    error_reply,
    text_reply,
    tool_reply,
)

URL = "/v1/chat/completions"


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def chunks_of(body: str) -> list[dict]:
    return [f.json() for f in parse_sse(body) if f.event is None and f.data and f.data != "[DONE]"]


def content_of(body: str) -> str:
    return "".join(
        (c["choices"][0]["delta"].get("content") or "") for c in chunks_of(body) if c.get("choices")
    )


def progress_frames(body: str) -> list[dict]:
    return [f.json() for f in parse_sse(body) if f.event == "hermes.tool.progress"]


# ---- JSON ----------------------------------------------------------------------------------


async def test_successful_completion(server: Server) -> None:
    server.upstream.enqueue(text_reply("Hello! How can I help you today?", usage=(200, 80)))
    resp = await server.client.post(URL, json={"model": "hermes-agent", "messages": [user("Hello")]})
    assert resp.status == 200
    data = await resp.json()
    assert data["object"] == "chat.completion"
    assert data["id"].startswith("chatcmpl-") and len(data["id"]) == len("chatcmpl-") + 29
    assert data["model"] == "hermes-agent"
    (choice,) = data["choices"]
    assert choice["message"] == {"role": "assistant", "content": "Hello! How can I help you today?"}
    assert choice["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 200, "completion_tokens": 80, "total_tokens": 280}
    assert "hermes" not in data
    assert "X-Hermes-Completed" not in resp.headers
    assert resp.headers["X-Hermes-Session-Id"].startswith("api-")


async def test_model_is_echoed_and_defaults_to_advertised_name(server: Server) -> None:
    server.upstream.enqueue(text_reply("a"), text_reply("b"))
    data = await (await server.client.post(URL, json={"model": "whatever", "messages": [user("x")]})).json()
    assert data["model"] == "whatever"
    data = await (await server.client.post(URL, json={"messages": [user("y")]})).json()
    assert data["model"] == "hermes-agent"


async def test_stream_string_false_returns_json(server: Server) -> None:
    server.upstream.enqueue(text_reply("Plain JSON"))
    resp = await server.client.post(URL, json={"messages": [user("Hello")], "stream": "false"})
    assert resp.status == 200
    assert "text/event-stream" not in resp.headers["Content-Type"]
    assert (await resp.json())["choices"][0]["message"]["content"] == "Plain JSON"


async def test_system_prompt_layered_on_hermes_prompt(server: Server) -> None:
    server.upstream.enqueue(text_reply("Arrr!"))
    resp = await server.client.post(
        URL,
        json={
            "messages": [
                {"role": "system", "content": "You are helpful."},
                {"role": "system", "content": [{"type": "text", "text": "Be a pirate."}]},
                user("Hello"),
            ]
        },
    )
    assert resp.status == 200
    sent = server.upstream.requests[0].messages
    assert sent[0]["role"] == "system"
    assert "You are hermes" in sent[0]["content"]
    assert "You are helpful.\nBe a pirate." in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": "Hello"}


async def test_history_from_body_and_other_roles_dropped(server: Server) -> None:
    server.upstream.enqueue(text_reply("3"))
    resp = await server.client.post(
        URL,
        json={
            "messages": [
                user("1+1=?"),
                {"role": "assistant", "content": "2"},
                {"role": "tool", "tool_call_id": "x", "content": "noise"},
                {"role": "developer", "content": "ignored"},
                user("Now add 1 more"),
            ]
        },
    )
    assert resp.status == 200
    sent = server.upstream.requests[0].messages
    assert sent[1:] == [user("1+1=?"), {"role": "assistant", "content": "2"}, user("Now add 1 more")]


async def test_stable_session_id_and_session_rows(server: Server) -> None:
    server.upstream.enqueue(text_reply("Hi there!"), text_reply("Fine."), text_reply("Bye."))
    r1 = await server.client.post(URL, json={"messages": [user("Hello")]})
    r2 = await server.client.post(
        URL, json={"messages": [user("Hello"), {"role": "assistant", "content": "Hi there!"}, user("How are you?")]}
    )
    r3 = await server.client.post(URL, json={"messages": [user("Goodbye")]})
    sid1, sid2, sid3 = (r.headers["X-Hermes-Session-Id"] for r in (r1, r2, r3))
    assert sid1 == sid2 == derived_session_id(None, "Hello")
    assert sid3 != sid1
    session = server.sessions.get_session(sid1)
    assert session.source == "api_server"
    roles = [(m.role, m.content) for m in server.sessions.get_messages(sid1)]
    assert roles == [
        ("user", "Hello"),
        ("assistant", "Hi there!"),
        ("user", "How are you?"),
        ("assistant", "Fine."),
    ]
    listed = {s.id for s in server.sessions.list_sessions(source="api_server")}
    assert {sid1, sid3} <= listed


def test_derived_session_id() -> None:
    assert derived_session_id("sys", "hello") == derived_session_id("sys", "hello")
    assert derived_session_id(None, "hi").startswith("api-")
    assert len(derived_session_id(None, "hi")) == 4 + 16
    assert derived_session_id("You are a pirate.", "Hello") != derived_session_id("You are a robot.", "Hello")
    assert derived_session_id(None, "Hello") != derived_session_id(None, "Goodbye")
    assert derived_session_id(None, "x") == derived_session_id("", "x")


async def test_reasoning_content_in_json(server: Server) -> None:
    server.upstream.enqueue(text_reply("42", reasoning="think hard"))
    data = await (await server.client.post(URL, json={"messages": [user("q")]})).json()
    message = data["choices"][0]["message"]
    assert message["content"] == "42"
    assert message["reasoning_content"] == "think hard"


# ---- outcomes ------------------------------------------------------------------------------------


async def test_truncated_answer_uses_length_finish_reason(server: Server) -> None:
    server.upstream.enqueue(text_reply("Here is part one of the answer", finish_reason="length"))
    resp = await server.client.post(URL, json={"messages": [user("tell me everything")]})
    assert resp.status == 200
    data = await resp.json()
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["choices"][0]["message"]["content"] == "Here is part one of the answer"
    assert data["hermes"]["partial"] is True
    assert data["hermes"]["completed"] is False
    assert data["hermes"]["failed"] is False
    assert data["hermes"]["error_code"] == "output_truncated"
    assert resp.headers["X-Hermes-Completed"] == "false"
    assert resp.headers["X-Hermes-Partial"] == "true"
    assert resp.headers["X-Hermes-Error"]


async def test_failure_without_text_is_502_agent_incomplete(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "upstream exploded"))
    resp = await server.client.post(URL, json={"messages": [user("x")]})
    assert resp.status == 502
    data = await resp.json()
    error = data["error"]
    assert error["code"] == "agent_incomplete"
    assert error["type"] == "server_error"
    assert error["message"]
    assert error["hermes"]["failed"] is True
    assert error["hermes"]["completed"] is False
    assert resp.headers["X-Hermes-Completed"] == "false"
    assert resp.headers["X-Hermes-Partial"] == "false"


async def test_stream_failure_reports_error_not_stop(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "upstream model 500"))
    resp = await server.client.post(URL, json={"messages": [user("x")], "stream": True})
    assert resp.status == 200
    body = await resp.text()
    finish = chunks_of(body)[-1]
    assert finish["choices"][0]["finish_reason"] == "error"
    assert finish["error"]["message"]
    assert finish["hermes"]["failed"] is True
    assert body.rstrip().endswith("data: [DONE]")


async def test_stream_truncation_reports_length(server: Server) -> None:
    server.upstream.enqueue(text_reply("half an answer", finish_reason="length"))
    body = await (await server.client.post(URL, json={"messages": [user("x")], "stream": True})).text()
    finish = chunks_of(body)[-1]
    assert finish["choices"][0]["finish_reason"] == "length"
    assert finish["hermes"]["error_code"] == "output_truncated"


async def test_stream_success_has_no_error_or_hermes_block(server: Server) -> None:
    server.upstream.enqueue(text_reply("hi", usage=(5, 2)))
    body = await (await server.client.post(URL, json={"messages": [user("x")], "stream": True})).text()
    finish = chunks_of(body)[-1]
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert "error" not in finish and "hermes" not in finish


# ---- streaming -------------------------------------------------------------------------------


async def test_stream_returns_sse(server: Server) -> None:
    server.upstream.enqueue(text_reply("Hello there friend!"))
    resp = await server.client.post(URL, json={"model": "test", "messages": [user("hi")], "stream": True})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.headers["X-Accel-Buffering"] == "no"
    assert resp.headers["X-Hermes-Session-Id"].startswith("api-")
    body = await resp.text()
    chunks = chunks_of(body)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "test" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    # The text and its order, not the frame boundaries: deltas that queue up before the
    # stream writes them go out as one frame (see test_slow_clients).
    assert content_of(body) == "Hello there friend!"
    assert body.rstrip().endswith("data: [DONE]")


async def test_stream_survives_tool_segments_and_reports_tool_lifecycle(server: Server, tmp_path) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "notes.txt"}, id="call_read_1")], text="Thinking"),
        text_reply(" The answer is 42."),
    )
    resp = await server.client.post(URL, json={"messages": [user("What is the answer?")], "stream": True})
    body = await resp.text()
    # Segments are separated by a blank line that ends the earlier segment's text.
    assert content_of(body) == "Thinking\n\n The answer is 42."
    frames = progress_frames(body)
    assert [(f["status"], f["toolCallId"]) for f in frames] == [
        ("running", "call_read_1"),
        ("completed", "call_read_1"),
    ]
    assert frames[0]["tool"] == "read_file"
    assert frames[0]["label"] == "notes.txt"
    assert '"tool": "read_file"' in body
    # progress never leaks into the assistant text
    assert "notes.txt" not in content_of(body)
    assert body.rstrip().endswith("data: [DONE]")


async def test_internal_tools_are_not_streamed(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply(
            [
                call("_thinking", {"text": "some internal state"}, id="call_internal_1"),
                call("read_file", {"path": "a"}, id="call_read_2"),
            ]
        ),
        text_reply("Found it."),
    )
    body = await (await server.client.post(URL, json={"messages": [user("search")], "stream": True})).text()
    assert "call_internal_1" not in body
    assert "some internal state" not in body
    assert [(f["status"], f["toolCallId"]) for f in progress_frames(body)] == [
        ("running", "call_read_2"),
        ("completed", "call_read_2"),
    ]


def test_tool_progress_skips_internal_and_orphan_completions() -> None:
    progress = ToolProgress()
    assert progress.on_event(ToolStarted("call_internal_1", "_thinking", {}, "")) is None
    assert progress.on_event(ToolCompleted("call_internal_1", "_thinking", "", 0.1, False)) is None
    assert progress.on_event(ToolCompleted("call_orphan_1", "web_search", "ok", 0.1, False)) is None
    running = progress.on_event(ToolStarted("call_1", "terminal", {"command": "ls -la"}, "ls -la"))
    assert running == {
        "tool": "terminal",
        "emoji": "💻",
        "label": "ls -la",
        "toolCallId": "call_1",
        "status": "running",
    }
    done = progress.on_event(ToolCompleted("call_1", "terminal", "ok", 0.25, False))
    assert done is not None and done["status"] == "completed" and done["toolCallId"] == "call_1"
    assert progress.on_event(ToolCompleted("call_1", "terminal", "ok", 0.25, False)) is None


async def test_keepalive_during_quiet_tool_gap(make_server: MakeServer) -> None:
    srv = await make_server(server_keepalive_seconds=0.05)
    srv.upstream.enqueue(
        tool_reply([call("sleep", {"seconds": 0.6})], text="Working"),
        text_reply("...done"),
    )
    body = await (await srv.client.post(URL, json={"messages": [user("do the thing")], "stream": True})).text()
    assert ": keepalive" in body
    assert content_of(body) == "Working\n\n...done"
    assert "[DONE]" in body


async def test_reasoning_streams_as_reasoning_content(server: Server) -> None:
    server.upstream.enqueue(text_reply("42", reasoning="let me think"))
    body = await (await server.client.post(URL, json={"messages": [user("q")], "stream": True})).text()
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks_of(body))
    assert reasoning == "let me think"
    assert content_of(body) == "42"


@pytest.mark.parametrize(
    "setting,headers,expected",
    [
        ("auto", {}, True),
        ("auto", {"X-Stainless-Lang": "python"}, False),
        ("auto", {"X-Stainless-Lang": "js", "X-Hermes-Tool-Progress": "true"}, True),
        ("false", {}, False),
        ("true", {"X-Stainless-Lang": "python"}, True),
    ],
)
async def test_named_events_gating(make_server: MakeServer, setting: str, headers: dict, expected: bool) -> None:
    srv = await make_server(server_tool_progress_events=setting)
    srv.upstream.enqueue(tool_reply([call("read_file", {"path": "a"})]), text_reply("ok"))
    body = await (await srv.client.post(URL, json={"messages": [user("x")], "stream": True}, headers=headers)).text()
    assert ("event: hermes.tool.progress" in body) is expected
    assert content_of(body) == "ok"


async def test_client_disconnect_cancels_turn_and_upstream_request(server: Server) -> None:
    server.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "partial "}), Stall(30)]))
    resp = await server.client.post(URL, json={"messages": [user("long job")], "stream": True})
    # read until the first content arrives, then hang up
    seen = b""
    while b"partial" not in seen:
        seen += await resp.content.readany()
    sid = resp.headers["X-Hermes-Session-Id"]
    resp.close()
    record = server.upstream.requests[0]
    await asyncio.wait_for(record.finished.wait(), 5)
    assert record.client_disconnected is True
    for _ in range(100):
        session = server.sessions.get_session(sid)
        if session.end_reason is not None:
            break
        await asyncio.sleep(0.05)
    assert session.end_reason == "interrupted"
    assert server.app[LIMITER].active == 0


async def test_json_client_disconnect_cancels_turn(server: Server) -> None:
    server.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "x"}), Stall(30)]))
    task = asyncio.ensure_future(server.client.post(URL, json={"messages": [user("slow")]}))
    for _ in range(200):
        if server.upstream.requests:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    record = server.upstream.requests[0]
    await asyncio.wait_for(record.finished.wait(), 5)
    assert record.client_disconnected is True


async def test_concurrency_cap_answers_429(make_server: MakeServer) -> None:
    srv = await make_server(server_max_concurrent_runs=1)
    srv.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "x"}), Stall(30)]))
    first = await srv.client.post(URL, json={"messages": [user("a")], "stream": True})
    await first.content.readany()
    second = await srv.client.post(URL, json={"messages": [user("b")]})
    assert second.status == 429
    assert second.headers["Retry-After"] == "1"
    assert (await second.json())["error"]["code"] == "rate_limit_exceeded"
    first.close()


async def test_default_settings_serve_a_burst_of_100_streams(server: Server) -> None:
    """The default cap (`server_max_concurrent_runs`) takes 100 streams at once on one
    process: every one is answered, none refused (the 429 above is for what passes it)."""
    streams = 100
    assert server.settings.server_max_concurrent_runs >= streams
    server.upstream.enqueue(*(text_reply(f"answer {i} and more words", chunk_delay=0.15) for i in range(streams)))
    peak = 0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, server.app[LIMITER].active)
            await asyncio.sleep(0.01)

    async def one(i: int) -> int:
        resp = await server.client.post(URL, json={"messages": [user(f"q{i}")], "stream": True})
        await resp.read()
        return resp.status

    watcher = asyncio.create_task(watch())
    try:
        statuses = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(streams))), 90)
    finally:
        watcher.cancel()
    assert statuses == [200] * streams
    assert peak > 64  # they really ran at once: past the old default cap


# ---- session headers -------------------------------------------------------------------------


async def test_session_id_header_loads_history_from_store(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("stored reply 1"), text_reply("OK"))
    r1 = await srv.client.post(
        URL,
        json={"messages": [user("stored message 1")]},
        headers={**srv.auth, "X-Hermes-Session-Id": "my-session-123"},
    )
    assert r1.status == 200
    assert r1.headers["X-Hermes-Session-Id"] == "my-session-123"
    r2 = await srv.client.post(
        URL,
        json={
            "messages": [
                user("old msg from client"),
                {"role": "assistant", "content": "old reply"},
                user("new question"),
            ]
        },
        headers={**srv.auth, "X-Hermes-Session-Id": "my-session-123"},
    )
    assert r2.status == 200
    assert r2.headers["X-Hermes-Session-Id"] == "my-session-123"
    sent = srv.upstream.requests[1].messages[1:]
    assert sent == [user("stored message 1"), {"role": "assistant", "content": "stored reply 1"}, user("new question")]
    assert srv.sessions.get_session("my-session-123").source == "api_server"


async def test_session_id_header_requires_api_key(server: Server) -> None:
    resp = await server.client.post(URL, json={"messages": [user("x")]}, headers={"X-Hermes-Session-Id": "s1"})
    assert resp.status == 403
    assert "API key" in (await resp.json())["error"]["message"]
    assert server.upstream.requests == []


@pytest.mark.parametrize(
    "value,message",
    [("../etc", "Invalid session ID"), ("a b", "Invalid session ID"), ("x" * 300, "Session ID too long")],
)
async def test_session_id_header_validated(auth_server: Server, value: str, message: str) -> None:
    resp = await auth_server.client.post(
        URL, json={"messages": [user("x")]}, headers={**auth_server.auth, "X-Hermes-Session-Id": value}
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["message"] == message
    assert auth_server.upstream.requests == []


async def test_session_key_echoed_on_json_and_stream(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("ok"), text_reply("ok"), text_reply("ok"))
    headers = {**srv.auth, "X-Hermes-Session-Key": "webui:user-42", "X-Hermes-Session-Id": "transcript-xyz"}
    resp = await srv.client.post(URL, json={"messages": [user("hi")]}, headers=headers)
    assert resp.headers["X-Hermes-Session-Key"] == "webui:user-42"
    assert resp.headers["X-Hermes-Session-Id"] == "transcript-xyz"
    resp = await srv.client.post(URL, json={"messages": [user("hi")], "stream": True}, headers=headers)
    await resp.text()
    assert resp.headers["X-Hermes-Session-Key"] == "webui:user-42"
    resp = await srv.client.post(URL, json={"messages": [user("hi")]}, headers=srv.auth)
    assert "X-Hermes-Session-Key" not in resp.headers


async def test_session_key_rejected_without_api_key(server: Server) -> None:
    resp = await server.client.post(URL, json={"messages": [user("hi")]}, headers={"X-Hermes-Session-Key": "whatever"})
    assert resp.status == 403
    assert server.upstream.requests == []


async def test_session_key_too_long(auth_server: Server) -> None:
    resp = await auth_server.client.post(
        URL, json={"messages": [user("hi")]}, headers={**auth_server.auth, "X-Hermes-Session-Key": "x" * 1000}
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["message"] == "Session key too long"


async def test_session_key_control_characters(auth_server: Server) -> None:
    # aiohttp's client refuses to send CR/LF, so the parser is driven with a raw request.
    request = make_mocked_request("POST", URL, headers={"X-Hermes-Session-Key": "bad\rvalue"}, app=auth_server.app)
    with pytest.raises(RequestValidationError) as info:
        session_key(request)
    assert info.value.status == 400
    assert info.value.message == "Invalid session key"
    request = make_mocked_request("POST", URL, headers={"X-Hermes-Session-Key": "  "}, app=auth_server.app)
    assert session_key(request) is None


async def test_session_key_parser_without_server_key(server: Server) -> None:
    request = make_mocked_request("POST", URL, headers={"X-Hermes-Session-Key": "k"}, app=server.app)
    with pytest.raises(PermissionDenied):
        session_key(request)


# ---- multimodal ----------------------------------------------------------------------------


async def test_image_parts_are_forwarded(server: Server) -> None:
    server.upstream.enqueue(text_reply("a cat"))
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    ]
    resp = await server.client.post(URL, json={"messages": [{"role": "user", "content": content}]})
    assert resp.status == 200
    sent = server.upstream.requests[0].messages[-1]["content"]
    assert sent == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    ]


# ---- bad input: documented 4xx, nothing reaches the model or the store ----------------------------


BAD_BODIES = [
    ({"model": "test"}, "messages", None),
    ({"messages": []}, "messages", None),
    ({"messages": "hi"}, "messages", None),
    ({"messages": {"role": "user"}}, "messages", None),
    ({"messages": [42]}, "messages[0]", None),
    ({"messages": [{"content": "x"}]}, "messages[0].role", None),
    ({"messages": [{"role": 7, "content": "x"}]}, "messages[0].role", None),
    ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content", None),
    (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
        "messages[0].content",
        "invalid_content_part",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
        "messages[0].content",
        "unsupported_content_type",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "audio"}]}]},
        "messages[0].content",
        "unsupported_content_type",
    ),
    ({"messages": [{"role": "user", "content": [{"type": {}}]}]}, "messages[0].content", "invalid_content_part"),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": ""}}]}]},
        "messages[0].content",
        "invalid_image_url",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]}]},
        "messages[0].content",
        "invalid_image_url",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:text/plain,hi"}}]}
            ]
        },
        "messages[0].content",
        "unsupported_content_type",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}}],
                }
            ]
        },
        "messages[0].content",
        "invalid_content_part",
    ),
    ({"messages": [{"role": "user", "content": "x" * 70_000}]}, "messages[0].content", "content_too_long"),
    ({"messages": [{"role": "system", "content": "You are helpful."}]}, "messages", "no_user_message"),
    ({"messages": [{"role": "user", "content": "   "}]}, "messages", "no_user_message"),
    ({"messages": [user("x")], "model": 5}, "model", "invalid_type"),
    ({"messages": [user("x")], "metadata": "nope"}, "metadata", "invalid_type"),
]


@pytest.mark.parametrize("body,param,code", BAD_BODIES)
async def test_bad_bodies_are_400(server: Server, body: dict, param: str, code: str | None) -> None:
    resp = await server.client.post(URL, json=body)
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    if code:
        assert error["code"] == code
    assert server.upstream.requests == []
    assert server.sessions.count_sessions() == 0


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"', b"", b"\xff\xfe", b"{" * 5000])
async def test_invalid_json_is_400(server: Server, raw: bytes) -> None:
    resp = await server.client.post(URL, data=raw, headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert "JSON" in (await resp.json())["error"]["message"]
    assert server.upstream.requests == []


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "tab\tkey", "ключ".encode().decode("latin-1")])
async def test_invalid_idempotency_key_is_400(server: Server, key: str) -> None:
    resp = await server.client.post(URL, json={"messages": [user("x")]}, headers={"Idempotency-Key": key})
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "invalid_idempotency_key"
    assert server.upstream.requests == []


async def test_invalid_content_length_is_400(server: Server) -> None:
    reader, writer = await asyncio.open_connection(server.client.host, server.client.port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
    await writer.drain()
    head = await reader.read(200)
    writer.close()
    # aiohttp's HTTP parser rejects it before the app runs (plain-text body, not our envelope).
    assert head.split(b"\r\n", 1)[0].split(b" ")[1] == b"400"


async def test_api_sessions_visible_to_hermes_sessions_list(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from hermes.cli.main import app as cli_app

    server.upstream.enqueue(text_reply("listed"), text_reply("also listed"))
    r1 = await server.client.post(URL, json={"messages": [user("from chat")]})
    r2 = await server.client.post("/v1/responses", json={"input": "from responses"})
    monkeypatch.setenv("HERMES_HOME", str(server.settings.home))
    result = CliRunner().invoke(
        cli_app, ["sessions", "list", "--source", "api_server", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    ids = {s["id"] for s in json.loads(result.output)["data"]}
    assert {r1.headers["X-Hermes-Session-Id"], r2.headers["X-Hermes-Session-Id"]} <= ids


async def test_a_search_right_after_a_turn_finds_its_messages(server: Server) -> None:
    """The search index is filled in batches after the commit; a search indexes what waits
    first, so the turn's messages are found at once."""
    server.upstream.enqueue(text_reply("The capybara is the largest rodent."))
    resp = await server.client.post(URL, json={"messages": [user("tell me about the capybara")]})
    assert resp.status == 200
    found = await server.client.get("/api/search", params={"q": "capybara"})
    hits = (await found.json())["data"]
    assert sorted(hit["role"] for hit in hits) == ["assistant", "user"]
    assert {hit["session"]["id"] for hit in hits} == {resp.headers["X-Hermes-Session-Id"]}
