"""Pieces every wire format shares: the status payload, the usage object, the outcome.

Segments: a turn's assistant text can come in segments (text, tool calls, more text).
Every wire format separates them with `SEGMENT_SEPARATOR` (a blank line) placed at the
end of the earlier segment's text, never between items and never at the start of one:
clients concatenate several message items with nothing in between, some keep only the
last one, and none expects an item to open with a blank line. A segment that tool calls
close (`SegmentEnd`) is followed by more of the turn, so its text ends with the
separator as soon as it closes (when the turn then ends without more text, the answer
ends with it). `SegmentJoiner` does it to streamed deltas, `answer_segments` to a
finished result, so a non-streamed answer equals the concatenation of the streamed
deltas of the same turn.

The translators (chat chunks in `server/openai/chat.py`, Responses events in
`server/openai/responses_stream.py`, run and session frames read from a run's log in
`server/rest/run_frames.py`) build their payloads from these, so a status line, a usage
block or an error outcome looks the same on every endpoint. It lives in the run service
because the run driver (`hermes.runs.driver`) records a settled run's usage with it; it
imports nothing from the HTTP layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, assert_never

from hermes.agent.context import compacted_text
from hermes.agent.events import AgentEvent, ContextCompacted, ReasoningDelta, Retrying, Status, StreamStalled, TextDelta
from hermes.agent.types import TurnResult, Usage
from hermes.error_codes import AGENT_ERROR, INTERRUPTED, OUTPUT_TRUNCATED

UsageNames = Literal["chat", "responses"]
"""`chat`: prompt_tokens/completion_tokens (Chat Completions). `responses`: input_tokens/
output_tokens (Responses, runs, sessions)."""


def status_payload(event: Status | Retrying | StreamStalled | ContextCompacted) -> dict[str, Any]:
    """The one status object: `{"kind", "text"}` plus the event's own numbers.

    It is the body of a named `hermes.status` frame (chat, responses) and of a `status`
    event (runs, session chat).
    """
    match event:
        case Status():
            return {"kind": event.kind, "text": event.text}
        case Retrying():
            return {
                "kind": "retrying",
                "text": f"{event.reason} (attempt {event.attempt}/{event.max_attempts})",
                "attempt": event.attempt,
                "max_attempts": event.max_attempts,
            }
        case StreamStalled():
            return {"kind": "stream_stalled", "text": event.message, "tools": list(event.tool_names)}
        case ContextCompacted():
            return {
                "kind": "context_compacted",
                "text": compacted_text(event),
                "before_tokens": event.before_tokens,
                "after_tokens": event.after_tokens,
                "reason": event.reason,
            }
        case _:
            assert_never(event)


def usage_json(usage: Usage, names: UsageNames = "responses") -> dict[str, int]:
    """The one usage object, in the field names of the wire format."""
    if names == "chat":
        return {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


SEGMENT_SEPARATOR = "\n\n"


class SegmentJoiner:
    """Ends every segment with text that tool calls close with the separator."""

    def __init__(self) -> None:
        self._segment_has_text = False

    def text(self, delta: str) -> str:
        """The delta as it goes on the wire (unchanged)."""
        if delta:
            self._segment_has_text = True
        return delta

    def end_segment(self, last: bool = False) -> str:
        """At `SegmentEnd`: the text that ends the closing segment ("" when it had none, or
        when it is the `last` one: a turn that ends with the client's tool calls)."""
        had_text, self._segment_has_text = self._segment_has_text, False
        return SEGMENT_SEPARATOR if had_text and not last else ""


def answer_segments(result: TurnResult) -> list[str]:
    """The turn's non-empty text segments as they go on the wire.

    The segments are the text of each assistant message that carried tool calls (each
    ending with the separator, except the one whose client calls end the turn), then the
    final text; their concatenation is what a stream of the same turn delivers.
    """
    texts: list[str] = []
    with_calls = [m for m in result.messages[1:] if m.get("role") == "assistant" and m.get("tool_calls")]
    for index, message in enumerate(with_calls):
        content = message.get("content")
        if isinstance(content, str) and content:
            last = bool(result.client_calls) and index == len(with_calls) - 1
            texts.append(content if last else content + SEGMENT_SEPARATOR)
    if result.final_text:
        texts.append(result.final_text)
    return texts


def answer_text(result: TurnResult) -> str:
    """The whole answer of a turn: its segments joined (see `answer_segments`)."""
    return "".join(answer_segments(result))


def coalesce(events: list[AgentEvent]) -> list[AgentEvent]:
    """`events` with each run of adjacent deltas of one kind merged into one delta.

    Text merges with text and reasoning with reasoning; nothing else is merged and the
    order is kept, so the text a client assembles is the same. A translator that got
    several events at once (`TurnHandle.batches()`: its client fell behind) writes one
    frame for what piled up instead of one per upstream chunk. A run's texts are joined
    once, at its end.
    """
    if len(events) < 2:
        return events
    merged: list[AgentEvent] = []
    run: list[str] = []  # the texts of the delta run that ends `merged`
    kind: type[TextDelta | ReasoningDelta] | None = None
    for event in events:
        if isinstance(event, TextDelta | ReasoningDelta) and type(event) is kind:
            run.append(event.text)
            continue
        if kind is not None and len(run) > 1:
            merged[-1] = kind("".join(run))
        if isinstance(event, TextDelta | ReasoningDelta):
            kind, run = type(event), [event.text]
        else:
            kind, run = None, []
        merged.append(event)
    if kind is not None and len(run) > 1:
        merged[-1] = kind("".join(run))
    return merged


def header_safe(text: str, limit: int = 200) -> str:
    """Printable ASCII only, at most `limit` characters (for X-Hermes-Error)."""
    cleaned = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in text)
    return " ".join(cleaned.split())[:limit]


@dataclass(frozen=True)
class Outcome:
    """How a finished turn is reported to an OpenAI client (chat, responses, session chat)."""

    finish_reason: str
    """stop | tool_calls (waiting for the client's tools) | length | error."""
    hermes: dict[str, Any] | None
    """The ``hermes`` block; None for a clean completion."""
    hard_failure: bool
    """No usable text: JSON answers 502 agent_incomplete."""
    error: str | None

    @classmethod
    def of(cls, result: TurnResult | None, *, crash: BaseException | None = None) -> Outcome:
        if crash is not None or result is None:
            message = str(crash) if crash is not None else "The turn ended without a result."
            block = {"completed": False, "partial": False, "failed": True, "error": message, "error_code": AGENT_ERROR}
            return cls("error", block, True, message)
        text = result.final_text or ""
        if result.status == "completed":
            return cls("tool_calls" if result.client_calls else "stop", None, False, None)
        error = result.error or "Agent run did not produce a response."
        partial = result.status == "partial" or (result.status == "interrupted" and bool(text))
        failed = result.status == "failed"
        if result.status == "partial" and text:
            code = OUTPUT_TRUNCATED
            reason = "length"
        else:
            code = result.error_code or (INTERRUPTED if result.status == "interrupted" else AGENT_ERROR)
            reason = "error"
        block = {"completed": False, "partial": partial, "failed": failed, "error": error, "error_code": code}
        return cls(reason, block, not text.strip(), error)

    def headers(self) -> dict[str, str]:
        if self.hermes is None:
            return {}
        headers = {
            "X-Hermes-Completed": "false",
            "X-Hermes-Partial": "true" if self.hermes["partial"] else "false",
        }
        if self.error:
            headers["X-Hermes-Error"] = header_safe(self.error)
        return headers
