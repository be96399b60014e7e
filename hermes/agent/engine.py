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

Stopping a turn (see hermes/agent/interrupt.py and hermes/agent/_interrupt_gate.py):

- Interrupt = `handle.interrupt(code, message)` on the `TurnInterrupt` passed to
  `run_turn(..., interrupt=handle)`. The upstream request is closed, running tools are
  cancelled (their process groups killed), each call that got `ToolStarted` gets its
  `ToolCompleted` (is_error, saying it was interrupted), every tool call left open gets a
  placeholder result so the history stays valid, the session is ended, and the turn ends
  with `TurnCompleted(status="interrupted", error_code=handle.code)`.
- Any other cancellation of the consuming task (a timeout, a task group, shutdown) and
  `aclose()` run the same cleanup, without further events, and then propagate.
- Cleanup order: the inner generators are closed first (`contextlib.aclosing`), so tools
  have stopped before the placeholders are written and before `aclose()` returns.
- An unexpected exception (a `StoreError`, a bug) ends the turn with
  `TurnCompleted(status="failed", error_code=` the `HermesError`'s code or `INTERNAL_ERROR`)
  after the same cleanup, and the session is ended "failed".
- A broken store while ending: cleanup writes are best effort. A failure is logged, the
  final event is still yielded (a failed turn's error then says the session could not be
  ended), and the session row keeps no end_reason. A stop's cause (cancellation, interrupt)
  is never replaced by a store error.
- Errors before the turn starts (opening or creating the session) raise from the first
  `__anext__`, before `TurnStarted`: the request could not be served at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent._call import CallOutcome, CallPolicy, ToolSlot, model_call
from hermes.agent._checkpoint import TurnCheckpoints
from hermes.agent._interrupt_gate import InterruptGate
from hermes.agent._tool_exec import as_registry_calls, run_batch
from hermes.agent.context import (
    ContextBudget,
    ContextPolicy,
    Summarize,
    context_window_for,
    is_context_overflow,
    resume_history,
)
from hermes.agent.events import (
    AgentEvent,
    ContextCompacted,
    SegmentEnd,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.instructions import ProjectInstructions
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.prompt import build_system_prompt
from hermes.agent.provider import ModelRequest, Provider
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult, TurnStatus, Usage
from hermes.error_codes import INTERNAL_ERROR, MAX_ITERATIONS, OUTPUT_TRUNCATED, STREAM_STALLED
from hermes.errors import HermesError, UsageError
from hermes.ids import new_session_id
from hermes.store.api import AsyncSessionStore
from hermes.store.records import NewMessage

log = logging.getLogger(__name__)

INTERRUPTED_TOOL_RESULT = "[interrupted: the user stopped the turn before this tool finished; it may have partly run]"
SUMMARY_NUDGE = (
    "You have used the maximum number of tool steps for this request. Do not call any more tools. "
    "Summarise what you did, what you found, and what is left to do."
)
REPEAT_LIMIT = 3
"""The same tool call (name and arguments) this many times in a row ends the turn with a summary."""
REPEAT_NUDGE = (
    "You called {name} with the same arguments {times} times; its result will not change. Do not call any "
    "more tools. Reply to the user now: what you did, what you found, and what is left to do."
)


class _Interrupted(Exception):
    """Raised inside the turn when its TurnInterrupt was set while suspended at a yield."""


@dataclass(slots=True)
class EngineOptions:
    stream_retries: int = 2
    stale_timeout: float = 180.0
    max_iterations: int = 90
    tool_output_limit: int = 50_000
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0
    context_window: int | None = None
    """Tokens; None: what the provider reports, else the known window of the model, else 128k."""
    compact_at: float = 0.8
    """Compact a request estimated above compact_at × context_window (see hermes/agent/context.py)."""

    @classmethod
    def from_settings(cls, settings: Any) -> EngineOptions:
        return cls(
            stream_retries=settings.stream_retries,
            stale_timeout=settings.stream_stale_timeout,
            max_iterations=settings.max_iterations,
            tool_output_limit=settings.tool_output_limit,
            context_window=settings.context_window,
            compact_at=settings.compact_at,
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
    results: dict[str, ToolCompleted] = field(default_factory=dict)
    """Results of the current tool batch by call id (some may not be recorded yet)."""
    running_tools: dict[str, tuple[ToolStarted, float]] = field(default_factory=dict)
    """Calls that got ToolStarted but no ToolCompleted yet, with their start time."""
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    context_tokens: int = 0
    """Size of the last request: the provider's prompt_tokens, else the estimate."""
    started: bool = False
    """TurnStarted was yielded."""
    finished: bool = False
    """The session end was attempted (it is attempted once)."""
    checkpoints: TurnCheckpoints = field(default_factory=lambda: TurnCheckpoints(None, ""))
    """The turn row and streaming-text checkpoints in the store (crash safety)."""
    repeats: list[str] = field(default_factory=list)
    """The latest tool call (name and canonical arguments) and its repetitions in a row."""
    wrap_up: str | None = None
    """Why the next model call is a tool-less summary ahead of max_iterations ("repeated")."""


class Agent:
    """Runs turns against a provider, with tools, writing to a session store."""

    def __init__(
        self,
        provider: Provider,
        *,
        store: AsyncSessionStore | None,
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
        self._reported_prompts: dict[str, tuple[int, int]] = {}
        """Per session: (prompt_tokens, message count) of its last request (see ContextBudget)."""

    async def aclose(self) -> None:
        await self.provider.aclose()

    # ---- the turn --------------------------------------------------------------------

    async def run_turn(
        self, request: TurnRequest, *, interrupt: TurnInterrupt | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run one turn; see the module docstring. Ends with TurnCompleted unless cancelled or closed."""
        model = request.model or self.model
        user_message: ChatMessage = {"role": "user", "content": request.input}
        # The session, the turn row and the user's message: one commit.
        async with self.store.transaction() if self.store is not None else nullcontext():
            session_id, system_prompt, history = await self._open_session(request, model)
            turn = _Turn(session_id=session_id, model=model, persist=request.persist and self.store is not None)
            if turn.persist:
                turn.checkpoints = TurnCheckpoints(self.store, session_id)
            unrecorded = await self._record_input(turn, user_message)
        context: list[ChatMessage] = [{"role": "system", "content": system_prompt}, *history]
        tool_ctx = ToolContext(
            session_id=session_id,
            cwd=Path(request.cwd or Path.cwd()),
            approve=request.approve,
            yolo=request.yolo,
            session_approvals=self._session_approvals.setdefault(session_id, set()),
            source=request.source,
            confinement=self.tools.confinement,
        )
        gate = InterruptGate(interrupt)
        result: TurnResult | None = None
        try:
            try:
                gate.task = asyncio.current_task()
                context.append(user_message)
                if unrecorded is not None:
                    raise unrecorded
                async with aclosing(self._loop(turn, context, tool_ctx, request)) as steps:
                    gate.task = None
                    turn.started = True
                    yield TurnStarted(session_id=session_id, model=model)
                    gate.task = asyncio.current_task()
                    if interrupt is not None and interrupt.code is not None:
                        raise _Interrupted
                    async for event in steps:
                        if event.type == "turn.completed":
                            result = event.result
                            break
                        gate.task = None
                        yield event
                        gate.task = asyncio.current_task()
                        if interrupt is not None and interrupt.code is not None:
                            raise _Interrupted
                # Inner generators are closed here: running tools have stopped.
                assert result is not None, "the turn loop ends with TurnCompleted"
                await self._end_session(turn, result.status, best_effort=False)
            except (asyncio.CancelledError, _Interrupted) as exc:
                gate.task = None
                ours = isinstance(exc, _Interrupted) or gate.own_cancel()
                await self._close_open(turn, "interrupted")
                await self._end_session(turn, "interrupted")
                if not ours:
                    raise
                assert interrupt is not None and interrupt.code is not None
                for completed in self._interrupted_tools(turn):
                    yield completed
                result = self._result(turn, "interrupted", error=interrupt.message, error_code=interrupt.code)
            except GeneratorExit:
                # Closed by the consumer (aclose()): the same cleanup, no final event.
                gate.task = None
                await self._close_open(turn, "interrupted")
                await self._end_session(turn, "interrupted")
                raise
            except Exception as exc:  # noqa: BLE001 - any failure ends the turn with TurnCompleted
                gate.task = None
                gate.own_cancel()  # our cancel, if one was turned into this exception, is taken back
                result = await self._fail(turn, exc)
        finally:
            gate.close()
        if not turn.started:
            yield TurnStarted(session_id=session_id, model=model)
        yield TurnCompleted(result)

    async def _loop(
        self, turn: _Turn, context: list[ChatMessage], tool_ctx: ToolContext, request: TurnRequest
    ) -> AsyncGenerator[AgentEvent, None]:
        max_iterations = request.max_iterations or self.options.max_iterations
        policy = self._call_policy()
        tools = self.tools.schemas() or None
        budget = self._budget(turn.session_id, turn.model, turn.persist)
        while True:
            summary_call = turn.api_calls >= max_iterations or turn.wrap_up is not None
            if summary_call and turn.wrap_up is None and context[-1].get("content") != SUMMARY_NUDGE:
                yield Status(
                    "max_iterations", f"reached the limit of {max_iterations} model calls; asking for a summary"
                )
                context = [*context, {"role": "user", "content": SUMMARY_NUDGE}]
            request_tools = None if summary_call else tools
            async for compacted in budget.fit(context, request_tools):
                yield compacted
            outcome = CallOutcome()
            turn.api_calls += 1
            turn.text_parts = []
            model_request = ModelRequest(model=turn.model, messages=context, tools=None if summary_call else tools)
            async with aclosing(
                model_call(
                    self.provider,
                    model_request,
                    policy,
                    outcome,
                    streaming=self._streaming,
                    on_streaming_unsupported=self._disable_streaming,
                )
            ) as call_events:
                async for event in call_events:
                    if event.type == "text.delta":
                        turn.text_parts.append(event.text)
                        turn.checkpoints.streamed(turn.text_parts)
                    yield event
            turn.usage = turn.usage + outcome.usage + budget.take_usage()
            budget.observe(outcome.usage, context, request_tools)
            self._reported_prompts[turn.session_id] = budget.reported
            turn.context_tokens = budget.last_prompt_tokens
            if outcome.reasoning:
                turn.reasoning.append(outcome.reasoning)

            if outcome.error is not None:
                error = outcome.error
                if is_context_overflow(error) and not budget.overflow_retried:
                    # Too long for the upstream after all: compact and retry once.
                    budget.overflow_retried = True
                    turn.api_calls -= 1
                    # The endpoint's window is smaller than assumed: keep only the latest step.
                    async for compacted in budget.compact(context, request_tools, "overflow", recent_tokens=0):
                        yield compacted
                    turn.usage = turn.usage + budget.take_usage()
                    continue
                yield TurnCompleted(self._result(turn, "failed", error=str(error), error_code=error.code))
                return

            calls = [] if summary_call else outcome.tool_calls
            truncated = outcome.finish_reason == "length"
            repeated = _repeated_call(turn.repeats, calls) if calls and not truncated else None
            if repeated is not None:
                # A model that repeats itself is done or stuck: the call is not run (nor
                # kept), and the next call is a tool-less summary that ends the turn.
                yield Status("repeated_tool_call", f"{repeated} called {REPEAT_LIMIT} times with the same arguments")
                turn.wrap_up = "repeated"
                nudge = REPEAT_NUDGE.format(name=repeated, times=REPEAT_LIMIT)
                context = [*context, {"role": "user", "content": nudge}]
                continue
            if calls and not truncated:
                assistant = self._assistant_message(outcome, with_calls=True)
                context.append(assistant)
                await self._record(turn, assistant, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
                # Open only once the calls are stored: closing answers exactly these.
                turn.open_calls = [(slot.id, slot.name) for slot in calls]
                turn.text_parts = []
                yield SegmentEnd()
                results = turn.results = {}
                order = [slot.id for slot in calls]
                async with aclosing(
                    run_batch(
                        as_registry_calls(self.tools, calls),
                        tool_ctx,
                        output_limit=self.options.tool_output_limit,
                        results=results,
                    )
                ) as batch:
                    async for event in batch:
                        if event.type == "tool.started":
                            turn.running_tools[event.call_id] = (event, time.monotonic())
                        elif event.type == "tool.completed":
                            turn.running_tools.pop(event.call_id, None)
                        yield event
                        # Results are written in call order, each as soon as all before it are in.
                        while order and order[0] in results:
                            await self._record_tool_result(turn, context, results[order.pop(0)])
                if summary_call:
                    return
                continue

            assistant = self._assistant_message(outcome, with_calls=False)
            context.append(assistant)
            await self._record(turn, assistant, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
            turn.final_text = outcome.text
            if outcome.stalled:
                # Cut-off tool calls: the warning is already in the text and a StreamStalled event.
                yield TurnCompleted(
                    self._result(
                        turn,
                        "partial",
                        error=outcome.warning or "the response stream broke off before the answer was complete",
                        error_code=STREAM_STALLED if outcome.stalled_tools else OUTPUT_TRUNCATED,
                    )
                )
            elif truncated:
                yield TurnCompleted(
                    self._result(
                        turn, "partial", error="the model hit its output limit", error_code=OUTPUT_TRUNCATED
                    )
                )
            elif summary_call and turn.wrap_up is None:
                yield TurnCompleted(
                    self._result(
                        turn,
                        "partial",
                        error=f"stopped after {max_iterations} model calls",
                        error_code=MAX_ITERATIONS,
                    )
                )
            else:
                yield TurnCompleted(self._result(turn, "completed"))
            return

    # ---- context (see hermes/agent/context.py) ---------------------------------------

    def context_window(self, model: str | None = None) -> int:
        """The context window requests to `model` (default: the agent's) are kept in."""
        return context_window_for(model or self.model, self.options.context_window, self.provider.context_window())

    async def compact(self, session_id: str, *, model: str | None = None) -> ContextCompacted | None:
        """Compact a stored session now (`/compact`): everything but the last exchange is summarised.

        Returns the event, or None when there is nothing older to summarise. Raises
        SessionNotFound, or ProviderError when the summary call fails.
        """
        if self.store is None:
            raise UsageError("compaction needs a session store")
        session = await self.store.get_session(session_id)
        model = model or session.model or self.model
        prompt = session.system_prompt or self.new_session_prompt()
        history = await resume_history(self.store, session_id)
        context: list[ChatMessage] = [{"role": "system", "content": prompt}, *history]
        budget = self._budget(session_id, model, persist=True)
        compacted: ContextCompacted | None = None
        async for event in budget.compact(context, self.tools.schemas() or None, "manual", recent_tokens=0):
            compacted = event
        usage = budget.take_usage()
        await self.store.add_usage(session_id, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        return compacted

    def _budget(self, session_id: str, model: str, persist: bool) -> ContextBudget:
        policy = ContextPolicy(self.context_window(model), self.options.compact_at)
        return ContextBudget(
            policy,
            self._summarizer(model),
            session_id=session_id,
            store=self.store if persist else None,
            reported=self._reported_prompts.pop(session_id, (0, 0)),
        )

    def _summarizer(self, model: str) -> Summarize:
        async def summarize(messages: list[ChatMessage]) -> tuple[str, Usage]:
            outcome = CallOutcome()
            request = ModelRequest(model=model, messages=messages, tools=None)
            async with aclosing(
                model_call(
                    self.provider,
                    request,
                    self._call_policy(),
                    outcome,
                    streaming=self._streaming,
                    on_streaming_unsupported=self._disable_streaming,
                )
            ) as events:
                async for _ in events:
                    pass  # the summary is not part of the answer: nothing is shown while it streams
            if outcome.error is not None:
                raise outcome.error
            return outcome.text, outcome.usage

        return summarize

    # ---- helpers ---------------------------------------------------------------------

    def _call_policy(self) -> CallPolicy:
        return CallPolicy(
            stream_retries=self.options.stream_retries,
            stale_timeout=self.options.stale_timeout,
            retry_base_delay=self.options.retry_base_delay,
            retry_max_delay=self.options.retry_max_delay,
        )

    def new_session_prompt(self, cwd: str | None = None) -> str:
        """The system prompt a new session starts with (configured or default, plus instructions)."""
        return build_system_prompt(self.system_prompt, cwd, self.instructions)

    def _disable_streaming(self) -> None:
        self._streaming = False

    async def _open_session(self, request: TurnRequest, model: str) -> tuple[str, str, list[ChatMessage]]:
        """(session id, system prompt, history) for the request, creating the session if needed."""
        store = self.store
        explicit_prompt = request.system_prompt
        if store is None:
            session_id = request.session_id or new_session_id()
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            return session_id, prompt, list(request.history or [])
        session = await store.find_session(request.session_id) if request.session_id else None
        if session is None:
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            session = await store.create_session(
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
                await store.update_session(session.id, system_prompt=explicit_prompt)
            history = await resume_history(store, session.id)
        if request.history is not None:
            history = list(request.history)
        return session.id, prompt, history

    @staticmethod
    def _assistant_message(outcome: CallOutcome, *, with_calls: bool) -> ChatMessage:
        message: ChatMessage = {"role": "assistant", "content": outcome.text or None}
        if with_calls:
            message["tool_calls"] = [
                {
                    "id": slot.id,
                    "type": "function",
                    "function": {"name": slot.name, "arguments": slot.arguments or "{}"},
                }
                for slot in outcome.tool_calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        return message

    async def _record(
        self,
        turn: _Turn,
        message: ChatMessage,
        *,
        reasoning: str | None = None,
        finish_reason: str | None = None,
    ) -> None:
        # Stored first: the result's transcript holds only what the store accepted.
        if turn.persist and self.store is not None:
            await turn.checkpoints.record(
                NewMessage.from_openai(message, reasoning=reasoning or None, finish_reason=finish_reason)
            )
        turn.messages.append(message)

    async def _record_input(self, turn: _Turn, message: ChatMessage) -> Exception | None:
        """Record the user's message; a failure is returned, to end the turn like any other."""
        try:
            await self._record(turn, message)
        except Exception as exc:  # noqa: BLE001 - raised again inside the turn's error handling
            return exc
        return None

    async def _record_tool_result(self, turn: _Turn, context: list[ChatMessage], event: ToolCompleted) -> None:
        message: ChatMessage = {
            "role": "tool",
            "tool_call_id": event.call_id,
            "name": event.name,
            "content": event.result,
        }
        context.append(message)
        turn.open_calls = [(cid, name) for cid, name in turn.open_calls if cid != event.call_id]
        await self._record(turn, message)

    async def _close_open(self, turn: _Turn, why: TurnStatus) -> None:
        """Keep the transcript valid after a stop: results or placeholders, partial text.

        Runs after the inner generators are closed, i.e. after running tools stopped.
        Best effort: a store failure here is logged, never raised over the stop's cause.
        """
        if turn.finished:
            return
        try:
            if turn.open_calls:
                for call_id, name in list(turn.open_calls):
                    done = turn.results.get(call_id)
                    content = done.result if done is not None else INTERRUPTED_TOOL_RESULT
                    turn.open_calls.remove((call_id, name))
                    placeholder: ChatMessage = {
                        "role": "tool", "tool_call_id": call_id, "name": name, "content": content
                    }
                    await self._record(turn, placeholder)
            elif turn.text_parts:
                partial = "".join(turn.text_parts)
                turn.final_text = partial
                turn.text_parts = []
                await self._record(turn, {"role": "assistant", "content": partial}, finish_reason=why)
        except Exception:  # best effort, see the docstring
            log.exception("could not write the closing messages of session %s", turn.session_id)

    def _interrupted_tools(self, turn: _Turn) -> list[ToolCompleted]:
        """The ToolCompleted owed to every call that got ToolStarted but no ToolCompleted."""
        owed: list[ToolCompleted] = []
        now = time.monotonic()
        for call_id, (started, at) in turn.running_tools.items():
            done = turn.results.get(call_id)
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
                )
            )
        turn.running_tools.clear()
        return owed

    async def _end_session(self, turn: _Turn, status: TurnStatus, *, best_effort: bool = True) -> bool:
        """Add the turn's usage and end the session, attempted once; False when that failed.

        Best effort (the failure is logged) unless told otherwise.
        """
        if turn.finished:
            return False
        turn.finished = True
        if not (turn.persist and self.store is not None):
            return True
        try:
            await turn.checkpoints.finish(status, turn.usage)  # turn end, usage, session end: one write
        except Exception:  # best effort unless told otherwise (re-raised then)
            if not best_effort:
                raise
            log.exception("could not end session %s", turn.session_id)
            return False
        return True

    async def _fail(self, turn: _Turn, exc: Exception) -> TurnResult:
        """The result of a turn that an unexpected exception ended (see the module docstring)."""
        if isinstance(exc, HermesError):
            code, error = exc.code, str(exc)
        else:
            code, error = INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
        log.error("turn in session %s failed: %s", turn.session_id, error, exc_info=exc)
        await self._close_open(turn, "failed")
        if not await self._end_session(turn, "failed"):
            error += " (the session could not be ended)"
        return self._result(turn, "failed", error=error, error_code=code)

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
            context_tokens=turn.context_tokens,
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


def _repeated_call(repeats: list[str], calls: list[ToolSlot]) -> str | None:
    """Track `calls` in `repeats`; the name of one made REPEAT_LIMIT times in a row, else None.

    In a row: any other call in between (an edit, another command) starts the count again,
    so running the tests after each fix is never taken for a loop.
    """
    for slot in calls:
        parsed = slot.parsed_arguments()
        key = slot.name + "\0" + (json.dumps(parsed, sort_keys=True) if parsed is not None else slot.arguments)
        if repeats and repeats[-1] != key:
            repeats.clear()
        repeats.append(key)
        if len(repeats) >= REPEAT_LIMIT:
            return slot.name
    return None
