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

# A few generations by a 1.5B model on a shared 2-core CPU can outlast the suite's 120 s per test.
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(900)]

OPTIONS = EngineOptions(stream_retries=1, stale_timeout=120.0, max_iterations=6)


def make_agent(provider: LocalProvider, tools: ToolRegistry | None = None) -> Agent:
    return Agent(provider, store=None, model=provider.model_name, tools=tools, options=OPTIONS)


async def run(agent: Agent, request: TurnRequest) -> tuple[list[AgentEvent], TurnResult]:
    events = [event async for event in agent.run_turn(request)]
    assert isinstance(events[-1], TurnCompleted)
    return events, events[-1].result


async def test_an_answer_arrives(local_provider: LocalProvider, core_tools: ToolRegistry) -> None:
    events, result = await run(
        make_agent(local_provider, core_tools), TurnRequest(input="Hello! Who are you?", persist=False)
    )
    assert result.status == "completed", result.error
    assert result.final_text.strip()
    assert any(isinstance(e, TextDelta) for e in events)
    assert not any(isinstance(e, ToolStarted) for e in events)  # a greeting needs no tool
    assert result.usage.input_tokens > 0


async def test_reads_pyproject_through_the_tool_and_answers_the_version(
    local_provider: LocalProvider, core_tools: ToolRegistry, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = tmp_path_factory.mktemp("demo")
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "4.7.12"\n', encoding="utf-8")
    request = TurnRequest(input="read pyproject.toml and tell me the version", cwd=str(project), persist=False)
    events, result = await run(make_agent(local_provider, core_tools), request)

    assert result.status == "completed", result.error
    reads = [e for e in events if isinstance(e, ToolCompleted) and e.name == "read_file" and not e.is_error]
    assert reads and "4.7.12" in reads[0].result, [e for e in events if isinstance(e, ToolStarted)]
    assert "4.7.12" in result.final_text, result.messages
    assert (project / "pyproject.toml").read_text(encoding="utf-8").count("4.7.12") == 1  # read, not edited
    # The transcript has the native shape: assistant tool calls, each answered by its tool result.
    assert result.messages[0]["role"] == "user" and result.messages[-1]["role"] == "assistant"
    calls = {c["id"]: c for m in result.messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()}
    results = [m for m in result.messages if m["role"] == "tool"]
    assert calls and [m["tool_call_id"] for m in results] == list(calls)
    assert any(
        c["function"]["name"] == "read_file" and "pyproject.toml" in json.loads(c["function"]["arguments"])["path"]
        for c in calls.values()
    )


async def test_interrupt_stops_generation_and_the_server_stays_usable(local_provider: LocalProvider) -> None:
    # No tools: with them the model may first write the story to a file, and the stop
    # would then land between model calls instead of during generation.
    agent = make_agent(local_provider)
    first_text = asyncio.Event()
    events: list[AgentEvent] = []
    handle = agent.start(TurnRequest(input="Write a long story about a lighthouse keeper.", persist=False))

    async def consume() -> None:
        async with handle:
            async for event in handle.events():
                events.append(event)
                if isinstance(event, TextDelta):
                    first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), timeout=120)
    handle.stop()
    await asyncio.wait_for(task, timeout=30)  # the engine stops generating and ends the turn

    assert isinstance(events[-1], TurnCompleted)
    assert events[-1].result.status == "interrupted"

    _, result = await run(agent, TurnRequest(input="Say OK.", persist=False))
    assert result.status == "completed" and result.final_text.strip()


def test_a_corrupted_model_file_is_refused_by_the_checksum(local_server: LocalServer, tmp_path: Path) -> None:
    copy = tmp_path / BUNDLED.filename
    shutil.copyfile(local_server.model_path, copy)
    try:
        with copy.open("r+b") as fh:
            fh.seek(BUNDLED.size // 2)
            byte = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([byte[0] ^ 0xFF]))
        with pytest.raises(ModelChecksumError):
            verify_model(copy, BUNDLED)
    finally:
        copy.unlink()  # 1.1 GB: pytest keeps the last runs' tmp folders


async def test_the_prompt_prefix_is_saved_and_restored_across_providers(
    local_server: LocalServer, core_tools: ToolRegistry
) -> None:
    """A new process (here: a new provider) restores the system prompt's cache instead of re-reading it."""
    assert local_server.slot_dir is not None
    request = TurnRequest(input="hi", persist=False, system_prompt="You are a terse assistant. Test prefix 7.")
    first = LocalProvider(local_server, local_server.alias, owns_server=False)
    try:
        _, result = await run(make_agent(first, core_tools), request)
        assert result.status == "completed"
    finally:
        await first.aclose()
    saved = sorted(local_server.slot_dir.glob("prompt-*.bin"))
    assert saved, "the prompt cache was not saved"

    second = LocalProvider(local_server, local_server.alias, owns_server=False)
    try:
        _, result = await run(make_agent(second, core_tools), request)
        assert result.status == "completed" and result.final_text.strip()
    finally:
        await second.aclose()
    assert sorted(local_server.slot_dir.glob("prompt-*.bin")) == saved  # restored, not saved again


async def test_a_session_continued_by_a_new_process_reads_none_of_its_turns_again(
    local_server: LocalServer, core_tools: ToolRegistry
) -> None:
    """The slot is saved when a turn ends; a new provider (process) continuing the session restores it."""
    assert local_server.slot_dir is not None
    system = "You are a terse assistant. Test conversation 11."
    first = LocalProvider(local_server, local_server.alias, owns_server=False)
    try:
        _, one = await run(make_agent(first, core_tools), TurnRequest(input="Say hello.", persist=False,
                                                                      system_prompt=system))
    finally:
        await first.aclose()  # waits for the save
    assert one.status == "completed"
    assert list(local_server.slot_dir.glob("turn-*.bin")), "the conversation was not saved"

    # Something else uses the one slot in between (another session's request).
    other = LocalProvider(local_server, local_server.alias, owns_server=False)
    try:
        await run(make_agent(other, core_tools), TurnRequest(input="Name a colour.", persist=False))
    finally:
        await other.aclose()

    second = LocalProvider(local_server, local_server.alias, owns_server=False)
    request = TurnRequest(input="Say goodbye.", persist=False, system_prompt=system, history=one.messages)
    try:
        _, two = await run(make_agent(second, core_tools), request)
    finally:
        await second.aclose()
    assert two.status == "completed"
    # The first turn's prompt and answer came from the restored cache, not read again.
    assert two.usage.cached_input_tokens >= one.usage.input_tokens, (two.usage, one.usage)


async def test_fixes_the_calc_add_bug_from_issue_12(
    local_provider: LocalProvider, core_tools: ToolRegistry, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The task a new user tried: the edit must land, whatever the model's first patch looked like."""
    project = tmp_path_factory.mktemp("calc")
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
    request = TurnRequest(
        input="add in calc.py returns a - b; fix it so add(2, 3) is 5", cwd=str(project), persist=False, yolo=True
    )
    events, result = await run(make_agent(local_provider, core_tools), request)

    assert result.status == "completed", result.error
    namespace: dict[str, object] = {}
    exec((project / "calc.py").read_text(encoding="utf-8"), namespace)  # noqa: S102 - the file the test wrote
    add, mul = namespace["add"], namespace["mul"]
    assert callable(add) and callable(mul)
    assert add(2, 3) == 5 and mul(2, 3) == 6, [e for e in events if isinstance(e, ToolCompleted)]
