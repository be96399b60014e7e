"""Clients that bring their own function tools, unmodified, against a real `hermes serve`:
the model's call of a client tool goes back to the client, which runs it and continues
the turn with the result (openai-agents `@function_tool` with both model classes, the
openai SDK on both endpoints)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from _clients_harness import TOOL_COMMAND, TOOL_OUTPUT, HermesServe
from agents import Agent, Model, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool
from openai import AsyncOpenAI

from hermes.testing.upstream import call, text_reply, tool_reply

WEATHER_ANSWER = "It is sunny in Paris."
RAN: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    RAN.append(city)
    return f"sunny in {city}"


@pytest.fixture
async def sdk(hermes_serve: HermesServe) -> AsyncIterator[AsyncOpenAI]:
    client = AsyncOpenAI(base_url=hermes_serve.base_url, api_key=hermes_serve.key, max_retries=0, timeout=30)
    yield client
    await client.close()


def _agent(kind: str, sdk: AsyncOpenAI, serve: HermesServe) -> Agent:
    model: Model
    if kind == "responses":
        model = OpenAIResponsesModel(model=serve.model, openai_client=sdk)
    else:
        model = OpenAIChatCompletionsModel(model=serve.model, openai_client=sdk)
    return Agent(name="hermes-client", instructions="Be brief.", model=model, tools=[get_weather])


def _tool_results(serve: HermesServe, request: int) -> list[str]:
    return [str(m.get("content")) for m in serve.upstream.requests[request].messages if m.get("role") == "tool"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_agents_function_tool(kind: str, streamed: bool, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    RAN.clear()
    hermes_serve.script(
        tool_reply([call("get_weather", {"city": "Paris"}, id="call_w")]),
        text_reply(WEATHER_ANSWER),
    )
    agent = _agent(kind, sdk, hermes_serve)
    if streamed:
        result = Runner.run_streamed(agent, "weather in Paris?")
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "weather in Paris?")  # type: ignore[assignment]
    assert result.final_output == WEATHER_ANSWER
    assert RAN == ["Paris"]  # the Runner ran its own tool, once
    first = hermes_serve.upstream.requests[0]
    assert "get_weather" in first.tool_names and "terminal" in first.tool_names
    assert _tool_results(hermes_serve, 1) == ["sunny in Paris"]


@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_agents_mixed_server_and_client_tools(kind: str, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    """hermes runs its `terminal` call, the Runner its `get_weather` call, in one model response."""
    RAN.clear()
    hermes_serve.script(
        tool_reply([call("terminal", {"command": TOOL_COMMAND}), call("get_weather", {"city": "Paris"})]),
        text_reply(WEATHER_ANSWER),
    )
    result = await Runner.run(_agent(kind, sdk, hermes_serve), "echo and weather")
    assert result.final_output == WEATHER_ANSWER
    assert RAN == ["Paris"]
    results = _tool_results(hermes_serve, 1)
    assert any(TOOL_OUTPUT in r for r in results) and "sunny in Paris" in results


async def test_openai_sdk_chat_tool_calls(sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(tool_reply([call("get_weather", {"city": "Oslo"}, id="call_o")]), text_reply("Cold."))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    messages: list = [{"role": "user", "content": "oslo?"}]
    first = await sdk.chat.completions.create(model=hermes_serve.model, messages=messages, tools=tools)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    tool_call = choice.message.tool_calls[0]
    assert tool_call.function.name == "get_weather" and json.loads(tool_call.function.arguments) == {"city": "Oslo"}
    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tool_call.id, "content": "-5 C"},
    ]
    stream = await sdk.chat.completions.create(model=hermes_serve.model, messages=messages, tools=tools, stream=True)
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert text == "Cold."
    assert _tool_results(hermes_serve, 1) == ["-5 C"]


async def test_openai_sdk_responses_function_call(sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(tool_reply([call("get_weather", {"city": "Rome"}, id="call_r")]), text_reply("Warm."))
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
    first = await sdk.responses.create(model=hermes_serve.model, input="rome?", tools=tools)  # type: ignore[arg-type]
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, c.call_id) for c in calls] == [("get_weather", "call_r")]
    async with sdk.responses.stream(
        model=hermes_serve.model,
        previous_response_id=first.id,
        tools=tools,  # type: ignore[arg-type]
        input=[{"type": "function_call_output", "call_id": "call_r", "output": "30 C"}],
    ) as stream:
        final = await stream.get_final_response()
    assert final.output_text == "Warm."
    assert _tool_results(hermes_serve, 1) == ["30 C"]
