"""What `hermes chat -q` prints for each kind of event: the answer on stdout, one activity line each on stderr."""

from __future__ import annotations

import io

from hermes.agent.context import compacted_text
from hermes.agent.events import (
    AgentEvent,
    ApprovalRequested,
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
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.types import TurnResult
from hermes.cli._render import PlainRenderer

COMPACTED = ContextCompacted(9000, 1200, 14, 4, "threshold")
EVENTS: list[AgentEvent] = [
    TurnStarted("s1", "m"),
    ReasoningDelta("hmm"),
    TextDelta("Let me look"),
    ToolCallGenerating("c1", "shell", 0),
    ToolStarted("c1", "shell", {"command": "ls"}, "ls"),
    ToolCompleted("c1", "shell", "a\nb", 0.4, False),
    ToolCompleted("c2", "shell", "boom: no such file\nmore", 1.0, True),
    ToolCompleted("c3", "shell", "", 2.0, True),
    ApprovalRequested("c4", "shell", "rm -rf x", "deletes files"),
    Retrying(2, 5, "connection reset", 1.0),
    TextDelta("Done.\n"),
    StreamStalled(("shell",), "still waiting on shell"),
    Status("waiting", "waiting for the model"),
    Status("info", "streaming is off for this model"),
    COMPACTED,
    ModelProgress("generating", 10, 5.0),
    TextDelta("Bye"),
    SegmentEnd(),
    TurnCompleted(TurnResult("s1", "completed", "Bye")),
]


def test_plain_renderer_prints_the_answer_and_one_line_per_activity() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err)
    for event in EVENTS:
        renderer.handle(event)
    renderer.close()

    assert out.getvalue() == "Let me look\nDone.\nBye\n"
    assert err.getvalue().splitlines() == [
        "→ shell: ls",
        "✓ shell (0.4 s)",
        "✗ shell (1.0 s) — boom: no such file",
        "✗ shell (2.0 s)",
        "↻ reconnecting (2/5): connection reset",
        "still waiting on shell",
        "· streaming is off for this model",
        f"⟲ {compacted_text(COMPACTED)}",
    ]
