"""The bundled model end to end through the real engine (marked local_llm: needs hermes[local]).

Assertions are about structure, never exact wording: an answer arrives, the file is
read through the tool, the right version is in the answer, interrupt leaves a usable
server, a damaged model file is refused.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import AgentEvent, TextDelta, ToolCompleted, ToolStarted, TurnCompleted
from hermes.agent.providers.local import LocalProvider, LocalServer
from hermes.agent.providers.local_model import BUNDLED, ModelChecksumError, verify_model
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest, TurnResult

pytestmark = pytest.mark.local_llm

OPTIONS = EngineOptions(stream_retries=1, stale_timeout=120.0, max_iterations=6)


def make_agent(provider: LocalProvider, tools: ToolRegistry | None = None) -> Agent:
    return Agent(provider, store=None, model=provider.model_name, tools=tools, options=OPTIONS)


async def run(agent: Agent, request: TurnRequest) -> tuple[list[AgentEvent], TurnResult]:
    events = [event async for event in agent.run_turn(request)]
    assert isinstance(events[-1], TurnCompleted)
    return events, events[-1].result


async def test_an_answer_arrives(local_provider: LocalProvider, core_tools: ToolRegistry) -> None:
    events, result = await run(make_agent(local_provider, core_tools), TurnRequest(input="Hello! Who are you?", persist=False))
    assert result.status == "completed", result.error
    assert result.final_text.strip()
    assert any(isinstance(e, TextDelta) for e in events)
    assert not any(isinstance(e, ToolStarted) for e in events)  # a greeting needs no tool
    assert result.usage.input_tokens > 0


async def test_reads_pyproject_through_the_tool_and_answers_the_version(
    local_provider: LocalProvider, core_tools: ToolRegistry, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "4.7.12"\n', encoding="utf-8")
    request = TurnRequest(input="read pyproject.toml and tell me the version", cwd=str(tmp_path), persist=False)
    events, result = await run(make_agent(local_provider, core_tools), request)

    assert result.status == "completed", result.error
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert started and started[0].name == "read_file"
    assert "pyproject.toml" in started[0].arguments["path"]
    done = [e for e in events if isinstance(e, ToolCompleted)]
    assert done and not done[0].is_error and "4.7.12" in done[0].result
    assert "4.7.12" in result.final_text
    # The transcript has the native shape: an assistant tool call, then its tool result.
    roles = [m["role"] for m in result.messages]
    assert roles[:3] == ["user", "assistant", "tool"] and roles[-1] == "assistant"
    call = result.messages[1]["tool_calls"][0]
    assert call["function"]["name"] == "read_file" and "pyproject.toml" in json.loads(call["function"]["arguments"])["path"]
    assert result.messages[2]["tool_call_id"] == call["id"]


async def test_interrupt_stops_generation_and_the_server_stays_usable(
    local_provider: LocalProvider, core_tools: ToolRegistry
) -> None:
    agent = make_agent(local_provider, core_tools)
    first_text = asyncio.Event()
    events: list[AgentEvent] = []

    async def consume() -> None:
        async for event in agent.run_turn(TurnRequest(input="Write a long story about a lighthouse keeper.", persist=False)):
            events.append(event)
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), timeout=60)
    task.cancel()
    await asyncio.wait_for(task, timeout=30)  # the engine absorbs the cancel and ends the turn

    assert isinstance(events[-1], TurnCompleted)
    assert events[-1].result.status == "interrupted"

    _, result = await run(agent, TurnRequest(input="Say OK.", persist=False))
    assert result.status == "completed" and result.final_text.strip()


def test_a_corrupted_model_file_is_refused_by_the_checksum(local_server: LocalServer, tmp_path: Path) -> None:
    copy = tmp_path / BUNDLED.filename
    shutil.copyfile(local_server.model_path, copy)
    with copy.open("r+b") as fh:
        fh.seek(BUNDLED.size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelChecksumError):
        verify_model(copy, BUNDLED)
