"""The JSON-action adapter steers a small model: a question gets no write tools, and after
an edit the check the request names is asked for before the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.provider import ModelRequest
from hermes.agent.providers.json_actions import JsonActionProvider
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.providers.task_cues import asks_for_change, named_check
from hermes.agent.tools import default_registry
from hermes.testing.upstream import ScriptedUpstream, text_reply

TOOLS = default_registry().schemas()


def offered(body: dict[str, Any]) -> set[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return {branch["properties"]["action"]["const"] for branch in schema["anyOf"]}


async def inner_request(upstream: ScriptedUpstream, messages: list[dict[str, Any]]) -> dict[str, Any]:
    upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "ok"}})))
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        [event async for event in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
    finally:
        await provider.aclose()
    return upstream.requests[-1].body


@pytest.mark.parametrize(
    ("request_text", "writes"),
    [
        ("What port does settings.toml configure?", False),
        ("Which file defines parse_args?", False),
        ("Summarise README.md in one line", False),
        ("Fix the off-by-one in items.py", True),
        ("Rename mul to multiply in ops.py and main.py", True),
        ("Create hello.txt containing hi", True),
    ],
)
async def test_a_question_is_offered_no_write_tools(
    upstream: ScriptedUpstream, request_text: str, writes: bool
) -> None:
    body = await inner_request(upstream, [{"role": "user", "content": request_text}])

    assert {"read_file", "search_files", "terminal", "reply"} <= offered(body)
    assert ({"write_file", "patch"} <= offered(body)) is writes
    assert asks_for_change(request_text) is writes
    assert "write_file" in body["messages"][0]["content"]  # the prompt (and its cache) stays the same


def test_the_check_a_request_names() -> None:
    assert named_check("Fix calc.py so that `python -m pytest -q` passes") == "python -m pytest -q"
    assert named_check("make the tests pass (pytest -q)") == "pytest -q"
    assert named_check("use `foo_bar` and then run `npm test`") == "npm test"
    assert named_check("what does `foo` return?") is None


def _edit_then(request: str, *after: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": '{"path": "calc.py"}'}}
    return [
        {"role": "user", "content": request},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Patched /w/calc.py: replaced 1 occurrence.\n-a\n+b"},
        *after,
    ]


async def test_after_an_edit_the_named_check_is_asked_for(upstream: ScriptedUpstream) -> None:
    body = await inner_request(upstream, _edit_then("Fix calc.py so `python -m pytest -q` passes"))

    assert "run the check the request names with terminal: python -m pytest -q" in body["messages"][-1]["content"]


async def test_once_the_check_ran_the_model_is_left_to_answer(upstream: ScriptedUpstream) -> None:
    command = '{"command": "python -m pytest -q"}'
    run = {"id": "c2", "type": "function", "function": {"name": "terminal", "arguments": command}}
    messages = _edit_then(
        "Fix calc.py so `python -m pytest -q` passes",
        {"role": "assistant", "content": None, "tool_calls": [run]},
        {"role": "tool", "tool_call_id": "c2", "content": "exit code: 0\n1 passed"},
    )
    body = await inner_request(upstream, messages)

    assert "run the check" not in body["messages"][-1]["content"]
    assert "with reply if this result is enough" in body["messages"][-1]["content"]


async def test_the_file_a_request_names_is_read_first_without_a_model_call(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.provider import ToolCallChunk

    (tmp_path / "jobs.py").write_text("class JobQueue: ...\n")
    system = {"role": "system", "content": default_system_prompt(str(tmp_path))}
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        named = [system, {"role": "user", "content": "Summarise jobs.py in one line"}]
        first = [e async for e in provider.stream(ModelRequest(model="m", messages=named, tools=TOOLS))]
        absent = [system, {"role": "user", "content": "Summarise other.py"}]
        missing = ModelRequest(model="m", messages=absent, tools=TOOLS)
        upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "no such file"}})))
        second = [e async for e in provider.stream(missing)]
    finally:
        await provider.aclose()

    calls = [e for e in first if isinstance(e, ToolCallChunk)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("read_file", {"path": "jobs.py"})]
    assert len(upstream.requests) == 1  # only the request naming a file that does not exist asked the model
    assert not any(isinstance(e, ToolCallChunk) for e in second)


async def test_a_fix_opens_with_the_named_check_then_the_named_file(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.provider import ToolCallChunk

    (tmp_path / "main.py").write_text("from helper import answer\n")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": "main.py fails. Fix the import so that `python main.py` prints 42."},
    ]
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    steps = []
    try:
        for n in range(2):
            events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
            (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
            steps.append((chunk.name, json.loads(chunk.arguments)))
            call = {"id": f"c{n}", "function": {"name": chunk.name, "arguments": chunk.arguments}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "result"})
    finally:
        await provider.aclose()

    assert steps == [("terminal", {"command": "python main.py"}), ("read_file", {"path": "main.py"})]
    assert upstream.requests == []  # neither step asked the model
