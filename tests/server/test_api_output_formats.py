"""Output formats (issue 18, item 2): chat ``response_format`` and Responses ``text.format``
reach the upstream on every model call of the turn, malformed shapes are 400s with their
``param``, an upstream that rejects the format is an error envelope (never a silent drop,
never a retry without it), and Responses echo ``text.format``. Raw HTTP and the real
``openai`` SDK (``parse`` with pydantic models) against the app on loopback, JSON and SSE."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from _api_harness import SERVER_KEY, MakeServer, Server, parse_sse
from pydantic import BaseModel

from hermes.testing.upstream import call, error_reply, json_reply, text_reply, tool_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"

PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
CHAT_FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True}}
TEXT_FORMAT = {"type": "json_schema", "name": "person", "schema": PERSON_SCHEMA, "strict": True}


class Person(BaseModel):
    name: str
    age: int


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "Who is Ada?"}], **extra}


def chat_content(body: str) -> str:
    text = ""
    for frame in parse_sse(body):
        if frame.event is None and frame.data != "[DONE]":
            text += frame.json()["choices"][0]["delta"].get("content") or ""
    return text


def response_events(body: str) -> list[dict[str, Any]]:
    return [f.json() for f in parse_sse(body) if f.event and f.event.startswith("response.")]


def output_text(response: dict[str, Any]) -> str:
    return "".join(i["content"][0]["text"] for i in response["output"] if i["type"] == "message")


# ---- the format reaches the upstream; the answer is its JSON --------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_chat_json_schema_reaches_the_upstream(server: Server, stream: bool) -> None:
    server.upstream.enqueue(json_reply({"name": "Ada", "age": 36}))
    resp = await server.client.post(CHAT, json=chat_body(response_format=CHAT_FORMAT, stream=stream))
    assert resp.status == 200
    content = chat_content(await resp.text()) if stream else (await resp.json())["choices"][0]["message"]["content"]
    assert json.loads(content) == {"name": "Ada", "age": 36}
    assert server.upstream.requests[0].response_format == CHAT_FORMAT


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_chat_json_object_reaches_the_upstream(server: Server, stream: bool) -> None:
    resp = await server.client.post(CHAT, json=chat_body(response_format={"type": "json_object"}, stream=stream))
    assert resp.status == 200
    content = chat_content(await resp.text()) if stream else (await resp.json())["choices"][0]["message"]["content"]
    assert isinstance(json.loads(content), dict)  # the scripted upstream answers JSON when asked
    assert server.upstream.requests[0].response_format == {"type": "json_object"}


async def test_text_format_sends_no_format(server: Server) -> None:
    server.upstream.enqueue(text_reply("free text"), text_reply("more"))
    chat = await server.client.post(CHAT, json=chat_body(response_format={"type": "text"}))
    responses = await server.client.post(RESPONSES, json={"input": "hi", "text": {"format": {"type": "text"}}})
    assert chat.status == responses.status == 200
    assert [r.response_format for r in server.upstream.requests] == [None, None]
    assert (await responses.json())["text"] == {"format": {"type": "text"}}


async def test_every_model_call_of_a_tool_turn_carries_the_format(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "missing.txt"}, id="call_1")]),
        json_reply({"name": "Ada", "age": 36}),
    )
    resp = await server.client.post(CHAT, json=chat_body(response_format=CHAT_FORMAT))
    assert json.loads((await resp.json())["choices"][0]["message"]["content"]) == {"name": "Ada", "age": 36}
    assert [r.response_format for r in server.upstream.requests] == [CHAT_FORMAT, CHAT_FORMAT]


async def test_responses_json_schema_reaches_the_upstream_and_is_echoed(server: Server) -> None:
    server.upstream.enqueue(json_reply({"name": "Ada", "age": 36}))
    resp = await server.client.post(RESPONSES, json={"input": "Who is Ada?", "text": {"format": TEXT_FORMAT}})
    assert resp.status == 200
    data = await resp.json()
    assert json.loads(output_text(data)) == {"name": "Ada", "age": 36}
    assert data["text"] == {"format": TEXT_FORMAT}
    assert server.upstream.requests[0].response_format == CHAT_FORMAT
    stored = await (await server.client.get(f"{RESPONSES}/{data['id']}")).json()
    assert stored["text"] == {"format": TEXT_FORMAT}


async def test_responses_stream_echoes_the_format_in_every_envelope(server: Server) -> None:
    body = {"input": "Who is Ada?", "text": {"format": {"type": "json_object"}}, "stream": True}
    events = response_events(await (await server.client.post(RESPONSES, json=body)).text())
    envelopes = [e["response"] for e in events if "response" in e]
    assert [e["type"] for e in events if "response" in e] == [
        "response.created", "response.in_progress", "response.completed"
    ]
    assert all(r["text"] == {"format": {"type": "json_object"}} for r in envelopes)
    assert isinstance(json.loads(output_text(envelopes[-1])), dict)
    assert server.upstream.requests[0].response_format == {"type": "json_object"}


async def test_responses_without_a_format_echo_text(server: Server) -> None:
    server.upstream.enqueue(text_reply("hello"))
    data = await (await server.client.post(RESPONSES, json={"input": "hi"})).json()
    assert data["text"] == {"format": {"type": "text"}}
    assert server.upstream.requests[0].response_format is None


async def test_utility_request_keeps_its_format(server: Server) -> None:
    body = chat_body(response_format={"type": "json_object"}, metadata={"task": "tags_generation"})
    resp = await server.client.post(CHAT, json=body)
    assert resp.status == 200
    assert server.upstream.requests[0].response_format == {"type": "json_object"}
    assert server.sessions.list_sessions() == []


# ---- malformed shapes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "extra", "param"),
    [
        (CHAT, {"response_format": "json"}, "response_format"),
        (CHAT, {"response_format": {"type": "yaml"}}, "response_format.type"),
        (CHAT, {"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
        (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
         "response_format.json_schema.name"),
        (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}}},
         "response_format.json_schema.name"),
        (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": []}}},
         "response_format.json_schema.schema"),
        (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {},
                                                                            "strict": "yes"}}},
         "response_format.json_schema.strict"),
        (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "p\n", "schema": {}}}},
         "response_format.json_schema.name"),
        (CHAT, {"response_format": {"type": "text", "json_schema": {"name": "p", "schema": {}, "description": {}}}},
         "response_format.json_schema.description"),
        (RESPONSES, {"text": {"format": {"type": "json_object", "name": 5}}}, "text.format.name"),
        (RESPONSES, {"text": "json"}, "text"),
        (RESPONSES, {"text": {"format": []}}, "text.format"),
        (RESPONSES, {"text": {"format": {"type": "xml"}}}, "text.format.type"),
        (RESPONSES, {"text": {"format": {"type": "json_schema", "schema": {}}}}, "text.format.name"),
        (RESPONSES, {"text": {"format": {"type": "json_schema", "name": "p"}}}, "text.format.schema"),
    ],
)
async def test_malformed_format_is_400_with_param(server: Server, url: str, extra: dict[str, Any], param: str) -> None:
    body = {**(chat_body() if url == CHAT else {"input": "hi"}), **extra}
    resp = await server.client.post(url, json=body)
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert server.upstream.requests == []


# ---- an upstream that rejects the format -----------------------------------------------------

REJECTED = "response_format json_schema is not supported by this model"


async def test_rejected_format_is_an_error_envelope_without_retry(server: Server) -> None:
    server.upstream.enqueue(error_reply(400, REJECTED, type="invalid_request_error"))
    resp = await server.client.post(CHAT, json=chat_body(response_format=CHAT_FORMAT))
    assert resp.status == 502
    error = (await resp.json())["error"]
    assert error["code"] == "agent_incomplete"
    assert REJECTED in error["message"] and "(400)" in error["message"]
    assert error["hermes"]["error_code"] == "provider_error"
    assert [r.response_format for r in server.upstream.requests] == [CHAT_FORMAT]


async def test_rejected_format_fails_the_stream(server: Server) -> None:
    server.upstream.enqueue(error_reply(400, REJECTED, type="invalid_request_error"))
    body = {"input": "hi", "text": {"format": TEXT_FORMAT}, "stream": True}
    events = response_events(await (await server.client.post(RESPONSES, json=body)).text())
    assert events[-1]["type"] == "response.failed"
    assert REJECTED in events[-1]["response"]["error"]["message"]
    assert not [e for e in events if e["type"] == "response.output_text.delta"]
    assert len(server.upstream.requests) == 1

    server.upstream.enqueue(error_reply(400, REJECTED, type="invalid_request_error"))
    chat = await server.client.post(CHAT, json=chat_body(response_format=CHAT_FORMAT, stream=True))
    frames = [f.json() for f in parse_sse(await chat.text()) if f.data != "[DONE]"]
    assert frames[-1]["choices"][0]["finish_reason"] == "error"
    assert REJECTED in frames[-1]["error"]["message"]
    assert len(server.upstream.requests) == 2


# ---- the openai SDK's structured outputs ------------------------------------------------------


@pytest.fixture
async def sdk(make_server: MakeServer):
    srv = await make_server(server_key=SERVER_KEY)
    client = openai.AsyncOpenAI(base_url=srv.base_url + "v1", api_key=SERVER_KEY, max_retries=0)
    yield srv, client
    await client.close()


async def test_sdk_chat_parse_with_a_pydantic_model(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    srv, client = sdk
    completion = await client.chat.completions.parse(
        model="hermes-agent", messages=[{"role": "user", "content": "Who is Ada?"}], response_format=Person
    )
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Person)
    sent = srv.upstream.requests[0].response_format
    assert sent is not None and sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Person" and sent["json_schema"]["strict"] is True
    assert set(sent["json_schema"]["schema"]["required"]) == {"name", "age"}


async def test_sdk_chat_stream_with_a_pydantic_model(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    srv, client = sdk
    srv.upstream.enqueue(json_reply({"name": "Ada", "age": 36}))
    async with client.chat.completions.stream(
        model="hermes-agent", messages=[{"role": "user", "content": "Who is Ada?"}], response_format=Person
    ) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    assert final.choices[0].message.parsed == Person(name="Ada", age=36)


async def test_sdk_responses_parse_with_a_pydantic_model(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    srv, client = sdk
    srv.upstream.enqueue(json_reply({"name": "Ada", "age": 36}))
    response = await client.responses.parse(model="hermes-agent", input="Who is Ada?", text_format=Person)
    assert response.output_parsed == Person(name="Ada", age=36)
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "json_schema"
    sent = srv.upstream.requests[0].response_format
    assert sent is not None and sent["json_schema"]["name"] == "Person"


async def test_sdk_responses_stream_with_a_pydantic_model(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    srv, client = sdk
    srv.upstream.enqueue(json_reply({"name": "Ada", "age": 36}))
    async with client.responses.stream(model="hermes-agent", input="Who is Ada?", text_format=Person) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_response()
    assert final.output_parsed == Person(name="Ada", age=36)


async def test_sdk_rejected_format_raises(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    srv, client = sdk
    srv.upstream.enqueue(error_reply(400, REJECTED, type="invalid_request_error"))
    with pytest.raises(openai.APIStatusError) as info:
        await client.chat.completions.parse(
            model="hermes-agent", messages=[{"role": "user", "content": "Who is Ada?"}], response_format=Person
        )
    assert info.value.status_code == 502
    assert REJECTED in str(info.value.message)


async def test_sdk_malformed_format_is_bad_request(sdk: tuple[Server, openai.AsyncOpenAI]) -> None:
    _, client = sdk
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_schema", "json_schema": {"name": "p"}},  # type: ignore[typeddict-item]
        )
    assert info.value.param == "response_format.json_schema.schema"


# ---- tool_protocol = "json": the format is the reply action's args --------------------------

NESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"people": {"type": "array", "items": {"$ref": "#/$defs/Person"}}},
    "required": ["people"],
    "$defs": {"Person": PERSON_SCHEMA},
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_json_actions_answer_the_format_as_the_reply_args(make_server: MakeServer, stream: bool) -> None:
    srv = await make_server(tool_protocol="json")
    answer = {"people": [{"name": "Ada", "age": 36}]}
    srv.upstream.enqueue(
        json_reply({"action": "read_file", "args": {"path": "missing.txt"}}),
        json_reply({"action": "reply", "args": answer}),
    )
    fmt = {"type": "json_schema", "json_schema": {"name": "people", "schema": NESTED_SCHEMA, "strict": True}}
    resp = await srv.client.post(CHAT, json=chat_body(response_format=fmt, stream=stream))
    content = chat_content(await resp.text()) if stream else (await resp.json())["choices"][0]["message"]["content"]
    assert json.loads(content) == answer
    assert len(srv.upstream.requests) == 2
    for sent in srv.upstream.requests:
        grammar = sent.response_format
        assert grammar is not None and grammar["json_schema"]["name"] == "action"
        schema = grammar["json_schema"]["schema"]
        assert schema["$defs"] == {"Person": PERSON_SCHEMA}  # where the client's $refs point
        reply = schema["anyOf"][-1]
        assert reply["properties"]["action"] == {"const": "reply"}
        assert reply["properties"]["args"] == {k: v for k, v in NESTED_SCHEMA.items() if k != "$defs"}
        assert "args is the answer itself" in sent.messages[0]["content"]
    assert "tools" not in srv.upstream.requests[0].body


async def test_json_actions_json_object_reply(make_server: MakeServer) -> None:
    srv = await make_server(tool_protocol="json")
    srv.upstream.enqueue(json_reply({"action": "reply", "args": {"ok": True}}))
    body = {"input": "Is it ok?", "text": {"format": {"type": "json_object"}}}
    data = await (await srv.client.post(RESPONSES, json=body)).json()
    assert json.loads(output_text(data)) == {"ok": True}
    reply = srv.upstream.requests[0].response_format["json_schema"]["schema"]["anyOf"][-1]  # type: ignore[index]
    assert reply["properties"]["args"] == {"type": "object"}
