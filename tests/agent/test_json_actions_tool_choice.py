"""The JSON-action adapter honours `tool_choice` in the action grammar: ``none`` offers only
`reply`, ``required`` only tool actions, a named function only that tool; under ``none`` or a
named function the adapter takes no steps of its own. The scripted upstream is the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.prompt import default_system_prompt
from hermes.agent.provider import FinishChunk, ModelRequest, ProviderEvent, TextChunk, ToolCallChunk
from hermes.agent.providers.action_grammar import action_schema, choice_mode
from hermes.agent.providers.json_actions import JsonActionProvider
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools import default_registry
from hermes.testing.upstream import ScriptedUpstream, text_reply

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TOOLS = [*default_registry().schemas(), WEATHER]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def offered(body: dict[str, Any]) -> set[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return {branch["properties"]["action"]["const"] for branch in schema.get("anyOf", [schema])}


def action(name: str, args: dict[str, Any]) -> Any:
    return text_reply(json.dumps({"action": name, "args": args}))


async def run(
    upstream: ScriptedUpstream, messages: list[dict[str, Any]], choice: Any, *, stream: bool = True
) -> list[ProviderEvent]:
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    request = ModelRequest(model="m", messages=messages, tools=TOOLS, tool_choice=choice)
    try:
        if stream:
            return [event async for event in provider.stream(request)]
        return await provider.complete(request)
    finally:
        await provider.aclose()


def test_choice_modes() -> None:
    assert choice_mode(None) == ("auto", None) and choice_mode("auto") == ("auto", None)
    assert choice_mode("none") == ("none", None)
    assert choice_mode("required") == ("required", None)
    assert choice_mode(NAMED) == ("required", "get_weather")
    assert choice_mode({"type": "function", "name": "get_weather"}) == ("required", "get_weather")
    assert "anyOf" not in action_schema([WEATHER], reply_only=True)
    assert {b["properties"]["action"]["const"] for b in action_schema([WEATHER], tools_only=True)["anyOf"]} == {
        "get_weather"
    }
    assert action_schema([], tools_only=True)["anyOf"][-1]["properties"]["action"]["const"] == "reply"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "complete"])
async def test_none_offers_only_reply(upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.enqueue(action("reply", {"text": "Sunny, I think."}))
    events = await run(upstream, [{"role": "user", "content": "Weather in Paris?"}], "none", stream=stream)
    assert offered(upstream.requests[0].body) == {"reply"}
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Sunny, I think."
    assert not any(isinstance(e, ToolCallChunk) for e in events)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "complete"])
async def test_required_offers_only_tools(upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.enqueue(action("get_weather", {"city": "Paris"}))
    events = await run(upstream, [{"role": "user", "content": "Hello!"}], "required", stream=stream)
    names = offered(upstream.requests[0].body)
    assert "reply" not in names and {"read_file", "terminal", "get_weather"} <= names
    calls = [e for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert FinishChunk("tool_calls") in events


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "complete"])
async def test_a_named_function_is_the_only_action(upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.enqueue(action("get_weather", {"city": "Oslo"}))
    events = await run(upstream, [{"role": "user", "content": "Weather in Oslo?"}], NAMED, stream=stream)
    assert offered(upstream.requests[0].body) == {"get_weather"}
    calls = [e for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]


async def test_an_action_outside_the_named_function_is_no_call(upstream: ScriptedUpstream) -> None:
    upstream.enqueue(action("read_file", {"path": "a.txt"}))  # an endpoint that ignored the grammar
    events = await run(upstream, [{"role": "user", "content": "Weather in Oslo?"}], NAMED)
    assert not any(isinstance(e, ToolCallChunk) for e in events)


@pytest.mark.parametrize("choice", ["none", NAMED], ids=["none", "named"])
async def test_no_steps_of_its_own_under_none_or_a_named_function(
    upstream: ScriptedUpstream, tmp_path: Path, choice: Any
) -> None:
    (tmp_path / "jobs.py").write_text("class JobQueue: ...\n")
    system = {"role": "system", "content": default_system_prompt(str(tmp_path))}
    messages = [system, {"role": "user", "content": "Summarise jobs.py in one line"}]
    answer = action("reply", {"text": "A queue."}) if choice == "none" else action("get_weather", {"city": "x"})
    upstream.enqueue(answer)
    events = await run(upstream, messages, choice)
    assert len(upstream.requests) == 1  # the model was asked: no read_file of the adapter's own
    assert all(e.name != "read_file" for e in events if isinstance(e, ToolCallChunk))
