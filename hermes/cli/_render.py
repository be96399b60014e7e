"""Showing a turn's events in a terminal or a pipe.

stdout carries only the answer: Markdown rendered live by rich on a terminal, the raw
text when piped. Tool activity, retries and warnings go to stderr, one line each.
`--json` prints one JSON object per event instead.

What reaches a terminal goes through `hermes.terminal_text.for_terminal` first (rich
passes ESC and the C1 controls through): the activity lines always (before their
colour is added), the answer when stdout is a terminal. A piped answer is the model's
text byte for byte.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO, assert_never

from hermes.agent.context import compacted_text
from hermes.agent.events import (
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
    event_to_dict,
)
from hermes.cli._common import json_line
from hermes.terminal_text import for_terminal
from hermes.turn_outcomes import failure_summary


def _without_messages(data: dict[str, object]) -> None:
    """Drop the transcript from a `turn.completed` line (the `result` line carries it)."""
    for value in data.values():
        if isinstance(value, dict) and "messages" in value:
            del value["messages"]


class JsonRenderer:
    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out

    def handle(self, event: AgentEvent) -> None:
        data = event_to_dict(event)
        if isinstance(event, TurnCompleted):
            # The turn's messages are printed once, in the `result` line that follows.
            _without_messages(data)
        self.out.write(json_line(data))
        self.out.flush()

    def close(self) -> None:
        self.out.flush()


class _Activity:
    """Tool and status lines on stderr."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.color = err.isatty()

    def line(self, text: str, style: str = "") -> None:
        text = for_terminal(text)
        if self.color and style:
            codes = {"dim": "2", "green": "32", "red": "31", "yellow": "33"}
            text = f"\x1b[{codes[style]}m{text}\x1b[0m"
        self.err.write(text + "\n")
        self.err.flush()

    def handle(self, event: AgentEvent) -> None:
        match event:
            case ToolStarted():
                self.line(f"→ {event.name}: {event.preview}", "dim")
            case ToolCompleted():
                mark, style = ("✗", "red") if event.is_error else ("✓", "green")
                detail = f" — {failure_summary(event.result)}" if event.is_error and event.result.strip() else ""
                self.line(f"{mark} {event.name} ({event.duration:.1f} s){detail}", style)
            case Retrying():
                self.line(f"↻ reconnecting ({event.attempt}/{event.max_attempts}): {event.reason}", "yellow")
            case StreamStalled():
                self.line(event.message, "yellow")
            case ContextCompacted():
                self.line(f"⟲ {compacted_text(event)}", "dim")
            case Status():
                if event.kind != "waiting":
                    self.line(f"· {event.text}", "dim")
            case (
                TurnStarted()
                | TextDelta()
                | ReasoningDelta()
                | SegmentEnd()
                | ToolCallGenerating()
                | ApprovalRequested()
                | ModelProgress() | ToolOutput()
                | ClientToolCalls()
                | TurnCompleted()
            ):
                pass  # not shown as an activity line (the CLI passes no client tools)
            case _:
                assert_never(event)


class _AnswerRenderer:
    """Answer text to stdout segment by segment; everything else to the activity lines."""

    def __init__(self, err: TextIO) -> None:
        self.activity = _Activity(err)

    def handle(self, event: AgentEvent) -> None:
        match event:
            case TextDelta():
                self._text(event.text)
            case SegmentEnd():
                self._end_segment()
            case ToolStarted() | StreamStalled() | Retrying():
                # Activity lines must not land inside an answer still being drawn.
                self._end_segment()
                self.activity.handle(event)
            case _:
                self.activity.handle(event)

    def _text(self, text: str) -> None:
        raise NotImplementedError

    def _end_segment(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._end_segment()


class PlainRenderer(_AnswerRenderer):
    """Raw answer text to stdout as it arrives."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        super().__init__(err)
        self.out = out
        self._segment_open = False
        self._ends_with_newline = True

    def _text(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self._segment_open = True
            self._ends_with_newline = text.endswith("\n")

    def _end_segment(self) -> None:
        if self._segment_open and not self._ends_with_newline:
            self.out.write("\n")
            self.out.flush()
        self._segment_open = False
        self._ends_with_newline = True


class MarkdownRenderer(_AnswerRenderer):
    """Live Markdown on a terminal; each assistant segment is its own live block."""

    REFRESH_SECONDS = 0.08

    def __init__(self, err: TextIO = sys.stderr) -> None:
        from rich.console import Console

        super().__init__(err)
        self.console = Console()
        self._live: Any = None
        self._buffer = ""
        self._last_refresh = 0.0

    def _text(self, text: str) -> None:
        self._buffer += for_terminal(text)
        self._refresh()

    def _refresh(self, force: bool = False) -> None:
        from rich.live import Live
        from rich.markdown import Markdown

        if self._live is None:
            self._live = Live(console=self.console, auto_refresh=False, vertical_overflow="visible")
            self._live.start()
        now = time.monotonic()
        if force or now - self._last_refresh >= self.REFRESH_SECONDS:
            self._live.update(Markdown(self._buffer), refresh=True)
            self._last_refresh = now

    def _end_segment(self) -> None:
        if self._live is not None:
            self._refresh(force=True)
            self._live.stop()
            self._live = None
        self._buffer = ""


def make_renderer(as_json: bool) -> JsonRenderer | PlainRenderer | MarkdownRenderer:
    if as_json:
        return JsonRenderer()
    if sys.stdout.isatty():
        return MarkdownRenderer()
    return PlainRenderer()
