"""The SSE form of POST /v1/responses.

Event sequence (each frame ``event: <type>`` + ``data: {"type": <type>, ...,
"sequence_number": n}``, n = 0, 1, 2… per stream; ``output_index`` is the item's place in
the final output, ``item_id`` its id, ``content_index`` always 0):

    response.created, response.in_progress        (status in_progress; stored at once when store is on;
                                                   `tools` empty: the client's tool schemas, which
                                                   can be tens of KB, go out once, in the end event)
    per block, in the order the agent produced them:
      reasoning: output_item.added → reasoning_summary_part.added → reasoning_summary_text.delta…
                 → reasoning_summary_text.done → reasoning_summary_part.done → output_item.done
      text:      output_item.added (message) → content_part.added → output_text.delta… (logprobs: [])
                 → output_text.done → content_part.done → output_item.done
                 (one message per segment, closed at SegmentEnd after a last delta that is the
                 blank-line separator, see `hermes.runs.wire`: no message starts with it)
      tool, function_call form: output_item.added (function_call, in_progress) … on completion
                 output_item.done (function_call) → output_item.added + output_item.done
                 (function_call_output, output = [{"type": "input_text", "text": …}])
      client tool (the turn ends waiting for the client): output_item.added (function_call,
                 in_progress, arguments "") → function_call_arguments.delta → .done →
                 output_item.done (function_call, completed); the response then completes
      tool, mcp_call form (SDK clients, `hermes.server.openai.tool_items`): output_item.added
                 (mcp_call, in_progress) → mcp_call.in_progress → mcp_call_arguments.delta/.done
                 … on completion mcp_call.completed | mcp_call.failed → output_item.done
    response.completed | response.incomplete | response.failed   (the full response)

A failed turn's error is in ``response.failed`` only, never also as output text.

The deltas carry the text in order, not one event per upstream chunk: deltas that
queued up while the client was behind (`TurnHandle.batches()`) go out as one
``output_text.delta`` (or ``reasoning_summary_text.delta``) event (`hermes.runs.wire.coalesce`);
sequence numbers count the events written, so they still rise by one. A delta event is
written from a `FrameTemplate` of its item (the same bytes as `emit` would write; only the
delta and the sequence number are encoded per event).

Named ``hermes.status`` frames (no sequence number) go only to clients that accept
named events (see `tool_progress_enabled`). A client disconnect — or the server
cancelling the handler — interrupts the turn and stores an ``incomplete`` snapshot
(items so far plus the partial text) when ``store`` is on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

from aiohttp import web

from hermes.agent.client_tools import ClientToolCall
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
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import TurnRequest, TurnResult
from hermes.runs.wire import SegmentJoiner, answer_text, coalesce, status_payload
from hermes.server.http.idempotent import Answer
from hermes.server.http.request import ToolItemForm, tool_progress_enabled
from hermes.server.http.sse import HOLE, ClientDisconnected, FrameTemplate, SSEStream
from hermes.server.http.state import STORAGE
from hermes.server.openai.client_tools import function_call_item
from hermes.server.openai.response_objects import (
    Chain,
    ResponsesRequest,
    envelope,
    error_object,
    new_id,
    response_id,
    response_status,
    store_record,
)
from hermes.server.openai.tool_items import call_item, finish_mcp_call, function_call_output_item
from hermes.server.openai.turns import streamed_answer, streamed_turn
from hermes.store.api import AsyncResponseStore

log = logging.getLogger(__name__)


class ResponseEvents:
    """Builds the Responses event sequence and remembers the output items so far."""

    def __init__(self, stream: SSEStream, *, named_events: bool, form: ToolItemForm = "function_call") -> None:
        self.stream = stream
        self.named_events = named_events
        self.form = form
        self.joiner = SegmentJoiner()
        self.seq = 0
        self.items: list[dict[str, Any]] = []
        self.streamed_text = False
        self._message: dict[str, Any] | None = None
        self._message_text: list[str] = []
        self._text_delta: FrameTemplate | None = None
        self._reasoning: dict[str, Any] | None = None
        self._reasoning_text: list[str] = []
        self._reasoning_delta: FrameTemplate | None = None
        self._calls: dict[str, dict[str, Any]] = {}

    async def on_event(self, event: AgentEvent) -> None:
        """One engine event → its Responses events (named `hermes.status` frames aside)."""
        match event:
            case TextDelta():
                if event.text:
                    await self.text(self.joiner.text(event.text))
            case ReasoningDelta():
                if event.text:
                    await self.reasoning(event.text)
            case SegmentEnd():
                tail = self.joiner.end_segment(event.last)
                if tail and self._message is not None:
                    await self.text(tail)
                await self.close_reasoning()
                await self.close_message()
            case ToolStarted():
                await self.tool_started(event)
            case ToolCompleted():
                await self.tool_completed(event)
            case ClientToolCalls():
                for call in event.calls:
                    await self.client_call(call)
            case Status() | Retrying() | StreamStalled() | ContextCompacted():
                if self.named_events:
                    await self.stream.send(status_payload(event), event="hermes.status")
            case (
                TurnStarted() | ToolCallGenerating() | ApprovalRequested() | ModelProgress() | ToolOutput()
                | TurnCompleted()
            ):  # fmt: skip
                pass  # not output items; the terminal event is written from the result
            case _:
                assert_never(event)

    async def emit(self, type_: str, **payload: Any) -> None:
        data = {"type": type_, **payload, "sequence_number": self.seq}
        self.seq += 1
        await self.stream.send(data, event=type_)

    def delta_template(self, type_: str, **payload: Any) -> FrameTemplate:
        """The frames of `emit(type_, **payload, delta=…)`, for `emit_delta`."""
        data = {"type": type_, **payload, "sequence_number": HOLE}
        return FrameTemplate(data, event=type_, ensure_ascii=self.stream.ensure_ascii)

    async def emit_delta(self, template: FrameTemplate, delta: str) -> None:
        seq, self.seq = self.seq, self.seq + 1
        await self.stream.send_raw(template.frame(delta, seq))

    # text ------------------------------------------------------------------------------

    async def text(self, delta: str) -> None:
        await self.close_reasoning()
        if self._message is None:
            self._message = {
                "id": new_id("msg_"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            self._message_text = []
            self.items.append(self._message)
            index = len(self.items) - 1
            await self.emit("response.output_item.added", output_index=index, item=dict(self._message))
            await self.emit(
                "response.content_part.added",
                item_id=self._message["id"],
                output_index=index,
                content_index=0,
                part=_text_part(""),
            )
            self._text_delta = self.delta_template(
                "response.output_text.delta",
                item_id=self._message["id"],
                output_index=index,
                content_index=0,
                delta=HOLE,
                logprobs=[],
            )
        assert self._text_delta is not None
        self._message_text.append(delta)
        self.streamed_text = True
        await self.emit_delta(self._text_delta, delta)

    def partial_text(self) -> str:
        return "".join(self._message_text) if self._message is not None else ""

    async def close_message(self) -> None:
        if self._message is None:
            return
        message, self._message = self._message, None
        text = "".join(self._message_text)
        index = self.items.index(message)
        message["status"] = "completed"
        message["content"] = [{"type": "output_text", "text": text, "annotations": []}]
        common = {"item_id": message["id"], "output_index": index, "content_index": 0}
        await self.emit("response.output_text.done", **common, text=text, logprobs=[])
        await self.emit("response.content_part.done", **common, part=_text_part(text))
        await self.emit("response.output_item.done", output_index=index, item=message)

    # reasoning -------------------------------------------------------------------------

    async def reasoning(self, delta: str) -> None:
        if self._reasoning is None:
            await self.close_message()
            self._reasoning = {"id": new_id("rs_"), "type": "reasoning", "status": "in_progress", "summary": []}
            self._reasoning_text = []
            self.items.append(self._reasoning)
            index = len(self.items) - 1
            await self.emit("response.output_item.added", output_index=index, item=dict(self._reasoning))
            await self.emit(
                "response.reasoning_summary_part.added",
                item_id=self._reasoning["id"],
                output_index=index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
            self._reasoning_delta = self.delta_template(
                "response.reasoning_summary_text.delta",
                item_id=self._reasoning["id"],
                output_index=index,
                summary_index=0,
                delta=HOLE,
            )
        assert self._reasoning_delta is not None
        self._reasoning_text.append(delta)
        await self.emit_delta(self._reasoning_delta, delta)

    async def close_reasoning(self) -> None:
        if self._reasoning is None:
            return
        item, self._reasoning = self._reasoning, None
        text = "".join(self._reasoning_text)
        index = self.items.index(item)
        common = {"item_id": item["id"], "output_index": index, "summary_index": 0}
        await self.emit("response.reasoning_summary_text.done", **common, text=text)
        await self.emit("response.reasoning_summary_part.done", **common, part={"type": "summary_text", "text": text})
        item["status"] = "completed"
        item["summary"] = [{"type": "summary_text", "text": text}]
        await self.emit("response.output_item.done", output_index=index, item=item)

    # tools -----------------------------------------------------------------------------

    async def tool_started(self, event: ToolStarted) -> None:
        if event.name.startswith("_") or not event.call_id or event.parent_call_id is not None:
            return  # internal, or a subagent's call: not an output item of this response
        await self.close_reasoning()
        await self.close_message()
        arguments = json.dumps(event.arguments)
        item = call_item(self.form, call_id=event.call_id, name=event.name, arguments=arguments, status="in_progress")
        self._calls[event.call_id] = item
        self.items.append(item)
        index = len(self.items) - 1
        if self.form == "mcp_call":
            # The stream helpers accumulate the arguments from the delta events.
            await self.emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            common = {"item_id": item["id"], "output_index": index}
            await self.emit("response.mcp_call.in_progress", **common)
            await self.emit("response.mcp_call_arguments.delta", **common, delta=arguments)
            await self.emit("response.mcp_call_arguments.done", **common, arguments=arguments)
        else:
            await self.emit("response.output_item.added", output_index=index, item=dict(item))

    async def tool_completed(self, event: ToolCompleted) -> None:
        item = self._calls.pop(event.call_id, None)
        if item is None:
            return  # internal tool, or a completion without its start
        index = self.items.index(item)
        if self.form == "mcp_call":
            finish_mcp_call(item, event.result, is_error=event.is_error)
            done = "response.mcp_call.failed" if event.is_error else "response.mcp_call.completed"
            await self.emit(done, item_id=item["id"], output_index=index)
            await self.emit("response.output_item.done", output_index=index, item=item)
            return
        item["status"] = "completed"
        await self.emit("response.output_item.done", output_index=index, item=item)
        output = function_call_output_item(event.call_id, event.result, streamed=True)
        self.items.append(output)
        index = len(self.items) - 1
        await self.emit("response.output_item.added", output_index=index, item=output)
        await self.emit("response.output_item.done", output_index=index, item=output)

    async def client_call(self, call: ClientToolCall) -> None:
        """A call of the client's tool: a `function_call` item, its arguments streamed."""
        await self.close_reasoning()
        await self.close_message()
        item = function_call_item(call, item_id=new_id("fc_"), status="in_progress")
        self.items.append(item)
        index = len(self.items) - 1
        await self.emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
        common = {"item_id": item["id"], "output_index": index}
        await self.emit("response.function_call_arguments.delta", **common, delta=call.arguments)
        await self.emit("response.function_call_arguments.done", **common, arguments=call.arguments)
        item["status"] = "completed"
        await self.emit("response.output_item.done", output_index=index, item=item)

    # end -------------------------------------------------------------------------------

    def snapshot_items(self) -> list[dict[str, Any]]:
        """Output so far, with an open message carrying its partial text."""
        out = []
        for item in self.items:
            if item is self._message:
                content = [{"type": "output_text", "text": self.partial_text(), "annotations": []}]
                out.append({**item, "status": "incomplete", "content": content})
            else:
                out.append(item)
        return out


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


async def stream_response(
    request: web.Request,
    req: ResponsesRequest,
    chain: Chain,
    turn_request: TurnRequest,
    headers: dict[str, str],
    form: ToolItemForm = "function_call",
    *,
    record: bool = False,
    settle: Callable[[TurnResult | None], Awaitable[None]] | None = None,
) -> Answer:
    """The streamed turn; its answer records the frames with `record` (`hermes.server.openai.turns`);
    `settle` gets the turn's result once it has ended (before the stream's last event, or
    after a vanished client's snapshot)."""
    store = request.app[STORAGE].responses
    named_events = tool_progress_enabled(request)
    rid, created_at = response_id(), int(time.time())
    user_message = {"role": "user", "content": req.input}
    async with streamed_turn(request, turn_request, headers, record=record) as (stream, turn):
        events = ResponseEvents(stream, named_events=named_events, form=form)
        terminal_stored = False
        try:
            created = envelope(rid, created_at, req, chain, status="in_progress", output=[])
            await store_record(store, req, chain, rid, created, [user_message])
            announced = {**created, "tools": []}  # the tool schemas go out once: in the end event
            await events.emit("response.created", response=announced)
            await events.emit("response.in_progress", response=announced)
            crash: TurnCrashed | None = None
            try:
                async for batch in turn.batches():  # what piled up behind a slow client: merged
                    for event in coalesce(batch):
                        await events.on_event(event)
            except TurnCrashed as exc:
                log.error("turn crashed: %s", exc)
                crash = exc
            result = turn.result
            if stream.disconnected:
                raise ClientDisconnected("client disconnected")
            await events.close_reasoning()
            status = response_status(result) if crash is None else "failed"
            if not events.streamed_text and crash is None and result is not None and answer_text(result):
                await events.text(answer_text(result))  # the answer came without deltas (non-streaming upstream)
            await events.close_message()
            error = None
            if status == "failed":
                error = error_object(result, None if crash is None else str(crash)[:500])
            final = envelope(
                rid, created_at, req, chain, status=status, output=events.items, result=result, error=error
            )
            await store_record(store, req, chain, rid, final, _transcript(result, user_message))
            terminal_stored = True
            await events.emit(f"response.{status}", response=final)
        except (ClientDisconnected, asyncio.CancelledError) as exc:
            turn.stop()
            if not terminal_stored:
                await _store_incomplete(store, req, chain, rid, created_at, events, turn, user_message)
                terminal_stored = True
            if isinstance(exc, asyncio.CancelledError):
                raise
    if settle is not None:
        await settle(turn.result)  # the turn has wound down: its result is final
    return streamed_answer(stream, headers)


def _transcript(result: TurnResult | None, user_message: dict[str, Any]) -> list[dict[str, Any]]:
    return list(result.messages) if result is not None and result.messages else [user_message]


async def _store_incomplete(
    store: AsyncResponseStore,
    req: ResponsesRequest,
    chain: Chain,
    rid: str,
    created_at: int,
    events: ResponseEvents,
    turn: TurnHandle,
    user_message: dict[str, Any],
) -> None:
    """The snapshot a vanished client leaves behind: items so far and the partial text."""
    if not req.store:
        return
    # Let the engine finish its interrupt cleanup so the transcript has the partial text.
    await turn.settled(timeout=5)
    result = turn.result
    items = events.snapshot_items()
    partial = events.partial_text()
    if not any(item.get("type") == "message" for item in items) and partial:
        items.append({"id": new_id("msg_"), "type": "message", "status": "incomplete", "role": "assistant",
                      "content": [{"type": "output_text", "text": partial, "annotations": []}]})
    transcript = _transcript(result, user_message)
    if result is None and partial:
        transcript = [user_message, {"role": "assistant", "content": partial}]
    snapshot = envelope(rid, created_at, req, chain, status="incomplete", output=items, result=result)
    await store_record(store, req, chain, rid, snapshot, transcript)
