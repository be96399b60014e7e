"""Engine events → transcript widgets, at the TUI's edge.

`TurnRenderer.handle(event)` is synchronous: the app stops a turn through its
`TurnHandle`, and the engine closes the request, stops the tools and emits its final
`TurnCompleted` (status "interrupted"), which the renderer shows.
`complete()` branches on `result.error_code` (hermes.error_codes), never on message text.
`history_widgets` turns stored messages into the same widgets for resumed sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, assert_never

from textual.widget import Widget

from hermes import error_codes
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
)
from hermes.agent.types import TurnResult
from hermes.attachment_blocks import split_content
from hermes.store.records import MessageRecord
from hermes.tui.widgets.activity import Activity
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.attachment_card import AttachmentCard, ImageCard
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.reasoning_block import ReasoningBlock
from hermes.tui.widgets.shell_card import replayed_shell_card
from hermes.tui.widgets.tool_card import ToolCard, argument_preview
from hermes.tui.widgets.transcript import Transcript
from hermes.tui.widgets.user_message import UserMessage
from hermes.turn_outcomes import TurnMark, tool_outcome

_PARTIAL = "the answer is incomplete"


@dataclass(slots=True)
class TurnCallbacks:
    """What the renderer tells the app (status bar, session id)."""

    on_started: Callable[[TurnStarted], None]
    on_completed: Callable[[TurnResult], None]
    on_compacted: Callable[[ContextCompacted], None] | None = None


class TurnRenderer:
    """Renders one turn's events into the transcript."""

    def __init__(
        self,
        transcript: Transcript,
        activity: Activity,
        callbacks: TurnCallbacks,
        *,
        stall_after: float = 30.0,
        show_reasoning_live: bool = True,
    ) -> None:
        self.transcript = transcript
        self.activity = activity
        self.callbacks = callbacks
        self.stall_after = stall_after
        self.show_reasoning_live = show_reasoning_live
        self.answer: AssistantMessage | None = None
        self.answers: list[AssistantMessage] = []
        self.reasoning: ReasoningBlock | None = None
        self.cards: dict[str, ToolCard] = {}
        self._stall_messages: list[str] = []
        self.result: TurnResult | None = None
        self.done = False

    # -- dispatch -------------------------------------------------------------------

    def handle(self, event: AgentEvent) -> None:
        if self.done:
            return
        self.activity.touch()
        match event:
            case TurnStarted():
                self.callbacks.on_started(event)
            case TextDelta(text=text):
                self._text(text)
            case ReasoningDelta(text=text):
                self._reasoning(text)
            case SegmentEnd():
                self._close_segment()
            case ToolCallGenerating(call_id=call_id, name=name):
                self._close_segment()
                self._card(call_id, name)
                self.activity.set_phase(f"generating {name}")
            case ToolStarted(call_id=call_id, name=name, arguments=arguments, preview=preview):
                self._close_segment()
                self._card(call_id, name, event.parent_call_id).start(preview, arguments)
                self.activity.set_phase(f"running {name}", waiting_for_model=False)
            case ToolCompleted(
                call_id=call_id, name=name, result=result, duration=duration, is_error=is_error, arguments=arguments
            ):
                self._card(call_id, name, event.parent_call_id).complete(result, duration, is_error, arguments)
                if not any(c.state in ("running", "approval") for c in self.cards.values()):
                    self.activity.set_phase("thinking")
            case ToolOutput(call_id=call_id, name=name, text=text):
                self._card(call_id, name).live_output(text)
            case ApprovalRequested(call_id=call_id, tool_name=tool_name):
                self._card(call_id, tool_name).awaiting_approval()
                self.activity.set_phase(f"{tool_name} awaiting approval", waiting_for_model=False)
            case StreamStalled(tool_names=names, message=message):
                self._stalled(names, message)
            case Retrying(attempt=attempt, max_attempts=max_attempts, reason=reason):
                self.transcript.add(Notice(f"↻ reconnecting ({attempt}/{max_attempts}) — {reason}", "info"))
                self.activity.set_phase(f"reconnecting ({attempt}/{max_attempts})", warning=True)
            case Status(kind=kind, text=text):
                if kind == "waiting":
                    self.activity.set_phase(text or "waiting for the model")
                elif kind == "files_changed":
                    self.transcript.add(Notice(f"✎ {text} · /diff shows it, /undo reverts it", "info"))
                else:
                    self.transcript.add(Notice(text, "info"))
            case ContextCompacted():
                self.transcript.add(compacted_notice(event))
                if self.callbacks.on_compacted is not None:
                    self.callbacks.on_compacted(event)
            case ModelProgress(phase=phase, tokens_per_second=rate):
                self._progress(phase, rate)
            case ClientToolCalls():
                pass  # the TUI passes no client tools
            case TurnCompleted(result=result):
                self.complete(result)
            case _:
                assert_never(event)

    # -- pieces ---------------------------------------------------------------------

    def _text(self, text: str) -> None:
        for message in self._stall_messages:
            if text.strip() and message.strip().startswith(text.strip()) or text.strip() == message.strip():
                return  # the ⚠ line is already shown as a warning card
        if self.reasoning is not None:
            self.reasoning.finish()
            self.reasoning = None
        if self.answer is None:
            self.answer = AssistantMessage(streaming=True)
            self.answers.append(self.answer)
            self.transcript.add(self.answer)
            self.activity.set_phase("answering")
        self.answer.feed(text)

    def _progress(self, phase: str, rate: float | None) -> None:
        """The local model's progress: the phase while nothing else names one, and its rate."""
        if phase == "reading" and self.activity.phase in ("thinking", "answering"):
            self.activity.set_phase("reading the prompt")
        elif phase == "generating" and self.activity.phase in ("thinking", "reading the prompt"):
            self.activity.set_phase("generating")
        if rate is not None:
            self.activity.set_rate(rate)

    def _reasoning(self, text: str) -> None:
        if self.reasoning is None:
            self.reasoning = ReasoningBlock(collapsed=not self.show_reasoning_live)
            self.transcript.add(self.reasoning)
            self.activity.set_phase("reasoning")
        self.reasoning.feed(text)

    def _close_segment(self) -> None:
        if self.answer is not None:
            self.answer.finish()
            self.answer = None
        if self.reasoning is not None:
            self.reasoning.finish()
            self.reasoning = None

    def _card(self, call_id: str, name: str, parent_call_id: str | None = None) -> ToolCard:
        """The card of `call_id`, made on first sight; a subagent's call (`parent_call_id`)
        gets its card inside the card of the `task` call that runs it."""
        card = self.cards.get(call_id)
        if card is None:
            card = ToolCard(call_id, name, stall_after=self.stall_after)
            self.cards[call_id] = card
            parent = self.cards.get(parent_call_id) if parent_call_id is not None else None
            if parent is not None and parent.is_attached:
                card.add_class("-nested")
                parent.mount(card)
            else:
                self.transcript.add(card)
        return card

    def _stalled(self, names: tuple[str, ...], message: str) -> None:
        for card in self.cards.values():
            if card.state == "generating" and (not names or card.tool_name in names):
                card.not_executed("not executed: the stream stalled while its arguments were streaming")
        self._stall_messages.append(message)
        for answer in list(self.answers):
            if answer.drop_suffix(message) and not answer.text.strip():
                self.answers.remove(answer)
                if self.answer is answer:
                    self.answer = None
                answer.remove()
        named = ", ".join(names) or "tool call"
        text = message if all(n in message for n in names) else f"{message} ({named})"
        self.transcript.add(Notice(text, "warning"))

    # -- the end ----------------------------------------------------------------------

    def complete(self, result: TurnResult) -> None:
        self.result = result
        self._close_segment()
        if result.status == "interrupted":
            self._mark_interrupted()
        elif result.status == "failed":
            for card in self.cards.values():
                card.interrupt()
            self.transcript.add(Notice(f"✗ {result.error or 'the turn failed'}", "error"))
        elif result.status == "partial":
            match result.error_code:
                case error_codes.STREAM_STALLED:
                    pass  # its warning card is already shown (StreamStalled)
                case error_codes.OUTPUT_TRUNCATED | error_codes.MAX_ITERATIONS:
                    self.transcript.add(Notice(f"⚠ partial answer: {result.error or _PARTIAL}", "warning"))
                case _:
                    reason = result.error or (result.error_code or "").replace("_", " ") or _PARTIAL
                    self.transcript.add(Notice(f"⚠ partial answer: {reason}", "warning"))
        self.done = True
        self.activity.stop()
        self.callbacks.on_completed(result)

    def interrupted(self) -> None:
        """The worker was cancelled and the engine did not report it (or not in time)."""
        if self.done:
            return
        self._close_segment()
        self._mark_interrupted()
        self.done = True
        self.activity.stop()

    def failed(self, message: str) -> None:
        if self.done:
            return
        self._close_segment()
        for card in self.cards.values():
            card.interrupt()
        self.transcript.add(Notice(f"✗ {message}", "error"))
        self.done = True
        self.activity.stop()

    def _mark_interrupted(self) -> None:
        for card in self.cards.values():
            card.interrupt()
        if self.answers:
            self.answers[-1].mark_interrupted()
        self.transcript.add(Notice("⏹ interrupted — the partial answer is kept", "interrupted"))


# ---- stored history ---------------------------------------------------------------------


def compacted_notice(event: ContextCompacted) -> Notice:
    """The "context compacted" line (a turn's automatic compaction and `/compact` alike)."""
    why = {"threshold": "", "overflow": " (the model refused the long request)", "manual": ""}[event.reason]
    return Notice(
        f"⟲ context compacted{why}: {event.summarized_messages} older message"
        f"{'s' if event.summarized_messages != 1 else ''} summarised, ~{event.before_tokens:,} → "
        f"~{event.after_tokens:,} tokens (the session keeps every message)",
        "info",
    )


def _content_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            parts.append("[image]")
    return "\n".join(parts)


def user_widgets(content: str | list[dict[str, Any]] | None, image_names: list[str] | None = None) -> list[Widget]:
    """A user message: the typed text, then a folded card per attachment and a line per image."""
    typed, attachments, images = split_content(content)
    names = image_names or []
    widgets: list[Widget] = [UserMessage(typed)]
    widgets.extend(AttachmentCard(attachment) for attachment in attachments)
    widgets.extend(ImageCard(part, names[i] if i < len(names) else None) for i, part in enumerate(images))
    return widgets


def history_widgets(
    messages: Iterable[MessageRecord], *, stall_after: float = 30.0, marks: Mapping[int, TurnMark] | None = None
) -> list[Widget]:
    """Widgets for stored messages: user prompts, answers, reasoning (folded), tool cards in
    the state their call ended in (done, failed, denied, blocked, interrupted), and after a
    turn that failed or was interrupted its mark (`marks`, from `turn_marks` over the whole
    session)."""
    widgets: list[Widget] = []
    cards: dict[str, ToolCard] = {}
    marks = marks or {}
    for message in messages:
        if message.role == "user":
            text = _content_text(message.content)
            shell = replayed_shell_card(text)
            widgets.extend([shell] if shell is not None else user_widgets(message.content))
        elif message.role == "assistant":
            if message.reasoning:
                widgets.append(ReasoningBlock(message.reasoning, collapsed=True))
            text = _content_text(message.content)
            if text.strip():
                widgets.append(AssistantMessage(text))
            for call in message.tool_calls or []:
                function = call.get("function") or {}
                name = str(function.get("name") or "tool")
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                if not isinstance(arguments, dict):
                    arguments = {}
                card = ToolCard(str(call.get("id") or ""), name, stall_after=stall_after)
                card.historic = True
                card.start(argument_preview(arguments), arguments)
                card.interrupt()  # until its result is found below
                cards[card.call_id] = card
                widgets.append(card)
        elif message.role == "tool":
            found = cards.get(message.tool_call_id or "")
            if found is not None:
                result = _content_text(message.content)
                found.complete(result, 0.0, tool_outcome(result) != "done")
        mark = marks.get(message.id)
        if mark is not None:
            widgets.append(Notice(mark.text, "interrupted" if mark.end == "interrupted" else "error"))
    return widgets
