"""The Agent and its turn loop.

    agent = Agent(provider, store=store, tools=default_registry(), model="gpt-4o-mini")
    async for event in agent.run_turn(TurnRequest(input="fix the failing test")):
        ...

The loop of one turn:

    1. open or create the session; load history (request.history, else the store's);
       persist the user message
    2. call the model (streaming; retried while nothing was delivered)
    3. if it asked for tools: persist the assistant message, emit SegmentEnd, run the
       tools (read-only ones concurrently), persist each result, and go to 2 —
       at most `max_iterations` model calls, then one tool-less summary call
    4. otherwise persist the answer and emit TurnCompleted

Interrupt = cancel the task iterating `run_turn`. The upstream request is closed, running
tools are cancelled (their process groups killed), every tool call left open gets a
placeholder result so the history stays valid, and the turn ends with TurnCompleted
(status "interrupted"); that one cancellation is absorbed with `Task.uncancel()`, so the
consumer's loop simply ends. If the generator is instead closed (`aclose()`, or the
consumer died elsewhere) the same cleanup runs without the final event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent._call import CallOutcome, CallPolicy, model_call
from hermes.agent._tool_exec import as_registry_calls, run_batch
from hermes.agent.events import AgentEvent, SegmentEnd, Status, ToolCompleted, TurnCompleted, TurnStarted
from hermes.agent.instructions import ProjectInstructions
from hermes.agent.prompt import build_system_prompt
from hermes.agent.provider import ModelRequest, Provider
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult, TurnStatus, Usage
from hermes.ids import new_session_id
from hermes.store.base import NewMessage, SessionStore

INTERRUPTED_TOOL_RESULT = "[interrupted: the user stopped the turn before this tool finished; it may have partly run]"
SUMMARY_NUDGE = (
    "You have used the maximum number of tool steps for this request. Do not call any more tools. "
    "Summarise what you did, what you found, and what is left to do."
)


@dataclass(slots=True)
class EngineOptions:
    stream_retries: int = 2
    stale_timeout: float = 180.0
    max_iterations: int = 90
    tool_output_limit: int = 50_000
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0

    @classmethod
    def from_settings(cls, settings: Any) -> EngineOptions:
        return cls(
            stream_retries=settings.stream_retries,
            stale_timeout=settings.stream_stale_timeout,
            max_iterations=settings.max_iterations,
            tool_output_limit=settings.tool_output_limit,
        )


@dataclass(slots=True)
class _Turn:
    """Mutable bookkeeping of one running turn (what cleanup needs to know)."""

    session_id: str
    model: str
    persist: bool
    messages: list[ChatMessage] = field(default_factory=list)
    """This turn's transcript (user message first)."""
    text_parts: list[str] = field(default_factory=list)
    """Visible text of the current assistant segment, for partial results."""
    final_text: str = ""
    reasoning: list[str] = field(default_factory=list)
    open_calls: list[tuple[str, str]] = field(default_factory=list)
    """(call_id, name) of tool calls whose results are not in `messages` yet."""
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    finished: bool = False


class Agent:
    """Runs turns against a provider, with tools, writing to a session store."""

    def __init__(
        self,
        provider: Provider,
        *,
        store: SessionStore | None,
        model: str,
        tools: ToolRegistry | None = None,
        options: EngineOptions | None = None,
        system_prompt: str | None = None,
        instructions: ProjectInstructions | None = None,
    ) -> None:
        self.provider = provider
        self.store = store
        self.model = model
        self.tools = tools if tools is not None else ToolRegistry()
        self.options = options or EngineOptions()
        self.system_prompt = system_prompt
        self.instructions = instructions
        """Project instructions (AGENTS.md) added to the prompt of every new session."""
        self._streaming = provider.supports_streaming
        self._session_approvals: dict[str, set[str]] = {}

    async def aclose(self) -> None:
        await self.provider.aclose()

    # ---- the turn --------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest) -> AsyncIterator[AgentEvent]:
        """Run one turn; see the module docstring. Always ends with TurnCompleted."""
        model = request.model or self.model
        session_id, system_prompt, history = self._open_session(request, model)
        turn = _Turn(session_id=session_id, model=model, persist=request.persist and self.store is not None)
        user_message: ChatMessage = {"role": "user", "content": request.input}
        self._record(turn, user_message)
        context = [{"role": "system", "content": system_prompt}, *history, user_message]
        tool_ctx = ToolContext(
            session_id=session_id,
            cwd=Path(request.cwd or Path.cwd()),
            approve=request.approve,
            yolo=request.yolo,
            session_approvals=self._session_approvals.setdefault(session_id, set()),
        )
        yield TurnStarted(session_id=session_id, model=model)
        result: TurnResult | None = None
        steps = self._loop(turn, context, tool_ctx, request)
        try:
            async for event in steps:
                if isinstance(event, TurnCompleted):
                    result = event.result
                else:
                    yield event
        except asyncio.CancelledError:
            self._close_interrupted(turn)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            result = self._result(turn, "interrupted", error="interrupted by the user", error_code="interrupted")
        except GeneratorExit:
            await steps.aclose()  # cancels running tools before the transcript is closed
            self._close_interrupted(turn)
            self._end_session(turn, "interrupted")
            raise
        assert result is not None
        self._end_session(turn, result.status)
        yield TurnCompleted(result)

    async def _loop(
        self, turn: _Turn, context: list[ChatMessage], tool_ctx: ToolContext, request: TurnRequest
    ) -> AsyncIterator[AgentEvent]:
        max_iterations = request.max_iterations or self.options.max_iterations
        policy = CallPolicy(
            stream_retries=self.options.stream_retries,
            stale_timeout=self.options.stale_timeout,
            retry_base_delay=self.options.retry_base_delay,
            retry_max_delay=self.options.retry_max_delay,
        )
        tools = self.tools.schemas() or None
        while True:
            summary_call = turn.api_calls >= max_iterations
            if summary_call:
                yield Status("max_iterations", f"reached the limit of {max_iterations} model calls; asking for a summary")
                context = [*context, {"role": "user", "content": SUMMARY_NUDGE}]
            outcome = CallOutcome()
            turn.api_calls += 1
            turn.text_parts = []
            model_request = ModelRequest(model=turn.model, messages=context, tools=None if summary_call else tools)
            async for event in model_call(
                self.provider,
                model_request,
                policy,
                outcome,
                streaming=self._streaming,
                on_streaming_unsupported=self._disable_streaming,
            ):
                if event.type == "text.delta":
                    turn.text_parts.append(event.text)  # type: ignore[union-attr]
                yield event
            turn.usage = turn.usage + outcome.usage
            if outcome.reasoning:
                turn.reasoning.append(outcome.reasoning)

            if outcome.error is not None:
                error = outcome.error
                yield TurnCompleted(self._result(turn, "failed", error=str(error), error_code=error.code))
                return

            calls = [] if summary_call else outcome.tool_calls
            truncated = outcome.finish_reason == "length"
            if calls and not truncated:
                assistant = self._assistant_message(outcome, with_calls=True)
                context.append(assistant)
                turn.open_calls = [(slot.id, slot.name) for slot in calls]
                self._record(turn, assistant, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
                yield SegmentEnd()
                results: dict[str, ToolCompleted] = {}
                order = [slot.id for slot in calls]
                async for event in run_batch(
                    as_registry_calls(self.tools, calls),
                    tool_ctx,
                    output_limit=self.options.tool_output_limit,
                    results=results,
                ):
                    yield event
                    # Results are written in call order, each as soon as all before it are in.
                    while order and order[0] in results:
                        self._record_tool_result(turn, context, results[order.pop(0)])
                if summary_call:
                    return
                continue

            assistant = self._assistant_message(outcome, with_calls=False)
            context.append(assistant)
            self._record(turn, assistant, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
            turn.final_text = outcome.text
            if outcome.stalled:
                yield TurnCompleted(
                    self._result(
                        turn,
                        "partial",
                        error=outcome.warning or "the response stream broke off before the answer was complete",
                        error_code="output_truncated",
                    )
                )
            elif truncated:
                yield TurnCompleted(
                    self._result(
                        turn, "partial", error="the model hit its output limit", error_code="output_truncated"
                    )
                )
            elif summary_call:
                yield TurnCompleted(
                    self._result(
                        turn,
                        "partial",
                        error=f"stopped after {max_iterations} model calls",
                        error_code="max_iterations",
                    )
                )
            else:
                yield TurnCompleted(self._result(turn, "completed"))
            return

    # ---- helpers ---------------------------------------------------------------------

    def new_session_prompt(self, cwd: str | None = None) -> str:
        """The system prompt a new session starts with (configured or default, plus instructions)."""
        return build_system_prompt(self.system_prompt, cwd, self.instructions)

    def _disable_streaming(self) -> None:
        self._streaming = False

    def _open_session(self, request: TurnRequest, model: str) -> tuple[str, str, list[ChatMessage]]:
        """(session id, system prompt, history) for the request, creating the session if needed."""
        store = self.store
        explicit_prompt = request.system_prompt
        if store is None:
            session_id = request.session_id or new_session_id()
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            return session_id, prompt, list(request.history or [])
        session = store.find_session(request.session_id) if request.session_id else None
        if session is None:
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            session = store.create_session(
                source=request.source,
                model=model,
                title=request.title or _title_from(request.input),
                system_prompt=prompt,
                session_id=request.session_id,
            )
            history: list[ChatMessage] = []
        else:
            # Reuse the stored prompt byte for byte so the upstream's prompt cache holds.
            prompt = explicit_prompt or session.system_prompt or self.new_session_prompt(request.cwd)
            if explicit_prompt and explicit_prompt != session.system_prompt:
                store.update_session(session.id, system_prompt=explicit_prompt)
            history = store.history(session.id)
        if request.history is not None:
            history = list(request.history)
        return session.id, prompt, history

    @staticmethod
    def _assistant_message(outcome: CallOutcome, *, with_calls: bool) -> ChatMessage:
        message: ChatMessage = {"role": "assistant", "content": outcome.text or None}
        if with_calls:
            message["tool_calls"] = [
                {"id": slot.id, "type": "function", "function": {"name": slot.name, "arguments": slot.arguments or "{}"}}
                for slot in outcome.tool_calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        return message

    def _record(
        self,
        turn: _Turn,
        message: ChatMessage,
        *,
        reasoning: str | None = None,
        finish_reason: str | None = None,
    ) -> None:
        turn.messages.append(message)
        if turn.persist and self.store is not None:
            self.store.append_message(
                turn.session_id,
                NewMessage.from_openai(message, reasoning=reasoning or None, finish_reason=finish_reason),
            )

    def _record_tool_result(self, turn: _Turn, context: list[ChatMessage], event: ToolCompleted) -> None:
        message: ChatMessage = {"role": "tool", "tool_call_id": event.call_id, "name": event.name, "content": event.result}
        context.append(message)
        turn.open_calls = [(cid, name) for cid, name in turn.open_calls if cid != event.call_id]
        self._record(turn, message)

    def _close_interrupted(self, turn: _Turn) -> None:
        """Keep the transcript valid after an interrupt: partial text and placeholder results."""
        if turn.finished:
            return
        if turn.open_calls:
            for call_id, name in list(turn.open_calls):
                self._record(turn, {"role": "tool", "tool_call_id": call_id, "name": name, "content": INTERRUPTED_TOOL_RESULT})
            turn.open_calls = []
        elif turn.text_parts:
            partial = "".join(turn.text_parts)
            turn.final_text = partial
            self._record(turn, {"role": "assistant", "content": partial}, finish_reason="interrupted")
            turn.text_parts = []

    def _end_session(self, turn: _Turn, status: TurnStatus) -> None:
        if turn.finished:
            return
        turn.finished = True
        if turn.persist and self.store is not None:
            self.store.add_usage(turn.session_id, input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens)
            self.store.end_session(turn.session_id, status)

    def _result(
        self, turn: _Turn, status: TurnStatus, *, error: str | None = None, error_code: str | None = None
    ) -> TurnResult:
        return TurnResult(
            session_id=turn.session_id,
            status=status,
            final_text=turn.final_text,
            messages=list(turn.messages),
            usage=turn.usage,
            api_calls=turn.api_calls,
            model=turn.model,
            error=error,
            error_code=error_code,
            reasoning="".join(turn.reasoning) or None,
        )


def _title_from(content: Any) -> str | None:
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    text = " ".join(str(content).split())
    if not text:
        return None
    return text if len(text) <= 60 else text[:59].rstrip() + "…"
