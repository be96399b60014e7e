"""The Agent and its turn loop.

    agent = Agent(provider, store=store, tools=default_registry(), model="gpt-4o-mini")
    async with agent.start(TurnRequest(input="fix the failing test")) as handle:
        async for event in handle.events():
            ...

`start` runs the turn in a task of its own behind a `TurnHandle` (hermes/agent/turn_handle.py):
its events, `stop(code, message)`, `aclose(grace)` and its result.

The loop of one turn:

    1. open or create the session; load history (request.history, else the store's; a
       session created with request.history stores it first, each message marked
       `IMPORTED`, so the transcript holds the whole conversation and the model still gets
       it once); persist the user message (or a continuation's client tool results)
    2. the model step: call the model (streaming; retried while nothing was delivered)
    3. if it asked for tools, the tool step: persist the assistant message, emit
       SegmentEnd, run the tools (read-only ones concurrently), persist each result, and
       go to 2 — at most `max_iterations` model calls, then one tool-less summary call
    4. otherwise end the turn: the answer, the turn's end, its usage and the conversation
       mark (request.conversation_mark, a front end's) are one write; emit TurnCompleted
    (3'. a call of a client tool (request.client_tools) ends the turn after hermes' own
       calls of the same response ran: ClientToolCalls, then TurnCompleted with
       result.client_calls; see hermes/agent/client_tools.py)

Stopping a turn:

- `handle.stop(code, message)`: the upstream request is closed, running tools are
  cancelled (their process groups killed), each call that got `ToolStarted` gets its
  `ToolCompleted` (is_error, saying it was interrupted), every tool call left open gets a
  placeholder result so the history stays valid, the session is ended, and the turn ends
  with `TurnCompleted(status="interrupted", error_code=code)`.
- Any other cancellation of the turn's task (`aclose()` past its grace, shutdown) runs the
  same cleanup, without further events, and then propagates.
- Cleanup order: the steps are closed first (`contextlib.aclosing`), so tools have stopped
  before the placeholders are written.
- An unexpected exception (a `StoreError`, a bug) ends the turn with
  `TurnCompleted(status="failed", error_code=` the `HermesError`'s code or `INTERNAL_ERROR`)
  after the same cleanup, and the session is ended "failed".
- A broken store while ending: cleanup writes are best effort. A failure is logged, the
  final event is still emitted (a failed turn's error then says the session could not be
  ended), and the session row keeps no end_reason. A stop's cause (cancellation, stop) is
  never replaced by a store error.
- Errors before the turn starts (opening or creating the session) are raised by the
  handle's `events()`, before `TurnStarted`: the request could not be served at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hermes.agent._call import CallOutcome, CallPolicy, ModelCaller
from hermes.agent._steps import (
    REPEAT_LIMIT,
    REPEAT_NUDGE,
    SUMMARY_NUDGE,
    Ending,
    ModelCall,
    ToolRun,
    answer,
    hermes_answer,
    hermes_postscript,
    model_done,
    model_request,
    model_streamed,
    repeated_call,
    tool_step,
)
from hermes.agent._turn import INTERRUPTED_TOOL_RESULT as INTERRUPTED_TOOL_RESULT
from hermes.agent._turn import TurnState
from hermes.agent._turn_recorder import TurnRecorder
from hermes.agent.client_tools import ClientToolCall, ClientTools, client_calls, turn_inputs
from hermes.agent.context import (
    ContextBudget,
    ContextPolicy,
    compact_session,
    context_window_for,
    is_context_overflow,
)
from hermes.agent.events import (
    AgentEvent,
    ClientToolCalls,
    ContextCompacted,
    Status,
    TextDelta,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.history import SessionHistories
from hermes.agent.hooks.context import with_prompt_context, with_session_context
from hermes.agent.hooks.dispatch import NOTHING, HookOutcome, Hooks, TurnHooks
from hermes.agent.instructions import ProjectInstructions
from hermes.agent.lsp.diagnostics import LanguageServers
from hermes.agent.memory.files import MemoryFiles
from hermes.agent.memory.section import memory_section
from hermes.agent.model_choices import ModelListing, model_listings
from hermes.agent.modes import noted_inputs
from hermes.agent.prompt import build_system_prompt
from hermes.agent.provider import Provider
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult
from hermes.attachment_blocks import split_content
from hermes.checkpoints.turn import CheckpointConfig, TurnFiles
from hermes.error_codes import PROMPT_BLOCKED
from hermes.errors import UsageError
from hermes.extensions.skills import SkillCatalog
from hermes.ids import new_session_id
from hermes.store.api import AsyncSessionStore
from hermes.store.records import IMPORTED, NewMessage, NewSession


class _Interrupted(Exception):
    """Raised inside the turn when its handle was stopped while it handed over an event."""


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
    fallback: tuple[str, ...] = ()
    """Models a model call goes on with when it fails with a server error (hermes/agent/_call.py)."""
    turn_seconds: float | None = None
    """Seconds after which a turn's next model call is the tool-less summary, as at
    `max_iterations` (None: no time limit; the local model's provider recommends one)."""

    @classmethod
    def from_settings(cls, settings: Any) -> EngineOptions:
        return cls(
            stream_retries=settings.stream_retries,
            stale_timeout=settings.stream_stale_timeout,
            max_iterations=settings.max_iterations,
            tool_output_limit=settings.tool_output_limit,
            context_window=settings.context_window,
            compact_at=settings.compact_at,
            fallback=tuple(settings.fallback),
        )


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
        checkpoints: CheckpointConfig | None = None,
        skills: SkillCatalog | None = None,
    ) -> None:
        self.provider = provider
        self.store = store
        self.model = model
        self.tools = tools if tools is not None else ToolRegistry()
        self.options = options or EngineOptions()
        self.system_prompt = system_prompt
        self.instructions = instructions
        """Project instructions (AGENTS.md) added to the prompt of every new session."""
        self.skills = skills
        """The skills listed in the prompt of every new session (their bodies come from the `skill` tool)."""
        self.checkpoints = checkpoints
        """File snapshots around turns that change files (None: none; hermes/checkpoints)."""
        self._caller = ModelCaller(provider, self.options.fallback)
        self.diagnostics: LanguageServers | None = None
        """The language servers asked after edits (set by build_agent when `lsp` is on)."""
        self.hooks: Hooks | None = None
        """The person's hooks (set by build_agent when any are configured; hermes/agent/hooks)."""
        self.memory: MemoryFiles | None = None
        """The memory files read into each new session's prompt (set by build_agent when `memory` is on)."""
        self.histories = SessionHistories(store) if store is not None else None
        """The model-ready history of each stored session, kept between turns (hermes/agent/history.py)."""
        self._session_approvals: dict[str, set[str]] = {}
        self._reported_prompts: dict[str, tuple[int, int]] = {}
        """Per session: (prompt_tokens, message count) of its last request (see ContextBudget)."""

    async def aclose(self) -> None:
        if self.diagnostics is not None:
            await self.diagnostics.aclose()
        await self.provider.aclose()

    async def list_models(self) -> list[ModelListing]:
        """The models a person may switch to, by provider (hermes/agent/model_choices.py)."""
        return await model_listings(self.provider, self.model)

    # ---- the turn --------------------------------------------------------------------

    def start(self, request: TurnRequest, *, inline: bool = False) -> TurnHandle:
        """Start one turn in a task of its own (`inline`: in the caller's, when it awaits
        the handle's `wait()`); see the module docstring."""

        async def produce(handle: TurnHandle) -> None:
            await self._drive(request, handle)

        return TurnHandle(produce, inline=inline)

    async def run_turn(self, request: TurnRequest) -> AsyncIterator[AgentEvent]:
        """`start(request)`'s events, for scripts and tests; leaving early closes the turn.

        What the turn raised (TurnCrashed) is raised as its cause.
        """
        async with self.start(request) as handle, aclosing(handle.events()) as events:
            try:
                async for event in events:
                    yield event
            except TurnCrashed as crash:
                raise crash.cause from None

    async def _drive(self, request: TurnRequest, handle: TurnHandle) -> None:
        """The turn, inside its handle's task: emits every event, ends with TurnCompleted."""
        model = request.model or self.model
        # Reads first; then the session (when new), the turn row and the input (the user's
        # message, or a continuation's tool results): one write, holding nothing between.
        session_id, system_prompt, history, new = await self._open_session(request, model)
        cwd = Path(request.cwd) if request.cwd else Path.cwd()
        hooks = self.hooks.for_turn(session_id, cwd) if self.hooks is not None else None
        notices: list[str] = hooks.take_problems() if hooks is not None else []
        prompt_context = ""
        if hooks is not None:
            starts = new is not None or (self.store is None and not request.history)
            if starts:
                opened = await _unless_stopped(handle, hooks.session_start())
                notices += opened.notices
                if opened.context:
                    system_prompt = with_session_context(system_prompt, opened.context)
                    if new is not None:
                        new = replace(new, system_prompt=system_prompt)
            if request.tool_results is None:
                submitted = await _unless_stopped(handle, hooks.user_prompt(str(split_content(request.input)[0])))
                notices += submitted.notices
                if submitted.blocked:
                    # Refused: the prompt is neither stored nor sent (it may hold what the hook
                    # guards against); a new session is created empty, so front ends find it.
                    if new is not None and self.store is not None and request.persist:
                        created = await self.store.create_session(
                            source=new.source, model=new.model, title=None, system_prompt=new.system_prompt,
                            session_id=new.id, fresh_if_taken=not new.given,
                        )  # fmt: skip
                        session_id = created.id
                    await handle.emit(TurnStarted(session_id=session_id, model=model))
                    for notice in notices:
                        await handle.emit(Status("hook", notice))
                    refused = TurnResult(session_id, "failed", "", model=model, error=submitted.reason,
                                         error_code=PROMPT_BLOCKED)  # fmt: skip
                    await handle.emit(TurnCompleted(refused))
                    return
                prompt_context = submitted.context
        inputs, history = turn_inputs(request.input, request.tool_results, history)
        turn = TurnState(session_id=session_id, model=model, persist=request.persist and self.store is not None)
        if turn.persist:
            turn.recorder = TurnRecorder(self.store, session_id)
        elif new is not None and self.store is not None:
            created = await self.store.create_session(source=new.source, model=new.model, title=new.title,
                                                      system_prompt=new.system_prompt, session_id=new.id,
                                                      fresh_if_taken=not new.given, cwd=new.cwd)  # fmt: skip
            turn.session_id, new = created.id, None
        unrecorded = await turn.record_inputs(inputs, create=new)
        session_id = turn.session_id
        # Plan mode's note goes into the model's copy of the input, after the cached prefix.
        context: list[ChatMessage] = [
            {"role": "system", "content": system_prompt}, *history,
            *with_prompt_context(noted_inputs(inputs, request.mode), prompt_context),
        ]  # fmt: skip
        if hooks is not None:
            hooks.session_id = session_id
        tool_ctx = ToolContext(
            session_id=session_id,
            cwd=cwd,
            approve=request.approve,
            yolo=request.yolo,
            session_approvals=self._session_approvals.setdefault(session_id, set()),
            source=request.source,
            confinement=self.tools.confinement,
            host=request.host,
            transcript=context,
            mode=request.mode,
            diagnostics=self.diagnostics,
            hooks=hooks,
            add_usage=turn.add_usage,
            depth=request.spawned_by.depth if request.spawned_by is not None else 0,
        )
        turn.files = TurnFiles(
            self.checkpoints if turn.persist else None, self.store, session_id, tool_ctx.cwd,
            hidden=tool_ctx.policy.hidden,
        )  # fmt: skip
        result: TurnResult | None = None
        handle.listen()
        try:
            if unrecorded is not None:
                raise unrecorded
            turn.started = True
            await handle.emit(TurnStarted(session_id=session_id, model=model))
            await _emit_notices(handle, notices)
            if handle.stop_requested:
                raise _Interrupted
            result = await self._loop(turn, context, tool_ctx, request, handle)
            # The steps are closed here: running tools have stopped.
            assert result is not None, "the turn loop ends with TurnCompleted"
            marker = request.conversation_mark if turn.persist else None
            mark = marker(result) if marker is not None else None
            await turn.end_session(result.status, best_effort=False, mark=mark)
            if mark is not None:
                result = replace(result, conversation_mark=mark)
        except (asyncio.CancelledError, _Interrupted) as exc:
            ours = handle.unlisten() or isinstance(exc, _Interrupted)
            await turn.close_open("interrupted")
            await turn.end_session("interrupted")
            if not ours:
                raise
            for completed in turn.interrupted_tools():
                await handle.emit(completed)
            result = turn.result("interrupted", error=handle.stop_message, error_code=handle.stop_code)
        except Exception as exc:  # noqa: BLE001 - any failure ends the turn with TurnCompleted
            handle.unlisten()  # a stop's cancel, if one was turned into this exception, is taken back
            result = await turn.fail(exc)
        handle.unlisten()
        if not turn.started:
            await handle.emit(TurnStarted(session_id=session_id, model=model))
        changed = await turn.files.finish(turn.recorder.turn_id) if turn.files is not None else None
        if changed is not None:
            await handle.emit(Status("files_changed", changed))
        await handle.emit(TurnCompleted(result))

    async def _loop(
        self, turn: TurnState, context: list[ChatMessage], tool_ctx: ToolContext, request: TurnRequest,
        handle: TurnHandle,
    ) -> TurnResult:  # fmt: skip
        """Model steps and tool steps until an answer: the turn's result.

        Each event goes straight to `handle.emit` (no generator layer between the model
        call and the handle); a stop seen after an emit raises `_Interrupted`, which
        closes the step it came from (its tools stop) on the way out.
        """
        max_iterations = request.max_iterations or self.options.max_iterations
        policy = self._call_policy()
        client = request.client_tools or ClientTools()
        registry = self.tools if request.tools is None else self.tools.only(request.tools)
        tools = [*registry.schemas(), *client.schemas] or None
        first_call = True
        budget = self._budget(turn.session_id, turn.model, turn.persist, policy)
        call = ModelCall(self._caller, policy, budget, request.output_format)
        run = ToolRun(registry, tool_ctx, self.options.tool_output_limit)
        stops = 0  # times a Stop hook made this turn go on
        seconds = self.options.turn_seconds
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            if deadline is not None and turn.api_calls < max_iterations and time.monotonic() >= deadline:
                turn.out_of_time = seconds
            summary_call = turn.api_calls >= max_iterations or turn.out_of_time is not None or turn.wrap_up is not None
            if summary_call and turn.wrap_up is None and context[-1].get("content") != SUMMARY_NUDGE:
                limit = (
                    f"reached the turn's time limit of {turn.out_of_time:.0f} s; asking for a summary"
                    if turn.out_of_time is not None
                    else f"reached the limit of {max_iterations} model calls; asking for a summary"
                )
                await _emit(handle, Status("max_iterations", limit))
                context = [*context, {"role": "user", "content": SUMMARY_NUDGE}]
            request_tools = None if summary_call else tools
            outcome = CallOutcome()
            if budget.over_limit(context, request_tools):
                await _emit_all(handle, budget.compact(context, request_tools, "threshold"))
            call_request = model_request(
                turn, call, context, request_tools,
                tool_choice=client.choice_for(first_call), parallel_tool_calls=client.parallel,
            )  # fmt: skip
            async with aclosing(self._caller.call(call_request, policy, outcome)) as events:
                async for event in events:  # the model call's events, one layer from the handle
                    model_streamed(turn, event)
                    await handle.emit(event)
                    if handle.stop_requested:
                        raise _Interrupted
            model_done(turn, call, context, request_tools, outcome)
            self._reported_prompts[turn.session_id] = budget.reported

            if outcome.error is not None:
                error = outcome.error
                if is_context_overflow(error) and not budget.overflow_retried:
                    # Too long for the upstream after all: compact and retry once.
                    budget.overflow_retried = True
                    turn.api_calls -= 1
                    # The endpoint's window is smaller than assumed: keep only the latest step.
                    await _emit_all(handle, budget.compact(context, request_tools, "overflow", recent_tokens=0))
                    turn.usage = turn.usage + budget.take_usage()
                    continue
                return turn.result("failed", error=str(error), error_code=error.code)
            first_call = False

            calls = [] if summary_call else outcome.tool_calls
            truncated = outcome.finish_reason == "length"
            repeated = repeated_call(turn.repeats, calls) if calls and not truncated else None
            if repeated is not None:
                # A model that repeats itself is done or stuck: the call is not run (nor
                # kept), and the next call is a tool-less summary that ends the turn.
                same = f"{repeated} called {REPEAT_LIMIT} times with the same arguments"
                await _emit(handle, Status("repeated_tool_call", same))
                turn.wrap_up = "repeated"
                nudge = REPEAT_NUDGE.format(name=repeated, times=REPEAT_LIMIT)
                context = [*context, {"role": "user", "content": nudge}]
                continue
            if calls and not truncated:
                theirs = client_calls(client, calls)
                mine = [slot for slot in calls if slot not in theirs]
                await _emit_all(handle, tool_step(turn, run, outcome, context, runnable=mine))
                if theirs:
                    # hermes' own calls of this response ran; the client runs the rest.
                    waiting = tuple(ClientToolCall(slot.id, slot.name, slot.arguments or "{}") for slot in theirs)
                    turn.open_calls = []
                    await _emit(handle, ClientToolCalls(waiting))
                    return turn.result("completed", client_calls=waiting)
                continue
            ending: Ending = "max_iterations" if summary_call and turn.wrap_up is None else "answer"
            written = hermes_answer(turn, outcome, ending, max_iterations) if call.output_format is None else None
            if written is not None:
                shown = ("\n\n" if outcome.text.strip() else "") + written
                model_streamed(turn, TextDelta(shown))
                await _emit(handle, TextDelta(shown))
                outcome.text = written
            elif call.output_format is None and (postscript := hermes_postscript(turn, outcome)) is not None:
                shown = "\n\n" + postscript
                model_streamed(turn, TextDelta(shown))
                await _emit(handle, TextDelta(shown))
                outcome.text += shown
            result = answer(turn, context, outcome, ending, max_iterations)
            if ending == "answer" and result.status == "completed" and tool_ctx.hooks is not None:
                reason = await _stop_hooks(tool_ctx.hooks, stops, handle)
                if reason is not None:
                    stops += 1
                    await _go_on(turn, context, outcome, reason)
                    continue
            return result

    async def session_history(self, session_id: str) -> list[ChatMessage]:
        """What a turn in the stored session `session_id` sends before its input: the
        compacted form (`chat -r`'s), from the per-process cache (`SessionHistories`)."""
        if self.histories is None:
            raise UsageError("the session history needs a session store")
        return await self.histories.load(session_id)

    # ---- context (see hermes/agent/context.py) ---------------------------------------

    def context_window(self, model: str | None = None) -> int:
        """The context window requests to `model` (default: the agent's) are kept in."""
        return context_window_for(model or self.model, self.options.context_window, self.provider.context_window())

    async def compact(self, session_id: str, *, model: str | None = None) -> ContextCompacted | None:
        """Compact a stored session now (`/compact`); see `context.compact_session`.

        Raises SessionNotFound, or ProviderError when the summary call fails.
        """
        if self.store is None:
            raise UsageError("compaction needs a session store")
        session = await self.store.get_session(session_id)
        model = model or session.model or self.model
        return await compact_session(
            self.store,
            session_id,
            prompt=session.system_prompt or self.new_session_prompt(),
            policy=ContextPolicy(self.context_window(model), self.options.compact_at),
            summarize=self._caller.summarizer(model, self._call_policy()),
            tools=self.tools.schemas() or None,
            reported=self._reported_prompts.pop(session_id, (0, 0)),
        )

    def _budget(self, session_id: str, model: str, persist: bool, policy: CallPolicy) -> ContextBudget:
        return ContextBudget(
            ContextPolicy(self.context_window(model), self.options.compact_at),
            self._caller.summarizer(model, policy),
            session_id=session_id,
            store=self.store if persist else None,
            reported=self._reported_prompts.pop(session_id, (0, 0)),
        )

    # ---- helpers ---------------------------------------------------------------------

    def _call_policy(self) -> CallPolicy:
        return CallPolicy(
            stream_retries=self.options.stream_retries,
            stale_timeout=self.options.stale_timeout,
            retry_base_delay=self.options.retry_base_delay,
            retry_max_delay=self.options.retry_max_delay,
        )

    def new_session_prompt(self, cwd: str | None = None) -> str:
        """The system prompt a new session starts with (configured or default, plus
        instructions, skills and the memory as the files hold it now)."""
        memory = memory_section(self.memory) if self.memory is not None else ""
        return build_system_prompt(self.system_prompt, cwd, self.instructions, skills=self.skills, memory=memory)

    async def _open_session(
        self, request: TurnRequest, model: str
    ) -> tuple[str, str, list[ChatMessage], NewSession | None]:
        """(session id, system prompt, history, the session to create with the turn) for
        the request: reads only, except a changed system prompt of a stored session."""
        store = self.store
        explicit_prompt = request.system_prompt
        if store is None:
            session_id = request.session_id or new_session_id()
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            return session_id, prompt, list(request.history or []), None
        fresh = request.fresh_if_taken  # a new session either way: nothing to read
        session = await store.find_session(request.session_id) if request.session_id and not fresh else None
        new: NewSession | None = None
        if session is None:
            prompt = explicit_prompt or self.new_session_prompt(request.cwd)
            new = NewSession(
                id=request.session_id or new_session_id(),
                given=bool(request.session_id) and not fresh,
                source=request.source,
                model=model,
                title=request.title or title_from(request.input),
                system_prompt=prompt,
                cwd=session_folder(request.cwd),
                parent_session_id=request.spawned_by.session_id if request.spawned_by is not None else None,
                parent_call_id=request.spawned_by.call_id if request.spawned_by is not None else None,
            )
            session_id = new.id
            history: list[ChatMessage] = []
            if request.history:  # a conversation that began elsewhere: keep what came before
                created = await store.create_session(
                    source=new.source, model=model, title=new.title, system_prompt=prompt,
                    session_id=request.session_id, fresh_if_taken=fresh, cwd=new.cwd,
                )  # fmt: skip
                session_id, new = created.id, None
                async with store.transaction():
                    for message in request.history:
                        await store.append_message(session_id, NewMessage.from_openai(message, finish_reason=IMPORTED))
        else:
            # Reuse the stored prompt byte for byte so the upstream's prompt cache holds.
            prompt = explicit_prompt or session.system_prompt or self.new_session_prompt(request.cwd)
            if explicit_prompt and explicit_prompt != session.system_prompt:
                await store.update_session(session.id, system_prompt=explicit_prompt)
            session_id = session.id
            # The stored history is read only when the request brings none; it is the
            # compacted form (summary + what came after), as `chat -r` resumes.
            history = [] if request.history is not None else await self.session_history(session.id)
        if request.history is not None:
            history = list(request.history)
        return session_id, prompt, history, new


async def _emit(handle: TurnHandle, event: AgentEvent) -> None:
    """Hand `event` to the handle; `_Interrupted` when the turn was stopped meanwhile."""
    await handle.emit(event)
    if handle.stop_requested:
        raise _Interrupted


async def _emit_all(handle: TurnHandle, step: AsyncGenerator[AgentEvent, None]) -> None:
    """`_emit` each event of `step`; the step is closed on the way out (its tools stop)."""
    async with aclosing(step) as events:
        async for event in events:
            await _emit(handle, event)


def session_folder(cwd: str | None) -> str:
    """The folder a new session records: the turn's working directory (the process's when
    the request names none), resolved, so a later symlink swapped into the path shows."""
    return os.path.realpath(cwd or os.getcwd())


STOP_POLL = 0.1
"""Seconds between looks at a stop while a hook runs before the turn listens for one."""


async def _unless_stopped(handle: TurnHandle, hook_run: Coroutine[Any, Any, HookOutcome]) -> HookOutcome:
    """The hooks' outcome; NOTHING when the turn is stopped while they run (before the turn
    listens for stops): they are cancelled (their processes killed) and the stop is seen
    right after TurnStarted, as any early stop."""
    task = asyncio.ensure_future(hook_run)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=STOP_POLL)
            if handle.stop_requested and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return NOTHING
        return task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _emit_notices(handle: TurnHandle, notices: list[str]) -> None:
    for notice in notices:
        await _emit(handle, Status("hook", notice))


async def _stop_hooks(hooks: TurnHooks, stops: int, handle: TurnHandle) -> str | None:
    """Run the Stop hooks; the reason the turn goes on, or None when it ends (nothing
    blocked, or the turn went on `hooks.stop_limit` times already)."""
    outcome = await hooks.stop(active=stops > 0)
    await _emit_notices(handle, list(outcome.notices))
    if not outcome.blocked:
        return None
    if stops >= hooks.stop_limit:
        limit = f"a Stop hook asked to go on, but it did {hooks.stop_limit} times already (hooks_stop_limit): ending"
        await _emit(handle, Status("hook", limit))
        return None
    return outcome.reason


async def _go_on(turn: TurnState, context: list[ChatMessage], outcome: CallOutcome, reason: str) -> None:
    """A Stop hook blocked the end: the answer is stored as a step, and the hook's reason
    is the next user message of the same turn."""
    assert turn.answer is not None, "answer() keeps the answer for the turn's end"
    (message, _), turn.answer = turn.answer, None
    await turn.record(message, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
    nudge: ChatMessage = {"role": "user", "content": reason}
    context.append(nudge)
    await turn.record(nudge)


def title_from(content: Any) -> str | None:
    """The title a new session gets from its first prompt (also a remote client's, `hermes.remote`)."""
    content = split_content(content)[0]  # what was typed: not the @ attachments, not images
    text = " ".join(str(content).split())
    if not text:
        return None
    return text if len(text) <= 60 else text[:59].rstrip() + "…"
