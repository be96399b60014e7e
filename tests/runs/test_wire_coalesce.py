"""`coalesce`: adjacent deltas of one kind merge; nothing else does, and the order holds."""

from __future__ import annotations

from hermes.agent.events import ReasoningDelta, SegmentEnd, Status, TextDelta, TurnStarted
from hermes.runs.wire import coalesce


def test_adjacent_deltas_of_one_kind_merge_in_order() -> None:
    events = [
        TurnStarted(session_id="s", model="m"),
        ReasoningDelta("think "),
        ReasoningDelta("hard"),
        TextDelta("Hel"),
        TextDelta("lo"),
        SegmentEnd(),
        TextDelta(" again"),
        Status("info", "x"),
        TextDelta("!"),
        TextDelta("!"),
    ]
    assert coalesce(events) == [
        TurnStarted(session_id="s", model="m"),
        ReasoningDelta("think hard"),
        TextDelta("Hello"),
        SegmentEnd(),
        TextDelta(" again"),
        Status("info", "x"),
        TextDelta("!!"),
    ]


def test_text_and_reasoning_never_merge_with_each_other() -> None:
    events = [TextDelta("a"), ReasoningDelta("b"), TextDelta("c")]
    assert coalesce(events) == events


def test_one_event_is_left_as_it_is() -> None:
    only = [TextDelta("a")]
    assert coalesce(only) is only


def test_a_batch_of_one_kind_becomes_one_delta() -> None:
    words = [f"w{i} " for i in range(16)]
    assert coalesce([TextDelta(word) for word in words]) == [TextDelta("".join(words))]
    assert coalesce([ReasoningDelta(word) for word in words]) == [ReasoningDelta("".join(words))]
