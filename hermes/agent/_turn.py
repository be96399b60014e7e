"""The bookkeeping of one running turn: what it wrote, what is open, how it ends.

`TurnState` is mutable and belongs to one turn's task. It records messages (store first,
then the result's transcript), keeps the transcript valid after a stop, and ends the
session once.

Invariants:
- A message is in `messages` only once the store accepted it (when the turn persists);
  the text answer waits in `answer` until the turn's end writes it (one write with the
  end, the usage and the conversation mark), and results built meanwhile include it.
- `open_calls` are the tool calls whose results are not recorded yet; closing a stopped
  turn answers exactly these (their result if it is in, else INTERRUPTED_TOOL_RESULT).
- The session end is attempted once (`finished`), or again by the cleanup after a failed
  end that was not best effort (that write is all or nothing: it wrote nothing); cleanup
  writes are best effort: a store failure is logged and never replaces a stop's cause.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from hermes.agent._turn_recorder import TurnRecorder
from hermes.agent.client_tools import ClientToolCall
from hermes.agent.events import ToolCompleted, ToolStarted
from hermes.agent.types import AnswerBy, ChatMessage, TurnResult, TurnStatus, Usage
from hermes.checkpoints.turn import TurnFiles
from hermes.error_codes import INTERNAL_ERROR
from hermes.errors import HermesError
from hermes.store.records import NewMessage, NewSession

log = logging.getLogger(__name__)

INTERRUPTED_TOOL_RESULT = "[interrupted: the user stopped the turn before this tool finished; it may have partly run]"


@dataclass(slots=True)
class TurnState:
    """Mutable bookkeeping of one running turn (what cleanup needs to know)."""

    session_id: str
    model: str
    persist: bool
    messages: list[ChatMessage] = field(default_factory=list)
    """This turn's transcript (its input first: the user message, or tool results)."""
    text_parts: list[str] = field(default_factory=list)
    """Visible text of the current assistant segment, for partial results."""
    final_text: str = ""
    answer: tuple[ChatMessage, NewMessage] | None = None
    """The text answer, as sent and as stored, until the turn's end has written it."""
    reasoning: list[str] = field(default_factory=list)
    open_calls: list[tuple[str, str]] = field(default_factory=list)
    """(call_id, name) of tool calls whose results are not in `messages` yet."""
    results: dict[str, ToolCompleted] = field(default_factory=dict)
    """Results of the current tool batch by call id (some may not be recorded yet)."""
    running_tools: dict[str, tuple[ToolStarted, float]] = field(default_factory=dict)
    """Calls that got ToolStarted but no ToolCompleted yet, with their start time."""
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    context_tokens: int = 0
    """Size of the last request: the provider's prompt_tokens, else the estimate."""
    started: bool = False
    """TurnStarted was emitted."""
    finished: bool = False
    """The session end was attempted (it is attempted once)."""
    recorder: TurnRecorder = field(default_factory=lambda: TurnRecorder(None, ""))
    """The turn row and the draft of its streaming text in the store (crash safety)."""
    files: TurnFiles | None = None
    """The turn's file snapshots (before its first tool that can change files, at its end)."""
    repeats: list[str] = field(default_factory=list)
    """The latest tool call (name and canonical arguments) and its repetitions in a row."""
    answer_by: AnswerBy = "model"
    """Who wrote the answer (`TurnResult.answer_by`)."""
    wrap_up: str | None = None
    """Why the next model call is a tool-less summary ahead of max_iterations ("repeated")."""
    out_of_time: float | None = None
    """The turn's time limit in seconds, once it has passed it (`EngineOptions.turn_seconds`)."""

    def add_usage(self, usage: Usage) -> None:
        """Count another turn's model usage in this one's (a subagent's, run by a tool call)."""
        self.usage = self.usage + usage

    # ---- recording -------------------------------------------------------------------

    async def record(
        self, message: ChatMessage, *, reasoning: str | None = None, finish_reason: str | None = None
    ) -> None:
        # Stored first: the result's transcript holds only what the store accepted.
        if self.persist:
            await self.recorder.record(
                NewMessage.from_openai(message, reasoning=reasoning or None, finish_reason=finish_reason)
            )
        self.messages.append(message)

    async def record_inputs(self, messages: list[ChatMessage], *, create: NewSession | None = None) -> Exception | None:
        """Record the turn's input (the user's message, or tool results) with its turn row
        (and `create`, the session, when new) in one write; a failure is returned, to end
        the turn like any other. The session id is the one the store used."""
        try:
            if self.persist:
                await self.recorder.start([NewMessage.from_openai(m) for m in messages], create)
                self.session_id = self.recorder.session_id
        except Exception as exc:  # noqa: BLE001 - raised again inside the turn's error handling
            return exc
        self.messages.extend(messages)
        return None

    async def record_tool_result(self, context: list[ChatMessage], event: ToolCompleted) -> None:
        message: ChatMessage = {
            "role": "tool",
            "tool_call_id": event.call_id,
            "name": event.name,
            "content": event.result,
        }
        context.append(message)
        self.open_calls = [(cid, name) for cid, name in self.open_calls if cid != event.call_id]
        await self.record(message)

    # ---- ending ----------------------------------------------------------------------

    async def close_open(self, why: TurnStatus) -> None:
        """Keep the transcript valid after a stop: results or placeholders, partial text.

        Runs after the model call and the tools stopped. Best effort: a store failure here
        is logged, never raised over the stop's cause.
        """
        if self.finished:
            return
        try:
            if self.open_calls:
                for call_id, name in list(self.open_calls):
                    done = self.results.get(call_id)
                    content = done.result if done is not None else INTERRUPTED_TOOL_RESULT
                    self.open_calls.remove((call_id, name))
                    placeholder: ChatMessage = {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "name": name,
                        "content": content,
                    }
                    await self.record(placeholder)
            elif self.answer is not None:  # delivered, but its turn did not end well
                (message, stored), self.answer = self.answer, None
                await self.record(message, reasoning=stored.reasoning, finish_reason=why)
            elif self.text_parts:
                partial = "".join(self.text_parts)
                self.final_text = partial
                self.text_parts = []
                await self.record({"role": "assistant", "content": partial}, finish_reason=why)
        except Exception:  # best effort, see the docstring
            log.exception("could not write the closing messages of session %s", self.session_id)

    def interrupted_tools(self) -> list[ToolCompleted]:
        """The ToolCompleted owed to every call that got ToolStarted but no ToolCompleted."""
        owed: list[ToolCompleted] = []
        now = time.monotonic()
        for call_id, (started, at) in self.running_tools.items():
            done = self.results.get(call_id)
            owed.append(
                done
                if done is not None
                else ToolCompleted(
                    call_id=call_id,
                    name=started.name,
                    result=INTERRUPTED_TOOL_RESULT,
                    duration=now - at,
                    is_error=True,
                    arguments=started.arguments,
                    parent_call_id=started.parent_call_id,
                )
            )
        self.running_tools.clear()
        return owed

    async def end_session(self, status: TurnStatus, *, best_effort: bool = True, mark: str | None = None) -> bool:
        """Write the pending answer, add the turn's usage, end the session and mark the
        conversation with `mark`: one write, attempted once; False when that failed.

        Best effort (the failure is logged) unless told otherwise.
        """
        if self.finished:
            return False
        self.finished = True
        answer, self.answer = self.answer, None
        if self.persist:
            try:
                await self.recorder.finish(
                    status, self.usage, self.model, answer=None if answer is None else answer[1], mark=mark
                )
            except Exception:  # best effort unless told otherwise (re-raised then)
                if not best_effort:
                    # Nothing was written: the failure's cleanup keeps the answer and ends the turn.
                    self.finished, self.answer = False, answer
                    raise
                log.exception("could not end session %s", self.session_id)
                return False
        if answer is not None:
            self.messages.append(answer[0])
        return True

    async def fail(self, exc: Exception) -> TurnResult:
        """The result of a turn that an unexpected exception ended."""
        if isinstance(exc, HermesError):
            code, error = exc.code, str(exc)
        else:
            code, error = INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
        log.error("turn in session %s failed: %s", self.session_id, error, exc_info=exc)
        await self.close_open("failed")
        if not await self.end_session("failed"):
            error += " (the session could not be ended)"
        return self.result("failed", error=error, error_code=code)

    def result(
        self,
        status: TurnStatus,
        *,
        error: str | None = None,
        error_code: str | None = None,
        client_calls: tuple[ClientToolCall, ...] = (),
    ) -> TurnResult:
        return TurnResult(
            session_id=self.session_id,
            status=status,
            final_text=self.final_text,
            messages=[*self.messages, self.answer[0]] if self.answer is not None else list(self.messages),
            usage=self.usage,
            api_calls=self.api_calls,
            context_tokens=self.context_tokens,
            model=self.model,
            error=error,
            error_code=error_code,
            reasoning="".join(self.reasoning) or None,
            client_calls=client_calls,
            answer_by=self.answer_by,
        )
