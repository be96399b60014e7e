"""Running one batch of tool calls from an assistant message.

Read-only calls that stand next to each other run concurrently; every other call runs
alone, in call order, so a read after a write sees the write. Results are returned in
call order whatever order they finished in. A failing tool becomes an error result; it
never raises out of here (cancellation excepted, which cancels every running call and
waits briefly for their cleanup, i.e. killed process groups).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from hermes.agent.events import AgentEvent, ApprovalRequested, Status, ToolCompleted, ToolOutput, ToolStarted
from hermes.agent.safety.approval import REFUSAL_PREFIXES
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.agent.tools.plan_gate import plan_refusal
from hermes.agent.types import ApprovalRequest
from hermes.errors import ToolError

CANCEL_GRACE = 5.0
"""Seconds cancelled tools get to clean up (kill their processes) before we move on."""


@dataclass(slots=True)
class PlannedCall:
    call_id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    """None when the arguments are not a JSON object."""
    tool: Tool | None


def plan_segments(calls: list[PlannedCall]) -> list[list[PlannedCall]]:
    segments: list[list[PlannedCall]] = []
    for call in calls:
        parallel = call.tool is not None and call.tool.read_only and call.arguments is not None
        if parallel and segments and all(c.tool is not None and c.tool.read_only for c in segments[-1]):
            segments[-1].append(call)
        else:
            segments.append([call])
    return segments


def cap_output(text: str, limit: int) -> str:
    """Cut `text` to about `limit` characters, keeping head and tail, saying how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = int(limit * 0.8)
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n\n[… {cut:,} characters cut: the output was {len(text):,} characters; "
        f"showing the first {head:,} and the last {tail:,} …]\n\n{text[len(text) - tail:]}"
    )


POST_HOOK_NOTE = "[PostToolUse hook]"
"""Starts what a blocking PostToolUse hook adds to the result (the tool did run)."""


async def _invoke(call: PlannedCall, ctx: ToolContext, limit: int, notify: Callable[[str], None]) -> ToolCompleted:
    """Run one call: its PreToolUse hooks (which may block it: their reason is the result,
    or approve it: its approval requests are answered yes, except those no hook answers),
    the tool, then its PostToolUse hooks (a block adds their reason to the result)."""
    started = time.monotonic()
    args = call.arguments or {}
    is_error = True
    if call.tool is None:
        result = f"Error: unknown tool {call.name!r}. Use one of the tools you were given."
    elif call.arguments is None:
        result = (
            f"Error: the arguments for {call.name} are not a valid JSON object: "
            f"{call.raw_arguments[:200]!r}. Send the call again with valid JSON."
        )
    elif ctx.mode == "plan" and (refusal := plan_refusal(call.tool, args)) is not None:
        result = refusal
    else:
        call_ctx = dataclasses.replace(ctx, call_id=call.call_id)
        pre = await ctx.hooks.pre_tool(call.name, args) if ctx.hooks is not None else None
        for notice in pre.notices if pre is not None else ():
            notify(notice)
        if pre is not None and pre.blocked:
            result = pre.reason
        else:
            if pre is not None and pre.approved:
                call_ctx.hook_approved = True
            try:
                result = await call.tool.handler(args, call_ctx)
                is_error = result.startswith(REFUSAL_PREFIXES)
            except ToolError as exc:
                result = f"Error: {exc}"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any tool failure is reported to the model
                result = f"Error: {call.name} failed: {type(exc).__name__}: {exc}"
            if ctx.hooks is not None:
                post = await ctx.hooks.post_tool(call.name, args, result, is_error)
                for notice in post.notices:
                    notify(notice)
                if post.blocked:
                    result = f"{result}\n\n{POST_HOOK_NOTE} {post.reason}"
    return ToolCompleted(
        call_id=call.call_id,
        name=call.name,
        result=cap_output(result, limit),
        duration=time.monotonic() - started,
        is_error=is_error,
        arguments=args,
    )


async def run_batch(
    calls: list[PlannedCall],
    ctx: ToolContext,
    *,
    output_limit: int,
    results: dict[str, ToolCompleted],
) -> AsyncGenerator[AgentEvent, None]:
    """Yield ToolStarted/ApprovalRequested/ToolCompleted events; fill `results` by call id."""
    side_events: asyncio.Queue[AgentEvent] = asyncio.Queue()

    def on_approval(request: ApprovalRequest) -> None:
        side_events.put_nowait(
            ApprovalRequested(
                call_id=request.call_id,
                tool_name=request.tool_name,
                command=request.command,
                reason=request.reason,
                grant=request.grant,
            )
        )

    names = {call.call_id: call.name for call in calls}

    def on_output(call_id: str, text: str) -> None:
        side_events.put_nowait(ToolOutput(call_id=call_id, name=names.get(call_id, ""), text=text))

    def on_notice(text: str) -> None:
        side_events.put_nowait(Status("hook", text))

    events = side_events.put_nowait
    ctx = dataclasses.replace(ctx, on_approval_request=on_approval, on_output=on_output, on_event=events)
    for segment in plan_segments(calls):
        tasks: dict[asyncio.Task[ToolCompleted], PlannedCall] = {}
        getter: asyncio.Task[AgentEvent] | None = None
        try:
            for call in segment:
                preview = call.tool.preview(call.arguments or {}) if call.tool else call.raw_arguments[:120]
                # Started before it is announced: the tool runs while the consumer handles the event.
                tasks[asyncio.create_task(_invoke(call, ctx, output_limit, on_notice))] = call
                yield ToolStarted(call_id=call.call_id, name=call.name, arguments=call.arguments or {}, preview=preview)
            pending: set[asyncio.Task[ToolCompleted]] = set(tasks)
            position = {task: i for i, task in enumerate(tasks)}
            while pending:
                if getter is None:
                    getter = asyncio.create_task(side_events.get())
                waiting: set[asyncio.Task[Any]] = {*pending, getter}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                    getter = None
                # Calls that finished together are reported in call order.
                for task in sorted((t for t in pending if t in done), key=position.__getitem__):
                    pending.discard(task)
                    completed = task.result()
                    results[completed.call_id] = completed
                    yield completed
            while not side_events.empty():
                yield side_events.get_nowait()
        finally:
            if getter is not None:
                getter.cancel()
            running = [task for task in tasks if not task.done()]
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=CANCEL_GRACE)


def as_registry_calls(registry: ToolRegistry, slots: list[Any]) -> list[PlannedCall]:
    """PlannedCalls from accumulated tool slots (see _call.ToolSlot)."""
    return [
        PlannedCall(
            call_id=slot.id,
            name=slot.name,
            raw_arguments=slot.arguments,
            arguments=slot.parsed_arguments(),
            tool=registry.get(slot.name),
        )
        for slot in slots
    ]
