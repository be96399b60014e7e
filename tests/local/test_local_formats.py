"""Output formats on the bundled model (issue 18, item 2; marked local_llm): llama.cpp turns
the schema into a grammar, so the answer is JSON that parses and has the schema's keys —
with the hermes tools offered (the JSON-action protocol: the format is the reply's args)
and without any tool (the format goes to llama.cpp as `response_format`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import TurnCompleted
from hermes.agent.output_format import JsonObjectFormat, JsonSchemaFormat, OutputFormat
from hermes.agent.providers.local import LocalProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest, TurnResult

pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(900)]

OPTIONS = EngineOptions(stream_retries=1, stale_timeout=120.0, max_iterations=4)
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
TEAM: dict[str, Any] = {
    "type": "object",
    "properties": {"team": {"type": "string"}, "members": {"type": "array", "items": {"$ref": "#/$defs/Person"}}},
    "required": ["team", "members"],
    "$defs": {"Person": PERSON},
}


async def answer(provider: LocalProvider, tools: ToolRegistry | None, text: str, fmt: OutputFormat) -> TurnResult:
    agent = Agent(provider, store=None, model=provider.model_name, tools=tools, options=OPTIONS)
    events = [e async for e in agent.run_turn(TurnRequest(input=text, persist=False, output_format=fmt))]
    assert isinstance(events[-1], TurnCompleted)
    result = events[-1].result
    assert result.status == "completed", result.error
    return result


@pytest.mark.parametrize("with_tools", [True, False], ids=["json-actions", "no-tools"])
async def test_a_json_schema_answer_parses_and_has_the_required_keys(
    local_provider: LocalProvider, core_tools: ToolRegistry, with_tools: bool
) -> None:
    fmt = JsonSchemaFormat("person", PERSON, strict=True)
    result = await answer(
        local_provider, core_tools if with_tools else None, "Describe Ada Lovelace as a person aged 36.", fmt
    )
    value = json.loads(result.final_text)
    assert set(value) == {"name", "age"}
    assert isinstance(value["name"], str) and isinstance(value["age"], int)


async def test_a_schema_with_definitions_under_json_actions(
    local_provider: LocalProvider, core_tools: ToolRegistry
) -> None:
    fmt = JsonSchemaFormat("team", TEAM, strict=True)
    result = await answer(local_provider, core_tools, "Name a team of two people, Ada (36) and Alan (41).", fmt)
    value = json.loads(result.final_text)
    assert isinstance(value["team"], str) and isinstance(value["members"], list)
    assert all(set(member) == {"name", "age"} for member in value["members"])


async def test_json_object_is_an_object(local_provider: LocalProvider, core_tools: ToolRegistry) -> None:
    result = await answer(local_provider, core_tools, "Give the capital of France as JSON.", JsonObjectFormat())
    assert isinstance(json.loads(result.final_text), dict)
