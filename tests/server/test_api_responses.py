"""POST /v1/responses (JSON and SSE), GET/DELETE /v1/responses/{id}, chaining."""

from __future__ import annotations

import asyncio
import json

import pytest
from _api_harness import SERVER_KEY, MakeServer, Server, parse_sse
from state_db import stored_response

from hermes.testing.upstream import (
    Chunk,
    Reply,
    Stall,
    call,
    error_reply,
    text_reply,
    tool_reply,
)

URL = "/v1/responses"


def events_of(body: str) -> list[dict]:
    return [f.json() for f in parse_sse(body) if f.event and f.event.startswith("response.")]


async def post(srv: Server, body: dict, **headers: str):
    return await srv.client.post(URL, json=body, headers={**srv.auth, **headers})


# ---- JSON --------------------------------------------------------------------------------------


async def test_string_input(server: Server) -> None:
    server.upstream.enqueue(text_reply("Paris is the capital of France.", usage=(100, 50)))
    resp = await post(server, {"model": "hermes-agent", "input": "What is the capital of France?"})
    assert resp.status == 200
    data = await resp.json()
    assert data["object"] == "response"
    assert data["id"].startswith("resp_") and len(data["id"]) == 5 + 28
    assert data["status"] == "completed"
    assert data["model"] == "hermes-agent"
    assert len(data["output"]) == 1
    item = data["output"][0]
    assert item["type"] == "message" and item["role"] == "assistant" and item["id"].startswith("msg_")
    assert item["content"][0] == {"type": "output_text", "text": "Paris is the capital of France.", "annotations": []}
    assert data["usage"] == {"input_tokens": 100, "output_tokens": 50, "total_tokens": 150}
    sid = resp.headers["X-Hermes-Session-Id"]
    assert server.sessions.get_session(sid).source == "api_server"


async def test_array_input_history_and_skipped_items(server: Server) -> None:
    server.upstream.enqueue(text_reply("4"))
    resp = await post(
        server,
        {
            "input": [
                {"role": "user", "content": "Hello"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
                {"role": "developer", "content": "Answer tersely."},
                "What is 2+2?",
            ]
        },
    )
    assert resp.status == 200
    sent = server.upstream.requests[0].messages
    assert "Answer tersely." in sent[0]["content"]
    assert sent[1:] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "What is 2+2?"},
    ]


async def test_instructions_layered_on_system_prompt(server: Server) -> None:
    server.upstream.enqueue(text_reply("Ahoy!"))
    await post(server, {"input": "Hello", "instructions": "Talk like a pirate."})
    system = server.upstream.requests[0].messages[0]
    assert system["role"] == "system"
    assert "You are hermes" in system["content"] and system["content"].endswith("Talk like a pirate.")


async def test_tool_calls_in_output(server: Server, tmp_path) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "missing.txt"}, id="call_abc123")]),
        text_reply("The file is missing."),
    )
    data = await (await post(server, {"input": "read it"})).json()
    output = data["output"]
    assert [i["type"] for i in output] == ["function_call", "function_call_output", "message"]
    assert output[0]["name"] == "read_file"
    assert json.loads(output[0]["arguments"]) == {"path": "missing.txt"}
    assert output[0]["call_id"] == "call_abc123"
    assert output[0]["id"].startswith("fc_")
    assert output[1]["call_id"] == "call_abc123"
    assert isinstance(output[1]["output"], str) and "missing.txt" in output[1]["output"]
    assert output[1]["id"].startswith("fco_")
    assert output[2]["content"][0]["text"] == "The file is missing."


async def test_failure_is_502_and_stored_failed(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "upstream exploded"))
    resp = await post(server, {"input": "x"})
    assert resp.status == 502
    error = (await resp.json())["error"]
    assert error["code"] == "agent_incomplete"
    assert error["hermes"]["failed"] is True
    stored = await (await server.client.get(f"{URL}/{error['response_id']}")).json()
    assert stored["status"] == "failed"
    assert stored["error"]["code"]


async def test_truncated_answer_is_incomplete(server: Server) -> None:
    server.upstream.enqueue(text_reply("half", finish_reason="length"))
    resp = await post(server, {"input": "x"})
    assert resp.status == 200
    data = await resp.json()
    assert data["status"] == "incomplete"
    assert data["incomplete_details"] == {"reason": "max_output_tokens"}
    assert data["output"][-1]["content"][0]["text"] == "half"
    assert resp.headers["X-Hermes-Partial"] == "true"


# ---- chaining -----------------------------------------------------------------------------------


async def test_previous_response_id_chains_session_history_and_instructions(server: Server) -> None:
    server.upstream.enqueue(text_reply("2"), text_reply("3"))
    r1 = await post(server, {"input": "What is 1+1?", "instructions": "Be a pirate"})
    d1 = await r1.json()
    r2 = await post(server, {"input": "Now add 1 more", "previous_response_id": d1["id"]})
    d2 = await r2.json()
    assert r2.status == 200
    assert r1.headers["X-Hermes-Session-Id"] == r2.headers["X-Hermes-Session-Id"]
    second = server.upstream.requests[1].messages
    assert second[0]["content"].endswith("Be a pirate")
    assert second[1:] == [
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "Now add 1 more"},
    ]
    assert d2["previous_response_id"] == d1["id"]
    assert d2["instructions"] == "Be a pirate"
    # the stored transcript holds each message once
    assert server.responses.get(d1["id"])["conversation_history"] == [
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "2"},
    ]
    stored = server.responses.get(d2["id"])["conversation_history"]
    assert stored == second[1:] + [{"role": "assistant", "content": "3"}]
    # one session row, four messages
    sid = r1.headers["X-Hermes-Session-Id"]
    assert [m.content for m in server.sessions.get_messages(sid)] == ["What is 1+1?", "2", "Now add 1 more", "3"]


async def test_previous_response_outputs_only_current_turn_items(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "old.txt"}, id="call_old")]),
        text_reply("old"),
        tool_reply([call("read_file", {"path": "new.txt"}, id="call_new")]),
        text_reply("new"),
    )
    d1 = await (await post(server, {"input": "Read old file"})).json()
    d2 = await (await post(server, {"input": "Read new file", "previous_response_id": d1["id"]})).json()
    text = json.dumps(d2["output"])
    assert "call_new" in text
    assert "call_old" not in text and "old.txt" not in text
    history = server.responses.get(d2["id"])["conversation_history"]
    assert sum(1 for m in history if m.get("tool_call_id") == "call_old") == 1


async def test_unknown_previous_response_is_404(server: Server) -> None:
    resp = await post(server, {"input": "follow up", "previous_response_id": "resp_nonexistent"})
    assert resp.status == 404
    error = (await resp.json())["error"]
    assert error["message"] == "Previous response not found: resp_nonexistent"
    assert error["param"] == "previous_response_id"
    assert server.upstream.requests == []


@pytest.mark.parametrize("store", [False, "false", "0"])
async def test_store_false_stores_nothing(server: Server, store) -> None:
    server.upstream.enqueue(text_reply("OK"))
    data = await (await post(server, {"input": "Hello", "store": store, "conversation": "eph"})).json()
    assert server.responses.get(data["id"]) is None
    assert server.responses.get_conversation("eph") is None
    assert (await server.client.get(f"{URL}/{data['id']}")).status == 404


async def test_conversation_history_beats_previous_response(server: Server) -> None:
    server.upstream.enqueue(text_reply("a"), text_reply("b"))
    d1 = await (await post(server, {"input": "first"})).json()
    await post(
        server,
        {
            "input": "second",
            "previous_response_id": d1["id"],
            "conversation_history": [
                {"role": "user", "content": "explicit"},
                {"role": "assistant", "content": "history"},
            ],
        },
    )
    assert server.upstream.requests[1].messages[1:] == [
        {"role": "user", "content": "explicit"},
        {"role": "assistant", "content": "history"},
        {"role": "user", "content": "second"},
    ]


async def test_truncation_auto_limits_history(server: Server) -> None:
    long_history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"msg {i}"} for i in range(150)]
    server.responses.put(
        "resp_prev", {"response": {"id": "resp_prev"}, "conversation_history": long_history, "session_id": "api-long"}
    )
    server.upstream.enqueue(text_reply("OK"), text_reply("OK"))
    assert (
        await post(server, {"input": "follow up", "previous_response_id": "resp_prev", "truncation": "auto"})
    ).status == 200
    assert (await post(server, {"input": "follow up", "previous_response_id": "resp_prev"})).status == 200
    truncated, full = (len(r.messages) - 2 for r in server.upstream.requests)
    assert truncated == 100
    assert full == 150


# ---- conversations ------------------------------------------------------------------------------


async def test_conversation_names_chain_and_isolate(server: Server) -> None:
    server.upstream.enqueue(text_reply("First"), text_reply("Second"), text_reply("Other"))
    d1 = await (await post(server, {"input": "hello", "conversation": "test-conv"})).json()
    assert server.responses.get_conversation("test-conv") == d1["id"]
    d2 = await (await post(server, {"input": "follow up", "conversation": "test-conv"})).json()
    assert server.responses.get_conversation("test-conv") == d2["id"]
    assert server.upstream.requests[1].messages[1:3] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "First"},
    ]
    await post(server, {"input": "other", "conversation": "conv-b"})
    assert len(server.upstream.requests[2].messages) == 2
    assert server.responses.get_conversation("conv-b") != server.responses.get_conversation("test-conv")


async def test_conversation_and_previous_response_conflict(server: Server) -> None:
    resp = await post(server, {"input": "hi", "conversation": "c", "previous_response_id": "resp_abc"})
    assert resp.status == 400
    assert "Cannot use both" in (await resp.json())["error"]["message"]


async def test_conversation_reuse_after_eviction_starts_fresh(make_server: MakeServer) -> None:
    srv = await make_server(server_response_store_size=1)
    srv.upstream.enqueue(text_reply("First"), text_reply("Other"), text_reply("Restarted"))
    assert (await post(srv, {"input": "hello", "conversation": "my-chat"})).status == 200
    await post(srv, {"input": "other"})
    assert srv.responses.get_conversation("my-chat") is None
    resp = await post(srv, {"input": "hello again", "conversation": "my-chat"})
    assert resp.status == 200
    assert len(srv.upstream.requests[2].messages) == 2


# ---- GET / DELETE -------------------------------------------------------------------------------


async def test_get_and_delete_stored_response(server: Server) -> None:
    server.upstream.enqueue(text_reply("Hello!"))
    data = await (await post(server, {"input": "Hi", "conversation": "c1"})).json()
    got = await server.client.get(f"{URL}/{data['id']}")
    assert got.status == 200
    assert await got.json() == data
    deleted = await server.client.delete(f"{URL}/{data['id']}")
    assert await deleted.json() == {"id": data["id"], "object": "response", "deleted": True}
    assert server.responses.get_conversation("c1") is None
    assert (await server.client.get(f"{URL}/{data['id']}")).status == 404
    again = await server.client.delete(f"{URL}/{data['id']}")
    assert again.status == 404
    assert (await again.json())["error"]["code"] == "response_not_found"


# ---- SSE -----------------------------------------------------------------------------------------


async def test_stream_event_sequence(server: Server) -> None:
    server.upstream.enqueue(text_reply("Hello world"))
    resp = await post(server, {"input": "hi", "stream": True})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    body = await resp.text()
    events = events_of(body)
    types = [e["type"] for e in events]
    # The text in one or more deltas (queued deltas are merged, see test_stream_coalescing.py).
    shape = [t for i, t in enumerate(types) if not (t == "response.output_text.delta" == types[i - 1])]
    assert shape == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    message_events = [e for e in events if "item_id" in e]
    assert len({e["item_id"] for e in message_events}) == 1
    assert all((e["output_index"], e["content_index"]) == (0, 0) for e in message_events)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert all(f.event == f.json()["type"] for f in parse_sse(body))
    assert '"logprobs": []' in body
    assert events[0]["response"]["status"] == "in_progress"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == "Hello world"
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"][-1]["content"][0]["text"] == "Hello world"
    # stored for GET
    got = await (await server.client.get(f"{URL}/{completed['id']}")).json()
    assert got["status"] == "completed"
    assert got["output"][-1]["content"][0]["text"] == "Hello world"


async def test_stream_function_call_items(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "/tmp/none.txt"}, id="call_123")], text="Checking."),
        text_reply("Done."),
    )
    body = await (await post(server, {"input": "read the file", "stream": True})).text()
    events = events_of(body)
    items = [(e["type"], e["item"]["type"]) for e in events if e["type"].startswith("response.output_item")]
    assert items == [
        ("response.output_item.added", "message"),
        ("response.output_item.done", "message"),
        ("response.output_item.added", "function_call"),
        ("response.output_item.done", "function_call"),
        ("response.output_item.added", "function_call_output"),
        ("response.output_item.done", "function_call_output"),
        ("response.output_item.added", "message"),
        ("response.output_item.done", "message"),
    ]
    call_done = next(
        e["item"] for e in events if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    )
    assert (
        call_done["call_id"] == "call_123" and call_done["name"] == "read_file" and call_done["status"] == "completed"
    )
    output = next(
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call_output"
    )
    assert output["output"][0]["type"] == "input_text"
    assert "none.txt" in output["output"][0]["text"]
    assert '"call_id": "call_123"' in body
    completed = events[-1]["response"]
    assert [i["type"] for i in completed["output"]] == ["message", "function_call", "function_call_output", "message"]


async def test_stream_failure_ends_with_response_failed(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "boom"))
    body = await (await post(server, {"input": "x", "stream": True})).text()
    last = events_of(body)[-1]
    assert last["type"] == "response.failed"
    assert last["response"]["status"] == "failed"
    assert last["response"]["error"]["message"]


async def test_streamed_chain_stores_transcript_once(server: Server) -> None:
    server.upstream.enqueue(text_reply("2"), text_reply("3"))
    d1 = await (await post(server, {"input": "What is 1+1?"})).json()
    body = await (
        await post(server, {"input": "Now add 1 more", "previous_response_id": d1["id"], "stream": True})
    ).text()
    rid = events_of(body)[-1]["response"]["id"]
    assert server.responses.get(rid)["conversation_history"] == [
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "Now add 1 more"},
        {"role": "assistant", "content": "3"},
    ]


async def test_stream_disconnect_stores_incomplete_snapshot(server: Server) -> None:
    server.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "partial output"}), Stall(30)]))
    resp = await post(server, {"input": "will disconnect", "stream": True})
    seen = b""
    while b"partial output" not in seen:
        seen += await resp.content.readany()
    rid = events_of(seen.decode().rsplit("\n\n", 1)[0] + "\n\n")[0]["response"]["id"]
    resp.close()
    record = server.upstream.requests[0]
    await asyncio.wait_for(record.finished.wait(), 5)
    assert record.client_disconnected
    for _ in range(100):
        stored = server.responses.get(rid)
        if stored and stored["response"]["status"] == "incomplete":
            break
        await asyncio.sleep(0.05)
    assert stored["response"]["status"] == "incomplete"
    text = "".join(p["text"] for i in stored["response"]["output"] if i["type"] == "message" for p in i["content"])
    assert "partial output" in text
    assert stored["conversation_history"][0] == {"role": "user", "content": "will disconnect"}
    assert {"role": "assistant", "content": "partial output"} in [
        {"role": m["role"], "content": m["content"]} for m in stored["conversation_history"]
    ]


async def test_server_shutdown_mid_stream_stores_incomplete_snapshot(make_server: MakeServer) -> None:
    srv = await make_server()
    srv.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "cut short"}), Stall(30)]))
    resp = await post(srv, {"input": "shutdown", "stream": True})
    seen = b""
    while b"cut short" not in seen:
        seen += await resp.content.readany()
    rid = events_of(seen.decode().split("\n\n", 2)[0] + "\n\n")[0]["response"]["id"]
    await srv.client.close()  # the server cancels the handler, then closes its stores
    stored = stored_response(srv.settings.home, rid)
    assert stored is not None
    assert stored["response"]["status"] == "incomplete"
    assert "cut short" in json.dumps(stored["response"]["output"])


async def test_session_key_echoed(make_server: MakeServer) -> None:
    srv = await make_server(server_key=SERVER_KEY)
    srv.upstream.enqueue(text_reply("ok"), text_reply("ok"))
    resp = await post(srv, {"input": "hello", "store": False}, **{"X-Hermes-Session-Key": "webui:chan-1"})
    assert resp.headers["X-Hermes-Session-Key"] == "webui:chan-1"
    resp = await post(srv, {"input": "hello", "stream": True}, **{"X-Hermes-Session-Key": "webui:chan-1"})
    await resp.text()
    assert resp.headers["X-Hermes-Session-Key"] == "webui:chan-1"


# ---- bad input ----------------------------------------------------------------------------------


BAD = [
    ({"model": "test"}, "input", "missing_input"),
    ({"input": None}, "input", "missing_input"),
    ({"input": 42}, "input", "invalid_input"),
    ({"input": {"role": "user"}}, "input", "invalid_input"),
    ({"input": ""}, "input", "no_user_message"),
    ({"input": []}, "input", "no_user_message"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, "input", "no_user_message"),
    ({"input": [{"type": "web_search_call"}]}, "input[0].type", "unsupported_input_item"),
    ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role", "invalid_role"),
    ({"input": [{"role": {}, "content": "x"}]}, "input[0].role", "invalid_role"),
    ({"input": [{"type": {}, "role": "user", "content": "x"}]}, "input[0].type", "invalid_input_item"),
    (
        {"input": [{"role": "user", "content": [{"type": ["text"], "text": "x"}]}]},
        "input[0].content",
        "invalid_content_part",
    ),
    ({"input": [{"role": "user", "content": 5}]}, "input[0].content", "invalid_content"),
    ({"input": "x", "instructions": 5}, "instructions", "invalid_type"),
    ({"input": "x", "model": ["a"]}, "model", "invalid_type"),
    ({"input": "x", "previous_response_id": 7}, "previous_response_id", "invalid_type"),
    ({"input": "x", "previous_response_id": ""}, "previous_response_id", "invalid_previous_response_id"),
    ({"input": "x", "conversation": "a\nb"}, "conversation", "invalid_conversation"),
    ({"input": "x", "conversation_history": "nope"}, "conversation_history", "invalid_conversation_history"),
    (
        {"input": "x", "conversation_history": [{"role": "user"}]},
        "conversation_history[0]",
        "invalid_conversation_history",
    ),
    (
        {"input": "x", "conversation_history": [{"role": "tool", "content": "x"}]},
        "conversation_history[0].role",
        "invalid_conversation_history",
    ),
    ({"input": "x", "truncation": "sometimes"}, "truncation", "invalid_truncation"),
    ({"input": "x", "metadata": []}, "metadata", "invalid_type"),
    (
        {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
        "input[0].content",
        "unsupported_content_type",
    ),
]


@pytest.mark.parametrize("body,param,code", BAD)
async def test_bad_bodies_are_400(server: Server, body: dict, param: str, code: str) -> None:
    resp = await post(server, body)
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert (error["param"], error["code"]) == (param, code)
    assert server.upstream.requests == []
    assert len(server.responses) == 0
    assert server.sessions.count_sessions() == 0


async def test_invalid_json_is_400(server: Server) -> None:
    resp = await server.client.post(URL, data="not json", headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert (await resp.json())["error"]["message"] == "Invalid JSON in request body"


async def test_stream_carries_the_tool_schemas_once(server: Server) -> None:
    """36 client tools of a few hundred bytes each: one copy in the raw stream (the end
    event), none in response.created / response.in_progress; the stored response has them."""
    tools = [
        {"type": "function", "name": f"client_tool_{n}", "description": "d" * 200,
         "parameters": {"type": "object", "properties": {"x": {"type": "string", "description": f"marker-{n}"}}}}
        for n in range(36)
    ]  # fmt: skip
    server.upstream.enqueue(text_reply("One line."))
    resp = await post(server, {"model": "hermes-agent", "input": "hi", "tools": tools, "stream": True})
    raw = await resp.text()
    assert raw.count('"client_tool_7"') == 1 and raw.count("marker-35") == 1
    events = events_of(raw)
    start = {e["type"]: e["response"] for e in events if e["type"] in ("response.created", "response.in_progress")}
    assert [r["tools"] for r in start.values()] == [[], []]
    end = events[-1]
    assert end["type"] == "response.completed" and [t["name"] for t in end["response"]["tools"]] == [
        t["name"] for t in tools
    ]
    stored = await server.client.get(f"{URL}/{end['response']['id']}", headers=server.auth)
    assert len((await stored.json())["tools"]) == 36
