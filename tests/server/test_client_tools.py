"""The client's own function tools beside hermes' tools, over raw HTTP (both endpoints,
JSON and SSE): the collision check, tool_choice and parallel_tool_calls reaching the
upstream, a mixed model response (hermes' tool runs, the client's call ends the turn),
the continuation with the results, and Codex CLI taken for an SDK client."""

from __future__ import annotations

from typing import Any

import pytest
from _api_harness import MakeServer, Server, parse_sse

from hermes.testing.upstream import call, json_reply, text_reply, tool_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
PARAMS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": PARAMS}}
RESP_TOOL = {"type": "function", "name": "get_weather", "description": "Weather", "parameters": PARAMS}
CODEX_UA = "codex_exec/0.169.0 (Ubuntu 24.04; x86_64) xterm-256color (codex-exec; 0.169.0)"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def mixed_reply() -> Any:
    """One model response: hermes' read_file and the client's get_weather."""
    return tool_reply(
        [call("read_file", {"path": "notes.txt"}, id="call_own"), call("get_weather", {"city": "Paris"}, id="call_w")],
        text="Checking.",
    )


def chunks_of(body: str) -> list[dict[str, Any]]:
    return [f.json() for f in parse_sse(body) if f.event is None and f.data != "[DONE]"]


def events_of(body: str) -> list[dict[str, Any]]:
    return [f.json() for f in parse_sse(body) if f.event and f.event.startswith("response.")]


def roles(server: Server, session_id: str) -> list[tuple[str, str | None]]:
    return [(m.role, m.tool_call_id) for m in server.sessions.get_messages(session_id)]


# ---- the request side -----------------------------------------------------------------------


@pytest.mark.parametrize("url,tool", [(CHAT, CHAT_TOOL), (RESPONSES, RESP_TOOL)], ids=["chat", "responses"])
async def test_a_name_taken_by_a_hermes_tool_is_400(server: Server, url: str, tool: dict[str, Any]) -> None:
    taken = (
        {**tool, "function": {**tool["function"], "name": "read_file"}}
        if "function" in tool
        else {**tool, "name": "read_file"}
    )
    body = {"messages": [user("hi")]} if url == CHAT else {"input": "hi"}
    resp = await server.client.post(url, json={**body, "tools": [taken]})
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "tools" and error["code"] == "tool_name_conflict"
    assert "read_file" in error["message"]
    assert server.upstream.requests == []


@pytest.mark.parametrize(
    "choice,sent",
    [
        ("none", "none"),
        ("required", "required"),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
    ids=["none", "required", "named"],
)
async def test_chat_tool_choice_reaches_the_first_model_call(server: Server, choice: Any, sent: Any) -> None:
    server.upstream.enqueue(text_reply("ok"))
    resp = await server.client.post(
        CHAT,
        json={
            "messages": [user("weather?")],
            "tools": [CHAT_TOOL],
            "tool_choice": choice,
            "parallel_tool_calls": False,
        },
    )
    assert resp.status == 200
    body = server.upstream.requests[0].body
    assert server.upstream.requests[0].tool_names == ["read_file", "sleep", "_thinking", "memory", "get_weather"]
    assert body["tool_choice"] == sent
    assert body["parallel_tool_calls"] is False


async def test_responses_named_choice_and_builtins_ignored(server: Server) -> None:
    server.upstream.enqueue(text_reply("ok"))
    resp = await server.client.post(
        RESPONSES,
        json={
            "input": "weather?",
            "tools": [RESP_TOOL, {"type": "web_search_preview"}],
            "tool_choice": {"type": "function", "name": "get_weather"},
        },
    )
    assert resp.status == 200
    request = server.upstream.requests[0]
    assert request.tool_names[-1] == "get_weather" and "web_search_preview" not in str(request.body["tools"])
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


async def test_a_named_choice_outside_the_tools_is_400(server: Server) -> None:
    resp = await server.client.post(
        CHAT,
        json={
            "messages": [user("x")],
            "tools": [CHAT_TOOL],
            "tool_choice": {"type": "function", "function": {"name": "nope"}},
        },
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["param"] == "tool_choice"


async def test_required_applies_to_the_first_call_only(server: Server) -> None:
    server.upstream.enqueue(tool_reply([call("read_file", {"path": "x"})]), text_reply("done"))
    resp = await server.client.post(
        CHAT, json={"messages": [user("go")], "tools": [CHAT_TOOL], "tool_choice": "required"}
    )
    assert resp.status == 200
    first, second = server.upstream.requests
    assert first.body["tool_choice"] == "required"
    assert "tool_choice" not in second.body


# ---- chat completions -----------------------------------------------------------------------


async def test_chat_json_mixed_call_then_continuation(server: Server) -> None:
    server.upstream.enqueue(mixed_reply(), text_reply("Sunny in Paris."))
    messages = [user("notes and weather")]
    resp = await server.client.post(CHAT, json={"messages": messages, "tools": [CHAT_TOOL]})
    assert resp.status == 200
    data = await resp.json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Checking."
    assert choice["message"]["tool_calls"] == [
        {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]
    sid = resp.headers["X-Hermes-Session-Id"]
    # hermes ran its own call; the client's is recorded and waits.
    assert roles(server, sid) == [("user", None), ("assistant", None), ("tool", "call_own")]
    assert len(server.upstream.requests) == 1

    messages += [choice["message"], {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 21 C"}]
    resp = await server.client.post(CHAT, json={"messages": messages, "tools": [CHAT_TOOL]})
    assert resp.status == 200
    data = await resp.json()
    assert data["choices"][0]["message"]["content"] == "Sunny in Paris."
    assert data["choices"][0]["finish_reason"] == "stop"
    assert resp.headers["X-Hermes-Session-Id"] == sid
    sent = server.upstream.requests[1].messages
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_w", "name": "get_weather", "content": "sunny, 21 C"}
    # The stored transcript goes on: hermes' own call and result of that response included.
    assert [(m["role"], m.get("tool_call_id")) for m in sent[1:-1]] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_own"),
    ]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_own", "call_w"]
    stored = server.sessions.get_messages(sid)
    assert [(m.role, m.tool_call_id) for m in stored] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_own"),
        ("tool", "call_w"),
        ("assistant", None),
    ]
    assert stored[3].content == "sunny, 21 C"


async def test_chat_stream_tool_call_chunks(server: Server) -> None:
    server.upstream.enqueue(mixed_reply())
    resp = await server.client.post(CHAT, json={"messages": [user("go")], "tools": [CHAT_TOOL], "stream": True})
    assert resp.status == 200
    chunks = chunks_of(await resp.text())
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0] == {
        "index": 0,
        "id": "call_w",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert "".join(c["function"]["arguments"] for c in calls) == '{"city": "Paris"}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "Checking."


async def test_chat_continuation_with_session_header(auth_server: Server) -> None:
    auth_server.upstream.enqueue(tool_reply([call("get_weather", {"city": "Oslo"}, id="call_o")]), text_reply("Cold."))
    headers = {**auth_server.auth, "X-Hermes-Session-Id": "client-tools-1"}
    resp = await auth_server.client.post(
        CHAT, json={"messages": [user("oslo?")], "tools": [CHAT_TOOL]}, headers=headers
    )
    message = (await resp.json())["choices"][0]["message"]
    body = {
        "messages": [user("oslo?"), message, {"role": "tool", "tool_call_id": "call_o", "content": "-5 C"}],
        "tools": [CHAT_TOOL],
    }
    resp = await auth_server.client.post(CHAT, json=body, headers=headers)
    assert resp.status == 200
    assert (await resp.json())["choices"][0]["message"]["content"] == "Cold."
    sent = auth_server.upstream.requests[1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]  # no placeholder before the result
    assert sent[-1]["content"] == "-5 C"


# ---- Responses ------------------------------------------------------------------------------


async def test_responses_json_function_call_then_previous_response_id(server: Server) -> None:
    server.upstream.enqueue(mixed_reply(), text_reply("Sunny."))
    resp = await server.client.post(RESPONSES, json={"input": "notes and weather", "tools": [RESP_TOOL]})
    assert resp.status == 200
    data = await resp.json()
    assert data["status"] == "completed"
    kinds = [(item["type"], item.get("call_id")) for item in data["output"]]
    assert kinds == [
        ("message", None),
        ("function_call", "call_own"),
        ("function_call", "call_w"),
        ("function_call_output", "call_own"),
    ]
    client_call = data["output"][2]
    assert client_call["name"] == "get_weather" and client_call["status"] == "completed"
    assert client_call["arguments"] == '{"city": "Paris"}'
    sid = resp.headers["X-Hermes-Session-Id"]

    resp = await server.client.post(
        RESPONSES,
        json={
            "previous_response_id": data["id"],
            "tools": [RESP_TOOL],
            "input": [{"type": "function_call_output", "call_id": "call_w", "output": "sunny"}],
        },
    )
    assert resp.status == 200
    data = await resp.json()
    assert data["output"][-1]["content"][0]["text"] == "Sunny."
    assert resp.headers["X-Hermes-Session-Id"] == sid
    sent = server.upstream.requests[1].messages
    assert [(m["role"], m.get("tool_call_id")) for m in sent[1:]] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_own"),
        ("tool", "call_w"),
    ]
    assert roles(server, sid)[-2:] == [("tool", "call_w"), ("assistant", None)]


async def test_responses_continuation_with_the_whole_input(server: Server) -> None:
    server.upstream.enqueue(tool_reply([call("get_weather", {"city": "Rome"}, id="call_r")]), text_reply("Warm."))
    resp = await server.client.post(RESPONSES, json={"input": "rome?", "tools": [RESP_TOOL], "store": False})
    output = (await resp.json())["output"]
    assert [item["type"] for item in output] == ["function_call"]
    resp = await server.client.post(
        RESPONSES,
        json={
            "tools": [RESP_TOOL],
            "input": [
                {"role": "user", "content": "rome?"},
                *output,
                {"type": "function_call_output", "call_id": "call_r", "output": "30 C"},
            ],
        },
    )
    assert resp.status == 200
    assert (await resp.json())["output"][-1]["content"][0]["text"] == "Warm."
    assert server.upstream.requests[1].messages[-1]["content"] == "30 C"


async def test_responses_stream_function_call_events(server: Server) -> None:
    server.upstream.enqueue(mixed_reply())
    resp = await server.client.post(RESPONSES, json={"input": "go", "tools": [RESP_TOOL], "stream": True})
    events = events_of(await resp.text())
    types = [e["type"] for e in events]
    start = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "response.output_item.added" and e["item"].get("call_id") == "call_w"
    )
    assert types[start : start + 4] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert events[start + 2]["arguments"] == '{"city": "Paris"}'
    final = events[-1]
    assert final["type"] == "response.completed"
    assert final["response"]["output"][-1]["type"] == "function_call"
    assert final["response"]["output"][-1]["call_id"] == "call_w"


async def test_an_output_for_a_server_run_call_is_ignored(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "a.txt"}, id="call_s")]),
        text_reply("Read it."),
        text_reply("Anything else?"),
    )
    resp = await server.client.post(RESPONSES, json={"input": "read a.txt"})
    first = await resp.json()
    resp = await server.client.post(
        RESPONSES,
        json={
            "previous_response_id": first["id"],
            "input": [{"type": "function_call_output", "call_id": "call_s", "output": "unsupported call"}],
        },
    )
    assert resp.status == 200, await resp.text()
    sent = server.upstream.requests[2].messages
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ["call_s"]
    assert "unsupported call" not in str(sent)


async def test_an_output_answering_nothing_is_400(server: Server) -> None:
    resp = await server.client.post(
        RESPONSES, json={"input": [{"type": "function_call_output", "call_id": "nobody", "output": "x"}]}
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "no_user_message"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_codex_gets_server_tools_as_mcp_call(server: Server, stream: bool) -> None:
    server.upstream.enqueue(tool_reply([call("read_file", {"path": "a.txt"})]), text_reply("Done."))
    resp = await server.client.post(
        RESPONSES, json={"input": "read a.txt", "stream": stream}, headers={"User-Agent": CODEX_UA}
    )
    assert resp.status == 200
    if stream:
        output = events_of(await resp.text())[-1]["response"]["output"]
    else:
        output = (await resp.json())["output"]
    assert [item["type"] for item in output] == ["mcp_call", "message"]


# ---- tool_protocol = "json": tool_choice binds the action grammar --------------------------


def grammar_actions(body: dict[str, Any]) -> set[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return {branch["properties"]["action"]["const"] for branch in schema.get("anyOf", [schema])}


@pytest.mark.parametrize(
    "choice,actions",
    [("none", {"reply"}), ({"type": "function", "function": {"name": "get_weather"}}, {"get_weather"})],
    ids=["none", "named"],
)
async def test_json_actions_honour_the_clients_tool_choice(
    make_server: MakeServer, choice: Any, actions: set[str]
) -> None:
    srv = await make_server(tool_protocol="json")
    answer = {"action": "reply", "args": {"text": "No tools."}}
    if choice != "none":
        answer = {"action": "get_weather", "args": {"city": "Paris"}}
    srv.upstream.enqueue(json_reply(answer))
    body = {"messages": [user("weather?")], "tools": [CHAT_TOOL], "tool_choice": choice}
    resp = await srv.client.post(CHAT, json=body)
    assert resp.status == 200, await resp.text()
    assert grammar_actions(srv.upstream.requests[0].body) == actions
    choice_out = (await resp.json())["choices"][0]
    if choice == "none":
        assert choice_out["message"]["content"] == "No tools." and choice_out["finish_reason"] == "stop"
    else:
        assert choice_out["finish_reason"] == "tool_calls"
        assert [c["function"]["name"] for c in choice_out["message"]["tool_calls"]] == ["get_weather"]
