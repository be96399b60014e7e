"""Issue 9 (docs/api-decisions.md, "Real clients") in the seeds' contract: the full Responses event
sequence, server-run tools per client kind, Responses input items one-to-one onto the
transcript, trailing user messages, and text segments separated by a blank line that ends the earlier one."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from _api_harness import Server, parse_sse

from hermes.testing.upstream import call, error_reply, text_reply, tool_reply

RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
STAINLESS = {"X-Stainless-Lang": "python"}
AI_SDK = {"User-Agent": "ai-sdk-openai-compatible/2.0.1 ai-sdk-provider-utils/4.0.3 runtime/node.js/20"}
LITELLM = {"User-Agent": "litellm/1.110.2"}
"""`litellm.responses()` talks HTTP itself: no X-Stainless-Lang, only this User-Agent."""


def tool_turn() -> list[Any]:
    return [
        tool_reply([call("read_file", {"path": "missing.txt"}, id="call_1")], text="Let me look."),
        text_reply("It is missing."),
    ]


def events_of(body: str) -> list[dict[str, Any]]:
    return [f.json() for f in parse_sse(body) if f.event and f.event.startswith("response.")]


async def post(srv: Server, url: str, body: dict[str, Any], **headers: str) -> Any:
    return await srv.client.post(url, json=body, headers={**srv.auth, **headers})


def chat_content(body: str) -> str:
    text = ""
    for frame in parse_sse(body):
        if frame.event is None and frame.data != "[DONE]":
            text += frame.json()["choices"][0]["delta"].get("content") or ""
    return text


def sent_without_system(srv: Server, index: int = -1) -> list[dict[str, Any]]:
    return [m for m in srv.upstream.requests[index].messages if m["role"] != "system"]


# ---- 1. the full Responses event sequence ----------------------------------------------------


async def test_stream_sequence_of_a_tool_turn_is_consistent(server: Server) -> None:
    server.upstream.enqueue(*tool_turn())
    events = events_of(await (await post(server, RESPONSES, {"input": "read it", "stream": True})).text())
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed"
    output = final["output"]
    assert [i["type"] for i in output] == ["message", "function_call", "function_call_output", "message"]
    # Every item's events carry its index and id; a message's go added → part added → deltas →
    # text done → part done → item done.
    per_item: dict[int, list[str]] = defaultdict(list)
    for event in events:
        if "output_index" in event:
            index = event["output_index"]
            per_item[index].append(event["type"])
            item_id = event["item"]["id"] if "item" in event else event["item_id"]
            assert item_id == output[index]["id"]
            if "content_index" in event:
                assert event["content_index"] == 0
    for index in (0, 3):
        types = per_item[index]
        assert types[:2] == ["response.output_item.added", "response.content_part.added"]
        assert types[-3:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
        assert set(types[2:-3]) == {"response.output_text.delta"}
    done_parts = [e["part"]["text"] for e in events if e["type"] == "response.content_part.done"]
    assert done_parts == [output[0]["content"][0]["text"], output[3]["content"][0]["text"]]


async def test_stream_reasoning_item_sequence(server: Server) -> None:
    server.upstream.enqueue(text_reply("42", reasoning="Think it over."))
    events = events_of(await (await post(server, RESPONSES, {"input": "answer", "stream": True})).text())
    types = [e["type"] for e in events if e.get("output_index") == 0]
    assert types[0] == "response.output_item.added" and events[2]["item"]["type"] == "reasoning"
    assert "response.reasoning_summary_text.delta" in types and types[-1] == "response.output_item.done"
    assert events[-1]["response"]["output"][0]["summary"][0]["text"] == "Think it over."


# ---- 2. server-run tools per client kind ---------------------------------------------------------


async def test_sdk_client_gets_mcp_call_items(server: Server) -> None:
    server.upstream.enqueue(*tool_turn(), *tool_turn())
    data = await (await post(server, RESPONSES, {"input": "read it"}, **STAINLESS)).json()
    assert [i["type"] for i in data["output"]] == ["message", "mcp_call", "message"]
    tool = data["output"][1]
    assert tool["id"].startswith("mcp_") and tool["server_label"] == "hermes" and tool["name"] == "read_file"
    assert json.loads(tool["arguments"]) == {"path": "missing.txt"}
    assert tool["status"] == "completed" and "missing.txt" in tool["output"]

    body = await (await post(server, RESPONSES, {"input": "read it", "stream": True}, **STAINLESS)).text()
    events = events_of(body)
    kinds = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert kinds == ["message", "mcp_call", "message"]
    tool_events = [e["type"] for e in events if e.get("item_id", "").startswith("mcp_") or
                   e.get("item", {}).get("type") == "mcp_call"]
    assert tool_events[0] == "response.output_item.added" and tool_events[-1] == "response.output_item.done"
    assert "response.mcp_call.completed" in tool_events or "response.mcp_call.failed" in tool_events
    assert "function_call" not in body


async def test_ai_sdk_user_agent_is_an_sdk_client(server: Server) -> None:
    server.upstream.enqueue(*tool_turn())
    data = await (await post(server, RESPONSES, {"input": "read it"}, **AI_SDK)).json()
    assert [i["type"] for i in data["output"]] == ["message", "mcp_call", "message"]


async def test_litellm_user_agent_is_an_sdk_client(server: Server) -> None:
    """LiteLLM's Responses API would hand a function_call to its caller as a call to make."""
    server.upstream.enqueue(*tool_turn(), *tool_turn())
    data = await (await post(server, RESPONSES, {"model": "hermes-agent", "input": "read it"}, **LITELLM)).json()
    assert [i["type"] for i in data["output"]] == ["message", "mcp_call", "message"]
    body = await (await post(server, RESPONSES, {"input": "read it", "stream": True}, **LITELLM)).text()
    kinds = [e["item"]["type"] for e in events_of(body) if e["type"] == "response.output_item.added"]
    assert kinds == ["message", "mcp_call", "message"]


async def test_sdk_client_opts_into_function_call_items(server: Server) -> None:
    server.upstream.enqueue(*tool_turn())
    data = await (
        await post(server, RESPONSES, {"input": "read it"}, **STAINLESS, **{"X-Hermes-Tool-Progress": "true"})
    ).json()
    assert [i["type"] for i in data["output"]] == ["message", "function_call", "function_call_output", "message"]


@pytest.mark.parametrize(
    ("headers", "named"),
    [({}, True), (STAINLESS, False), (AI_SDK, False), ({**AI_SDK, "X-Hermes-Tool-Progress": "true"}, True),
     (LITELLM, False), ({"User-Agent": "curl/8.5.0 (not-litellm/1)"}, True)],
    ids=["plain", "stainless", "ai-sdk", "ai-sdk-opted-in", "litellm", "curl"],
)
async def test_chat_progress_frames_gated_for_sdk_clients(server: Server, headers: dict[str, str], named: bool) -> None:
    server.upstream.enqueue(*tool_turn())
    body = await (
        await post(server, CHAT, {"messages": [{"role": "user", "content": "read it"}], "stream": True}, **headers)
    ).text()
    assert ("event: hermes.tool.progress" in body) is named


# ---- 3. Responses input items ------------------------------------------------------------------


async def test_function_call_items_map_onto_tool_call_and_result(server: Server) -> None:
    """Open WebUI's follow-up: the earlier function_call/function_call_output come back."""
    server.upstream.enqueue(text_reply("You are welcome."))
    history = [
        {"role": "user", "content": "read it"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "call_9", "name": "read_file", "arguments": '{"path": "a"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": [{"type": "input_text", "text": "no file"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is missing."}]},
        {"role": "user", "content": "Thanks"},
    ]
    assert (await post(server, RESPONSES, {"input": history})).status == 200
    assert sent_without_system(server) == [
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "no file", "name": "read_file"},
        {"role": "assistant", "content": "It is missing."},
        {"role": "user", "content": "Thanks"},
    ]


async def test_mcp_call_items_map_onto_tool_call_and_result(server: Server) -> None:
    server.upstream.enqueue(text_reply("ok"))
    history = [
        {"role": "user", "content": "run it"},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "hermes", "name": "terminal",
         "arguments": '{"command": "ls"}', "output": "a.txt", "status": "completed"},
        {"type": "mcp_call", "id": "mcp_2", "server_label": "hermes", "name": "terminal",
         "arguments": "{}", "output": None, "status": "failed",
         "error": {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "denied"}]}},
        {"role": "user", "content": "and?"},
    ]
    assert (await post(server, RESPONSES, {"input": history})).status == 200
    sent = sent_without_system(server)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert sent[1]["tool_calls"][0]["id"] == "mcp_1" and sent[2]["content"] == "a.txt"
    assert sent[4] == {"role": "tool", "tool_call_id": "mcp_2", "content": "denied", "name": "terminal"}


@pytest.mark.parametrize("form_headers", [{}, STAINLESS], ids=["function_call", "mcp_call"])
async def test_item_references_resolve_every_stored_item(server: Server, form_headers: dict[str, str]) -> None:
    server.upstream.enqueue(*tool_turn(), text_reply("Bye."))
    first = await (await post(server, RESPONSES, {"input": "read it"}, **form_headers)).json()
    refs = [{"type": "item_reference", "id": item["id"]} for item in first["output"]]
    body = {"input": [{"role": "user", "content": "read it"}, *refs, {"role": "user", "content": "Thanks"}]}
    assert (await post(server, RESPONSES, body, **form_headers)).status == 200
    sent = sent_without_system(server)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    # The items come back verbatim: the separator ends the earlier message (issue 18, item 5).
    assert sent[1]["content"] == "Let me look.\n\n" and sent[1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert "missing.txt" in sent[2]["content"]
    assert sent[3]["content"] == "It is missing."


async def test_unknown_item_reference_is_400(server: Server) -> None:
    resp = await post(server, RESPONSES, {"input": [{"type": "item_reference", "id": "msg_nope"}, "hi"]})
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "input[0].id")
    assert server.upstream.requests == []


@pytest.mark.parametrize(
    ("url", "body"),
    [
        (RESPONSES, {"input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}),
        (RESPONSES, {"input": ["hi", {"type": "function_call", "call_id": "c", "name": "x", "arguments": "{}"}]}),
        (CHAT, {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}),
    ],
    ids=["responses-assistant-last", "responses-call-last", "chat-assistant-last"],
)
async def test_input_not_ending_with_a_user_message_is_400(server: Server, url: str, body: dict[str, Any]) -> None:
    resp = await post(server, url, body)
    assert resp.status == 400
    assert (await resp.json())["error"]["type"] == "invalid_request_error"
    assert server.upstream.requests == []


# ---- 4. segments ---------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, STAINLESS], ids=["plain", "sdk"])
async def test_responses_json_equals_streamed_deltas(server: Server, headers: dict[str, str]) -> None:
    server.upstream.enqueue(*tool_turn(), *tool_turn())
    data = await (await post(server, RESPONSES, {"input": "read it"}, **headers)).json()
    plain = "".join(i["content"][0]["text"] for i in data["output"] if i["type"] == "message")
    body = await (await post(server, RESPONSES, {"input": "read it", "stream": True}, **headers)).text()
    streamed = "".join(e["delta"] for e in events_of(body) if e["type"] == "response.output_text.delta")
    assert plain == streamed == "Let me look.\n\nIt is missing."


@pytest.mark.parametrize("headers", [{}, STAINLESS], ids=["plain", "sdk"])
async def test_the_separator_ends_the_earlier_message_item(server: Server, headers: dict[str, str]) -> None:
    # Issue 18: with the Agents SDK and pydantic-ai the last message item started with a blank line.
    server.upstream.enqueue(*tool_turn(), *tool_turn())
    data = await (await post(server, RESPONSES, {"input": "read it"}, **headers)).json()
    plain = [i["content"][0]["text"] for i in data["output"] if i["type"] == "message"]
    body = await (await post(server, RESPONSES, {"input": "read it", "stream": True}, **headers)).text()
    done = [e["item"] for e in events_of(body) if e["type"] == "response.output_item.done"]
    streamed = [i["content"][0]["text"] for i in done if i["type"] == "message"]
    final = [i["content"][0]["text"] for i in events_of(body)[-1]["response"]["output"] if i["type"] == "message"]
    assert plain == streamed == final == ["Let me look.\n\n", "It is missing."]


@pytest.mark.parametrize("url", [RESPONSES, CHAT])
async def test_no_separator_after_a_segment_without_text(server: Server, url: str) -> None:
    turn = [tool_reply([call("read_file", {"path": "missing.txt"}, id="call_1")]), text_reply("It is missing.")]
    server.upstream.enqueue(*turn, *turn)
    messages = [{"role": "user", "content": "read it"}]
    body: dict[str, Any] = {"input": "read it"} if url == RESPONSES else {"messages": messages}
    data = await (await post(server, url, body)).json()
    streamed = await (await post(server, url, {**body, "stream": True})).text()
    if url == CHAT:
        texts = [data["choices"][0]["message"]["content"], chat_content(streamed)]
    else:
        deltas = "".join(e["delta"] for e in events_of(streamed) if e["type"] == "response.output_text.delta")
        texts = ["".join(i["content"][0]["text"] for i in data["output"] if i["type"] == "message"), deltas]
    assert texts == ["It is missing.", "It is missing."]


async def test_chat_json_equals_streamed_deltas(server: Server) -> None:
    server.upstream.enqueue(*tool_turn(), *tool_turn())
    messages = [{"role": "user", "content": "read it"}]
    data = await (await post(server, CHAT, {"messages": messages})).json()
    body = await (await post(server, CHAT, {"messages": messages, "stream": True})).text()
    assert data["choices"][0]["message"]["content"] == chat_content(body) == "Let me look.\n\nIt is missing."


# ---- Open WebUI: a failed turn's error once -----------------------------------------------------


async def test_failed_stream_sends_its_error_once(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "upstream exploded"))
    body = await (await post(server, RESPONSES, {"input": "x", "stream": True})).text()
    events = events_of(body)
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["message"]
    assert not [e for e in events if e["type"] == "response.output_text.delta"]
    assert events[-1]["response"]["output"] == []


# ---- Open WebUI: utility requests ----------------------------------------------------------------

TITLE_PROMPT = "### Task:\nGenerate a concise, 3-5 word title for the chat history.\n### Chat History:\nUSER: hi"


@pytest.mark.parametrize(
    ("url", "body"),
    [
        (CHAT, {"messages": [{"role": "user", "content": TITLE_PROMPT}]}),
        (CHAT, {"messages": [{"role": "user", "content": "Tag this chat"}], "metadata": {"task": "tags_generation"}}),
        (RESPONSES, {"input": TITLE_PROMPT}),
    ],
    ids=["chat-task-prompt", "chat-metadata-task", "responses-task-prompt"],
)
async def test_utility_request_is_one_plain_model_call(server: Server, url: str, body: dict[str, Any]) -> None:
    server.upstream.enqueue(text_reply('{"title": "Greeting"}'))
    resp = await post(server, url, body)
    assert resp.status == 200
    data = await resp.json()
    text = data["choices"][0]["message"]["content"] if url == CHAT else data["output"][-1]["content"][0]["text"]
    assert text == '{"title": "Greeting"}'
    assert len(server.upstream.requests) == 1
    sent = server.upstream.requests[0]
    assert not sent.body.get("tools")
    assert [m["role"] for m in sent.messages] == ["user"]  # no hermes system prompt either
    assert "X-Hermes-Session-Id" not in resp.headers
    assert server.sessions.list_sessions() == []
    if url == RESPONSES:
        assert server.responses.get(data["id"]) is None


async def test_streamed_task_prompt_is_a_normal_turn(server: Server) -> None:
    server.upstream.enqueue(text_reply("ok"))
    body = {"messages": [{"role": "user", "content": TITLE_PROMPT}], "stream": True}
    resp = await post(server, CHAT, body)
    await resp.text()
    assert server.upstream.requests[0].body.get("tools")
    assert len(server.sessions.list_sessions()) == 1


async def test_failed_utility_request_is_502(server: Server) -> None:
    server.upstream.enqueue(error_reply(500, "upstream exploded"))
    resp = await post(server, CHAT, {"messages": [{"role": "user", "content": TITLE_PROMPT}]})
    assert resp.status == 502
    assert (await resp.json())["error"]["code"] == "agent_incomplete"
    assert server.sessions.list_sessions() == []
