"""The official openai SDK as the client of hermes serve (real HTTP on loopback)."""

from __future__ import annotations

import openai
import pytest
from _api_harness import SERVER_KEY, MakeServer, Server

from hermes.testing.upstream import call, text_reply, tool_reply


@pytest.fixture
async def sdk_server(make_server: MakeServer) -> Server:
    return await make_server(server_key=SERVER_KEY)


@pytest.fixture
async def client(sdk_server: Server):
    sdk = openai.AsyncOpenAI(base_url=sdk_server.base_url + "v1", api_key=SERVER_KEY, max_retries=0)
    yield sdk
    await sdk.close()


async def test_models_list(client: openai.AsyncOpenAI) -> None:
    models = await client.models.list()
    assert [m.id for m in models.data] == ["hermes-agent"]
    assert models.data[0].owned_by == "hermes"


async def test_wrong_key_raises_authentication_error(sdk_server: Server) -> None:
    sdk = openai.AsyncOpenAI(base_url=sdk_server.base_url + "v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        await sdk.models.list()
    assert info.value.code == "invalid_api_key"
    await sdk.close()


async def test_chat_json(client: openai.AsyncOpenAI, sdk_server: Server) -> None:
    sdk_server.upstream.enqueue(text_reply("Hello from hermes", usage=(12, 4)))
    completion = await client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.id.startswith("chatcmpl-")
    assert completion.choices[0].message.content == "Hello from hermes"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens == 16


async def test_chat_stream_with_tool_call_every_chunk_has_a_choice(
    client: openai.AsyncOpenAI, sdk_server: Server
) -> None:
    sdk_server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "a.txt"})], text="Let me look."),
        text_reply(" It is empty."),
    )
    stream = await client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "read a.txt"}], stream=True
    )
    text, finish = "", None
    count = 0
    async for chunk in stream:
        count += 1
        choice = chunk.choices[0]  # must never crash: no named frames reach the SDK
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
    assert count >= 4
    assert text == "Let me look.\n\n It is empty."
    assert finish == "stop"


async def test_chat_error_maps_to_sdk_exception(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(model="hermes-agent", messages=[])
    assert info.value.param == "messages"


async def test_responses_json_and_previous_response_id(client: openai.AsyncOpenAI, sdk_server: Server) -> None:
    sdk_server.upstream.enqueue(text_reply("2"), text_reply("3"))
    first = await client.responses.create(model="hermes-agent", input="What is 1+1?")
    assert first.status == "completed"
    assert first.output_text == "2"
    second = await client.responses.create(
        model="hermes-agent", input="Add one more", previous_response_id=first.id
    )
    assert second.output_text == "3"
    assert second.previous_response_id == first.id
    assert sdk_server.upstream.requests[1].messages[1:3] == [
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "2"},
    ]
    fetched = await client.responses.retrieve(second.id)
    assert fetched.output_text == "3"
    await client.responses.delete(second.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(second.id)


async def test_responses_stream(client: openai.AsyncOpenAI, sdk_server: Server) -> None:
    sdk_server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "a.txt"})]),
        text_reply("Streamed answer here"),
    )
    stream = await client.responses.create(model="hermes-agent", input="go", stream=True)
    types, text, final = [], "", None
    async for event in stream:
        types.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            final = event.response
    assert types[0] == "response.created"
    assert types[-1] == "response.completed"
    assert "response.output_item.added" in types
    assert text == "Streamed answer here"
    assert final is not None and final.output_text == "Streamed answer here"
    # An SDK client gets the server-run tool as an mcp_call it will not try to run.
    assert [item.type for item in final.output] == ["mcp_call", "message"]
    tool = final.output[0]
    assert tool.type == "mcp_call" and tool.server_label == "hermes" and tool.name == "read_file"
    assert tool.status in ("completed", "failed")


WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}


async def test_responses_echo_the_request_tools_choice_and_parallel(
    client: openai.AsyncOpenAI, sdk_server: Server
) -> None:
    sdk_server.upstream.enqueue(text_reply("sunny"), text_reply("rainy"), text_reply("plain"))
    choice = {"type": "function", "name": "get_weather"}
    echoed = await client.responses.create(
        model="hermes-agent", input="weather?", tools=[WEATHER], tool_choice=choice, parallel_tool_calls=False
    )
    assert [tool.model_dump(exclude_none=True) for tool in echoed.tools] == [WEATHER]
    assert echoed.tool_choice.model_dump() == choice
    assert echoed.parallel_tool_calls is False

    stream = await client.responses.create(
        model="hermes-agent", input="weather?", tools=[WEATHER], tool_choice="required", stream=True
    )
    ends = {
        e.type: e.response
        for e in [event async for event in stream]
        if e.type in ("response.created", "response.completed")
    }
    assert len(ends) == 2
    # The schemas go out once, in the end event; the start names the choice but no schemas.
    assert [tool.name for tool in ends["response.completed"].tools if tool.type == "function"] == ["get_weather"]
    assert ends["response.created"].tools == []
    for response in ends.values():
        assert response.tool_choice == "required" and response.parallel_tool_calls is True

    plain = await client.responses.create(model="hermes-agent", input="hi")
    assert plain.tools == [] and plain.tool_choice == "auto" and plain.parallel_tool_calls is True


async def test_responses_stream_helper_with_tools(client: openai.AsyncOpenAI, sdk_server: Server) -> None:
    """The SDK's `responses.stream()` helper (its snapshot state) over a stream that carries
    the tool schemas in its end event only."""
    sdk_server.upstream.enqueue(text_reply("sunny in Oslo"))
    async with client.responses.stream(model="hermes-agent", input="weather?", tools=[WEATHER]) as stream:
        deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == "sunny in Oslo" == final.output_text
    assert [tool.name for tool in final.tools if tool.type == "function"] == ["get_weather"]
