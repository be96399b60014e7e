"""How a stored tool call and a stored turn ended, read back from the session's messages.

The TUI's replay of a resumed session and `hermes sessions show` both use this, so a
denied, failed or interrupted call, and a turn that failed or was interrupted, read the same
in both. It sits above `hermes.store` (it reads its records) and below `hermes.cli` and
`hermes.tui`.

What is stored (and so what this reads):
- a tool result is exactly what the model saw: a refusal starts with one of the approval
  policy's prefixes, a tool error with "Error:", a call stopped by an interrupt is the
  engine's placeholder (hermes.agent._turn.INTERRUPTED_TOOL_RESULT);
- the partial answer of a turn that ended badly is kept with `finish_reason` "interrupted" or
  "failed"; a turn that failed before any text left no assistant message after its last
  user or tool message;
- the session's `end_reason` is the end of its newest turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hermes.store.records import IMPORTED, MessageRecord

ToolOutcome = Literal["done", "failed", "denied", "blocked", "interrupted"]
TurnEnd = Literal["failed", "interrupted"]

__all__ = ["TurnEnd", "TurnMark", "ToolOutcome", "failure_summary", "tool_outcome", "turn_marks"]

# The engine's own texts (hermes.agent._turn.INTERRUPTED_TOOL_RESULT, approval's
# REFUSAL_PREFIXES), named here so reading a transcript never imports the engine; a test
# checks that they agree.
INTERRUPTED_PREFIX = "[interrupted:"
DENIED_PREFIX = "DENIED:"
BLOCKED_PREFIX = "BLOCKED by the safety policy:"


def tool_outcome(result: str) -> ToolOutcome:
    """How a tool call ended, from the result text the model saw."""
    text = result.lstrip()
    if text.startswith(INTERRUPTED_PREFIX):
        return "interrupted"
    if text.startswith(DENIED_PREFIX):
        return "denied"
    if text.startswith(BLOCKED_PREFIX):
        return "blocked"
    if text.lower().startswith(("error", "✗")):
        return "failed"
    return "done"


SUMMARY_CHARS = 160

_SHORT: dict[ToolOutcome, str] = {
    "denied": "denied: not run (the model was told not to retry it)",
    "blocked": "blocked by the safety policy: not run",
    "interrupted": "interrupted",
}


def failure_summary(result: str, limit: int = SUMMARY_CHARS) -> str:
    """One short line for the person about a failed call: a denial or a block in a few
    words (the long text is the model's; the person already answered or it is a rule),
    else the result's first line, cut at a word with "…" when longer than `limit`."""
    short = _SHORT.get(tool_outcome(result))
    if short is not None:
        return short
    first = result.strip().splitlines()[0] if result.strip() else ""
    if len(first) <= limit:
        return first
    cut = first[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


@dataclass(frozen=True, slots=True)
class TurnMark:
    """A turn that did not complete: shown after its last stored message."""

    after_message_id: int
    end: TurnEnd
    text: str


_TEXT: dict[TurnEnd, str] = {
    "interrupted": "⏹ this turn was interrupted",
    "failed": "✗ this turn failed",
}


def turn_marks(messages: Sequence[MessageRecord], end_reason: str | None) -> dict[int, TurnMark]:
    """The turns of `messages` (a whole session, oldest first) that failed or were
    interrupted, by the id of their last message. `end_reason` is the session's (its newest
    turn's end)."""
    turns: list[list[MessageRecord]] = []
    for message in messages:
        if message.role == "user" and message.finish_reason != IMPORTED or not turns:
            turns.append([])
        turns[-1].append(message)
    marks: dict[int, TurnMark] = {}
    for index, turn in enumerate(turns):
        end = _turn_end(turn, newest=index == len(turns) - 1, end_reason=end_reason)
        if end is not None:
            last = turn[-1].id
            answerless = turn[-1].role in ("user", "tool")
            text = _TEXT[end] + (" before it answered" if answerless else "")
            marks[last] = TurnMark(last, end, text)
    return marks


_SESSION_END: dict[str, TurnEnd] = {"failed": "failed", "interrupted": "interrupted", "cancelled": "interrupted"}


def _turn_end(turn: list[MessageRecord], *, newest: bool, end_reason: str | None) -> TurnEnd | None:
    reasons = {m.finish_reason for m in turn if m.role == "assistant"}
    if "interrupted" in reasons or any(
        m.role == "tool" and tool_outcome(_text(m)) == "interrupted" for m in turn
    ):
        return "interrupted"
    if "failed" in reasons:
        return "failed"
    if newest:
        return _SESSION_END.get(end_reason or "")
    if turn[0].role == "user" and turn[-1].role in ("user", "tool"):
        return "failed"  # a later turn began, and this one never answered
    return None


def _text(message: MessageRecord) -> str:
    content = message.content
    return content if isinstance(content, str) else ""
