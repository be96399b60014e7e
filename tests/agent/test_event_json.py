"""The engine events' one JSON form: `event_from_dict` inverts `event_to_dict` for every type."""

from __future__ import annotations

import json
import typing

import pytest

from hermes.agent.client_tools import ClientToolCall
from hermes.agent.events import (
    EVENT_TYPES,
    AgentEvent,
    ApprovalRequested,
    ClientToolCalls,
    ContextCompacted,
    ModelProgress,
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    event_from_dict,
    event_to_dict,
)
from hermes.agent.types import TurnResult, Usage

RESULT = TurnResult(
    session_id="s1",
    status="partial",
    final_text="Half an answ",
    messages=[
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                "function": {"name": "f", "arguments": "{}"}}]},
    ],  # fmt: skip
    usage=Usage(10, 5, 15, 3),
    api_calls=2,
    model="m",
    error="cut off",
    error_code="output_truncated",
    reasoning="hmm",
    context_tokens=1200,
    client_calls=(ClientToolCall("c2", "lookup", '{"q": "x"}'),),
    conversation_mark="fp",
)

SAMPLES: list[AgentEvent] = [
    TurnStarted(session_id="s1", model="m"),
    TextDelta("héllo ✓"),
    ReasoningDelta("thinking…"),
    SegmentEnd(last=True),
    ToolCallGenerating(call_id="c1", name="terminal", index=0),
    ToolStarted(call_id="c1", name="terminal", arguments={"command": "ls", "nested": {"a": [1, 2]}}, preview="ls"),
    ToolCompleted(call_id="c1", name="terminal", result="a\nb", duration=0.125, is_error=True,
                  arguments={"command": "ls"}),  # fmt: skip
    ApprovalRequested(call_id="c1", tool_name="terminal", command="rm -r x", reason="recursive", grant="rm"),
    StreamStalled(tool_names=("write_file", "patch"), message="⚠ Stream stalled"),
    Retrying(attempt=2, max_attempts=3, reason="503", delay=0.5),
    Status(kind="files_changed", text="2 files"),
    ContextCompacted(before_tokens=900, after_tokens=300, summarized_messages=6, kept_messages=2,
                     reason="manual", summary="earlier: x"),  # fmt: skip
    ModelProgress(phase="generating", tokens=12, tokens_per_second=30.5),
    ToolOutput(call_id="c1", name="terminal", text="line 4\nline 5"),
    ClientToolCalls(calls=(ClientToolCall("c2", "lookup", "{}"), ClientToolCall("c3", "other", '{"a":1}'))),
    TurnCompleted(RESULT),
]


def test_the_samples_and_the_type_list_cover_the_whole_event_union() -> None:
    union_types = {cls.__dataclass_fields__["type"].default for cls in typing.get_args(AgentEvent)}
    assert union_types == EVENT_TYPES
    assert {event.type for event in SAMPLES} == EVENT_TYPES


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_event_survives_its_json_form(event: AgentEvent) -> None:
    data = event_to_dict(event)
    assert next(iter(data)) == "type"
    assert event_from_dict(data) == event
    assert event_from_dict(json.loads(json.dumps(data))) == event  # as the journal stores it


def test_a_minimal_turn_result_reads_back_with_its_defaults() -> None:
    event = TurnCompleted(TurnResult("s", "completed", "ok"))
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event


@pytest.mark.parametrize(
    "data",
    [
        {"type": "assistant.delta", "delta": "x"},  # a wire frame's name, not an event type
        {"text": "no type"},
        {"type": 7},
        {"type": "text.delta"},  # a field missing
        {"type": "text.delta", "text": "x", "extra": 1},  # a field unknown
        {"type": "turn.completed", "result": {"status": "completed"}},
        {"type": "stream.stalled", "message": "m", "tool_names": None},
        {"type": "client_tool.calls", "calls": [], "extra": 1},
        {"type": "turn.completed", "result": {"session_id": "s", "status": "completed", "final_text": ""}, "x": 1},
    ],
)
def test_what_is_not_an_event_is_a_value_error(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        event_from_dict(data)
