"""POST /v1/chat/completions — JSON and SSE.

Request mapping: ``system`` messages (joined with newlines) are layered on top of
hermes' own system prompt; ``user``/``assistant`` messages are kept (content
normalised; an assistant message keeps its ``tool_calls``), a ``tool`` message is kept
when it answers a call of the assistant message before it, every other role is dropped.
The last kept message is the turn's input (it must be a user message, else 400
``invalid_request_error``) and the rest is history (an assistant message without the tool
cards hermes drew for Open WebUI, `hermes.server.openai.openwebui.strip_tool_cards`) — unless the messages end with tool
results: then those results continue the conversation after the client ran its tools.

The client's function ``tools`` (with ``tool_choice``, ``parallel_tool_calls``) are
offered beside hermes' own (`hermes.server.openai.client_tools`); when the model calls
one, the answer is an assistant message with ``tool_calls`` and finish_reason
``tool_calls`` (in the stream: ``delta.tool_calls`` chunks, one head and one arguments
chunk per call).
The session is the one the request names (`hermes.server.http.request_session`: the
session header, else the client's chat id, placed keyed); without one the conversation
picks it (`hermes.server.openai.conversation`: the session whose last
turn the resent history matches, a fork on an edit or a regeneration, the derived
``api-…`` id for the first conversation with an opening); with it, history comes from
the session store instead of the body. A derived id is the turn's to decide (the turn's
opening write takes it, or a fresh id where a session has it): the response names the
session the turn used, so a stream sends its head once the turn has started.
Every turn is persisted (source ``api_server``), except utility requests
(`hermes.runs.utility`: one model call, no tools, no session). ``response_format`` is
the turn's output format (`hermes.server.openai.output_formats`; malformed → 400), sent
on every model call of the turn.

Text segments of one answer are separated by a blank line that ends the earlier segment
(`hermes.runs.wire`), in the stream and in the JSON answer alike. A stream's frames carry
the text in order, not one frame per upstream chunk: deltas that queued up while the
client was behind (`TurnHandle.batches()`) go out as one frame (`hermes.runs.wire.coalesce`).
Named ``hermes.*`` frames never go to SDK clients unless they opt in (`tool_progress_enabled`).

Outcome: see `hermes.server.turns.Outcome` (stop | length | error, the ``hermes``
block, X-Hermes-* headers, 502 ``agent_incomplete`` when there is no usable text).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import Any, assert_never

from aiohttp import web

from hermes.agent.client_tools import ClientToolResult, ClientTools
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
from hermes.agent.output_format import OutputFormat
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import TurnRequest, TurnResult
from hermes.ids import new_completion_id
from hermes.runs.idempotency import fingerprint
from hermes.runs.utility import flatten_text, is_utility_request
from hermes.runs.wire import Outcome, SegmentJoiner, answer_text, coalesce, status_payload, usage_json
from hermes.server.http.errors import AgentIncomplete, RequestValidationError
from hermes.server.http.idempotent import Answer, Preamble, answered, read_preamble
from hermes.server.http.request import (
    CONTENT_DOC,
    coerce_bool,
    has_visible_payload,
    normalize_content,
    tool_progress_enabled,
)
from hermes.server.http.request_session import requested_session, session_headers
from hermes.server.http.route import IDEMPOTENCY_KEY, TURN_ERRORS, Reply, Route
from hermes.server.http.schema import (
    VISIBLE_CONTENT_DOC,
    Anything,
    Array,
    Body,
    Boolean,
    Number,
    Object,
    String,
)
from hermes.server.http.sse import ClientDisconnected, SSEStream, encode_frame
from hermes.server.http.state import AGENT, SETTINGS, STORAGE
from hermes.server.openai.client_tools import (
    chat_client_tools,
    chat_tool_calls,
    continuation_results,
    continued_history,
    message_tool_calls,
    trailing_results,
)
from hermes.server.openai.conversation import (
    CONVERSATIONS,
    Placement,
    cross_instance_receipts,
    place_conversation,
)
from hermes.server.openai.openwebui import is_open_webui, strip_tool_cards, tool_card, tool_status
from hermes.server.openai.output_formats import RESPONSE_FORMAT_DOC, chat_output_format
from hermes.server.openai.turns import (
    api_turn,
    compacted,
    complete,
    run_to_end,
    stored_history,
    streamed_answer,
    streamed_turn,
    utility_engine,
    utility_turn,
)

log = logging.getLogger(__name__)

KEPT_ROLES = {"user", "assistant"}
IDEMPOTENCY_FIELDS = (
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
    "temperature",
    "top_p",
    "max_tokens",
    "response_format",
)

TOOL_EMOJI = {
    "terminal": "💻",
    "read_file": "📖",
    "write_file": "✍️",
    "patch": "🩹",
    "list_files": "📁",
    "search_files": "🔎",
}


def completion_id() -> str:
    return new_completion_id()


@dataclass
class ChatRequest:
    """A validated chat completions request."""

    model: str
    stream: bool
    system: str | None
    history: list[dict[str, Any]]
    input: str | list[dict[str, Any]]
    first_user: Any
    output_format: OutputFormat | None = None
    tool_results: tuple[ClientToolResult, ...] | None = None
    """A continuation: the messages end with these results of client tool calls."""


MESSAGE = Object(
    properties={
        "role": String(
            required=True, description="system, developer, user, assistant or tool; other roles are dropped"
        ),
        "content": Anything(documented=CONTENT_DOC),
        "name": String(),
    }
)

CHAT_REQUEST = Body(
    "ChatCompletionRequest",
    {
        "messages": Array(
            required=True, min_items=1, items=MESSAGE,
            contains={"type": "object", "required": ["role", "content"],
                      "properties": {"role": {"const": "user"}, "content": VISIBLE_CONTENT_DOC}},
            error=("invalid_messages", "Missing or invalid 'messages' field"),
        ),
        "model": String(),
        "user": String(),
        "metadata": Object(),
        "stream": Boolean(),
        "temperature": Number(),
        "tools": Array(
            description="The client's function tools, offered beside hermes' own; a call of one ends the "
            "turn with tool_calls (finish_reason tool_calls), and the next request's tool messages continue it."
        ),
        "tool_choice": Anything(
            documented={"anyOf": [{"type": "string", "enum": ["none", "auto", "required"]}, {"type": "object"}]}
        ),
        "parallel_tool_calls": Boolean(),
        "response_format": Anything(documented=RESPONSE_FORMAT_DOC),
    },
)
"""Each message's role and content are checked per item by `parse_chat_body` (its params
name the item: ``messages[3].role``)."""


def parse_chat_body(body: dict[str, Any], advertised_model: str) -> ChatRequest:
    CHAT_REQUEST.validate(body)
    output_format = chat_output_format(body)
    messages: list[Any] = body["messages"]
    model = body.get("model") or advertised_model
    system_parts: list[str] = []
    kept: list[dict[str, Any]] = []
    first_user: Any = None
    open_calls: set[str] = set()
    """Ids of the last assistant message's calls that no tool message answered yet."""
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RequestValidationError("Each message must be an object", code="invalid_message", param=param)
        role = message.get("role")
        if not isinstance(role, str):
            raise RequestValidationError(
                "Each message needs a string 'role'", code="invalid_message", param=f"{param}.role"
            )
        if role == "system":
            system_parts.append(flatten_text(normalize_content(message.get("content"), f"{param}.content")))
            continue
        if role == "tool":
            result = _tool_result(message, param, open_calls)
            if result is not None:
                kept.append(result)
            continue
        if role not in KEPT_ROLES:
            continue
        content = normalize_content(message.get("content"), f"{param}.content")
        if role == "assistant":
            content = strip_tool_cards(content)  # hermes' own cards: the store has the real calls
        calls = message_tool_calls(message.get("tool_calls"), f"{param}.tool_calls") if role == "assistant" else []
        open_calls = {call["id"] for call in calls}
        if role == "assistant" and calls:
            kept.append({"role": role, "content": content or None, "tool_calls": calls})
            continue
        if role == "assistant" and not has_visible_payload(content):
            continue
        if role == "user" and first_user is None:
            first_user = content
        kept.append({"role": role, "content": content})
    before, results = trailing_results(kept)
    if not results and (not kept or kept[-1]["role"] != "user" or not has_visible_payload(kept[-1]["content"])):
        raise RequestValidationError(
            "The messages must end with a user message (the new turn) or with tool results",
            code="no_user_message",
            param="messages",
        )
    system = "\n".join(p for p in system_parts if p) or None
    new_input = "" if results else kept[-1]["content"]
    return ChatRequest(
        model=model,
        stream=coerce_bool(body.get("stream"), False),
        system=system,
        history=before if results else kept[:-1],
        input=new_input,
        first_user=first_user if first_user is not None else new_input,
        tool_results=results or None,
        output_format=output_format,
    )


def _tool_result(message: dict[str, Any], param: str, open_calls: set[str]) -> dict[str, Any] | None:
    """A `tool` message that answers a call of the assistant message before it; None for any other."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in open_calls:
        return None  # answers nothing: strict upstreams reject it
    open_calls.discard(call_id)
    content = flatten_text(normalize_content(message.get("content"), f"{param}.content"))
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def completion_body(
    cid: str, created: int, model: str, result: TurnResult, outcome: Outcome
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer_text(result)}
    if result.client_calls:
        message["content"] = message["content"] or None
        message["tool_calls"] = chat_tool_calls(result.client_calls)
    if result.reasoning:
        message["reasoning_content"] = result.reasoning
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": outcome.finish_reason}],
        "usage": usage_json(result.usage, "chat"),
    }
    if outcome.hermes is not None:
        body["hermes"] = outcome.hermes
    return body


async def chat_completions(request: web.Request) -> web.StreamResponse:
    preamble = await read_preamble(request)
    chat = parse_chat_body(preamble.body, request.app[SETTINGS].server_model_name)
    own_tools = request.app[AGENT].tools.names()
    client_tools = chat_client_tools(preamble.body, own_tools)
    asked = requested_session(request, preamble.body, "header", "chat_id")
    header_session = asked.session_id
    if chat.tool_results is None and is_utility_request(
        stream=chat.stream, new_input=chat.input, metadata=preamble.body.get("metadata")
    ):
        return await complete(
            request, preamble, utility_turn(chat.input, chat.history, chat.system, chat.output_format),
            _finisher(chat, None), endpoint="chat", fingerprint=lambda: _fingerprint(preamble, header_session),
            engine=utility_engine(request),
        )

    async def run(watch: bool) -> Answer:  # after the Idempotency-Key's receipt: a replay places nothing
        if header_session is not None:
            # The engine reads the stored history (once, compacted, cached); a continuation
            # needs it here first, to know the calls its results answer.
            history = None if chat.tool_results is None else await stored_history(request, header_session)
            return await _answer(
                request, preamble, chat, header_session, history, None, client_tools, own_tools, watch=watch
            )
        async with place_conversation(
            request.app[STORAGE].sessions, request.app[CONVERSATIONS], history=chat.history,
            key=asked.chat_key, opening=(chat.system, _opening_text(chat.first_user)),
            receipts=cross_instance_receipts(request.app[STORAGE]), continuing=chat.tool_results is not None,
        ) as placement:
            history = chat.history
            if chat.tool_results is not None:  # hermes' own calls of that response are in the store only
                stored = await stored_history(request, placement.session_id)
                history = continued_history(history, stored, chat.tool_results)
            elif placement.how not in ("new", "derived"):
                stored = await stored_history(request, placement.session_id)
                if compacted(stored):  # go on from the summary, as `chat -r` does, not summarise again
                    history = stored
            return await _answer(
                request, preamble, chat, placement.session_id, history, placement, client_tools, own_tools,
                watch=watch,
            )

    return await answered(
        request, preamble, run, endpoint="chat", fingerprint=lambda: _fingerprint(preamble, header_session)
    )


def _opening_text(first_user: Any) -> str:
    return first_user if isinstance(first_user, str) else str(first_user)


async def _answer(
    request: web.Request, preamble: Preamble, chat: ChatRequest, session_id: str, history: list[Any] | None,
    placement: Placement | None, client_tools: ClientTools | None, own_tools: list[str], *, watch: bool,
) -> Answer:
    """Run the turn in `session_id` and answer it; `placement` (a session the conversation
    chose, `hermes.server.openai.conversation`) is marked once the answer is known."""
    turn_request = api_turn(
        request, input=chat.input, session_id=session_id, history=history, client_prompt=chat.system,
        output_format=chat.output_format,
        client_tools=client_tools,
        tool_results=None
        if chat.tool_results is None
        else continuation_results(chat.tool_results, history or [], own_tools, param="messages"),
        fresh_if_taken=placement is not None and placement.fresh_if_taken,
        conversation_mark=None if placement is None else partial(placement.mark_of, chat.input),
    )
    where = _TurnSession(session_id, placement, preamble.session_key)
    if chat.stream:
        return await _stream(request, chat, turn_request, where, record=preamble.idempotency_key is not None)
    return await _finisher(chat, where)(await run_to_end(request, turn_request, watch=watch))


class _TurnSession:
    """The session a chat turn answers in, as its response names it: the placement's, or,
    for a derived id that a session already had, the fresh one the turn created
    (`Placement.landed`, from TurnStarted or the result); the placement is marked there."""

    def __init__(self, session_id: str, placement: Placement | None, session_key: str | None) -> None:
        self.session_id = session_id
        self.placement = placement
        self.session_key = session_key

    @property
    def decided_by_turn(self) -> bool:
        """The turn decides the session (a derived placement): its headers wait for it."""
        return self.placement is not None and self.placement.fresh_if_taken

    def land(self, session_id: str) -> dict[str, str]:
        """The headers, once the turn names the session it used."""
        if self.placement is not None:
            self.placement = self.placement.landed(session_id)
            self.session_id = self.placement.session_id
        return self.headers()

    def headers(self) -> dict[str, str]:
        how = None if self.placement is None else self.placement.how
        return session_headers(self.session_id, self.session_key, placement=how)

    async def settle(self, input: Any, result: TurnResult | None) -> None:
        """Mark the placement once the answer is known, unless the turn's end marked it."""
        if self.placement is not None and result is not None:
            self.land(result.session_id)
            await self.placement.settle_after(input, result)


def _finisher(chat: ChatRequest, where: _TurnSession | None) -> Callable[[TurnResult | None], Awaitable[Answer]]:
    """How a finished non-streamed turn is answered (the chat.completion or a 502); `where`
    (None: a utility request, no session) is settled and named in the headers."""

    async def finish(result: TurnResult | None) -> Answer:
        if where is not None:
            await where.settle(chat.input, result)
        outcome = Outcome.of(result)
        out_headers = {**({} if where is None else where.headers()), **outcome.headers()}
        if result is None or outcome.hard_failure:
            error = AgentIncomplete(
                outcome.error or "Agent run did not produce a response.", extra={"hermes": outcome.hermes}
            )
            return Answer(error.status, error.body(), out_headers)
        return Answer(200, completion_body(completion_id(), int(time.time()), chat.model, result, outcome), out_headers)

    return finish


def _fingerprint(preamble: Preamble, header_session: str | None) -> str:
    return fingerprint(
        preamble.body, IDEMPOTENCY_FIELDS, session_id=header_session, session_key=preamble.session_key
    )


_CUT = "\x00cut\x00"
_CUT_JSON = encode_basestring_ascii(_CUT).encode()
_KEYS = {key: f"{encode_basestring_ascii(key)}: ".encode() for key in ("content", "reasoning_content")}


class ChatChunks:
    """Engine events → `chat.completion.chunk` frames, plus named `hermes.*` frames.

    Named frames (`hermes.tool.progress`, `hermes.status`) go only to clients that accept
    them (`tool_progress_enabled`); with `tool_cards` (Open WebUI) a running tool is the
    client's status line and each finished tool a card in the content
    (`hermes.server.openai.openwebui`).
    """

    def __init__(
        self, stream: SSEStream, model: str, *, named_events: bool, tool_cards: bool = False,
        session_head: Callable[[str], Mapping[str, str]] | None = None,
    ) -> None:  # fmt: skip
        self.stream = stream
        self.session_head = session_head
        """For a stream not yet prepared (its session decided by the turn): the headers
        of the session TurnStarted names; the head and the role chunk go out then."""
        self.cid, self.created, self.model = completion_id(), int(time.time()), model
        self.named_events = named_events
        self.tool_cards = tool_cards
        self.sent_text = False
        self.progress = ToolProgress()
        self.joiner = SegmentJoiner()
        # A content or reasoning frame is the same bytes as `send(self.chunk({key: text}))`
        # would write, with only the text encoded per frame (`delta_frame`).
        head, tail = encode_frame(self.chunk({"content": _CUT})).split(_CUT_JSON)
        self._frame_head, self._frame_tail = head[: -len(b'"content": ')], tail

    def delta_frame(self, key: str, text: str) -> bytes:
        """The SSE frame of a chunk whose delta is `{key: text}`."""
        return b"".join((self._frame_head, _KEYS[key], encode_basestring_ascii(text).encode(), self._frame_tail))

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    async def start(self, headers: Mapping[str, str] | None = None) -> None:
        """The head (with `headers`), unless sent, then the role chunk."""
        await self.stream.prepare(headers)
        await self.stream.send(self.chunk({"role": "assistant"}))

    async def on_event(self, event: AgentEvent) -> None:
        match event:
            case TextDelta():
                if event.text:
                    self.sent_text = True
                    await self.stream.send_raw(self.delta_frame("content", self.joiner.text(event.text)))
            case ReasoningDelta():
                if event.text:
                    await self.stream.send_raw(self.delta_frame("reasoning_content", event.text))
            case ToolStarted() | ToolCompleted():
                payload = self.progress.on_event(event)
                if payload is not None and self.named_events:
                    await self.stream.send(payload, event="hermes.tool.progress")
                if payload is not None and self.tool_cards:
                    await self.tool_card_frames(event, payload)
            case Status() | Retrying() | StreamStalled() | ContextCompacted():
                if self.named_events:
                    await self.stream.send(status_payload(event), event="hermes.status")
            case SegmentEnd():
                tail = self.joiner.end_segment(event.last)
                if tail:
                    await self.stream.send(self.chunk({"content": tail}))
            case ClientToolCalls():
                await self.client_calls(event)
            case TurnStarted():
                if self.session_head is not None and not self.stream.prepared:
                    await self.start(self.session_head(event.session_id))
            case ToolCallGenerating() | ApprovalRequested() | ModelProgress() | ToolOutput() | TurnCompleted():
                pass  # no chunk: the answer is the text; the end is written by `finish`
            case _:
                assert_never(event)

    async def tool_card_frames(self, event: ToolStarted | ToolCompleted, payload: Mapping[str, Any]) -> None:
        """Open WebUI: a running tool is its status line; a finished one, that status done
        and the tool's card in the content (`hermes.server.openai.openwebui`)."""
        if isinstance(event, ToolStarted):
            status = tool_status(f"{payload['emoji']} {payload['label']}", done=False)
        else:
            verb = "failed" if event.is_error else "done"
            status = tool_status(f"{TOOL_EMOJI.get(event.name, '🔧')} {event.name}: {verb}", done=True)
        await self.stream.send({**self.chunk({}), "choices": [], "event": status})
        if isinstance(event, ToolCompleted):
            card = tool_card(call_id=event.call_id, name=event.name, arguments=event.arguments,
                             result=event.result, is_error=event.is_error)  # fmt: skip
            await self.stream.send(self.chunk({"content": card}))

    async def client_calls(self, event: ClientToolCalls) -> None:
        """The client's calls as `delta.tool_calls`: per call, its head, then its arguments."""
        for index, call in enumerate(chat_tool_calls(event.calls)):
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            await self.stream.send(self.chunk({"tool_calls": [{"index": index, **head}]}))
            arguments = {"arguments": call["function"]["arguments"]}
            await self.stream.send(self.chunk({"tool_calls": [{"index": index, "function": arguments}]}))

    async def finish(self, result: TurnResult | None, crash: TurnCrashed | None) -> None:
        """The closing chunk (finish_reason, usage, the hermes block), then [DONE]."""
        if not self.stream.prepared:  # the turn crashed before it started
            await self.start()
        if result is not None and not self.sent_text and answer_text(result) and crash is None:
            await self.stream.send(self.chunk({"content": answer_text(result)}))
        outcome = Outcome.of(result, crash=crash)
        final = self.chunk({}, outcome.finish_reason)
        if result is not None:
            final["usage"] = usage_json(result.usage, "chat")
        if outcome.hermes is not None:
            final["error"] = {"message": outcome.error, "type": "agent_error", "code": outcome.hermes["error_code"]}
            final["hermes"] = outcome.hermes
        await self.stream.send(final)
        await self.stream.send_data("[DONE]")


async def _stream(
    request: web.Request, chat: ChatRequest, turn_request: TurnRequest, where: _TurnSession, *, record: bool
) -> Answer:
    """The streamed answer; a session the turn decides (`_TurnSession.decided_by_turn`) is
    named in the head, sent when the turn has started (TurnStarted), else at once."""
    named_events = tool_progress_enabled(request)
    later = where.decided_by_turn
    opened = streamed_turn(request, turn_request, where.headers(), record=record, prepare=not later)
    async with opened as (stream, turn):
        chunks = ChatChunks(
            stream, chat.model, named_events=named_events, tool_cards=is_open_webui(request.headers),
            session_head=where.land if later else None,
        )  # fmt: skip
        try:
            if not later:
                await chunks.start()
            crash = await _translate(turn, chunks)
            await where.settle(chat.input, turn.result)
            await chunks.finish(turn.result, crash)
        except ClientDisconnected:
            pass  # the stream's on_disconnect has stopped the turn
    return streamed_answer(stream, where.headers())


async def _translate(turn: TurnHandle, chunks: ChatChunks) -> TurnCrashed | None:
    """The turn's events as frames; deltas that piled up behind a slow client go as one frame."""
    try:
        async for batch in turn.batches():
            for event in coalesce(batch):
                await chunks.on_event(event)
    except TurnCrashed as exc:
        log.error("turn crashed: %s", exc)
        return exc
    return None


class ToolProgress:
    """Turns ToolStarted/ToolCompleted into `hermes.tool.progress` payloads.

    A ``running`` payload for each visible tool start, a ``completed`` one (with
    ``is_error``) for its end; never a top-level ``error`` key, which clients such as
    Open WebUI read as a provider failure of the whole answer. Internal tools (name
    starting with ``_``) and completions without a matching start produce nothing. A
    subagent's call carries ``parentToolCallId``, the id of the ``task`` call running it.
    """

    def __init__(self) -> None:
        self._running: set[str] = set()

    def on_event(self, event: ToolStarted | ToolCompleted) -> dict[str, Any] | None:
        if isinstance(event, ToolStarted):
            if event.name.startswith("_") or not event.call_id:
                return None
            self._running.add(event.call_id)
            return {
                "tool": event.name,
                "emoji": TOOL_EMOJI.get(event.name, "🔧"),
                "label": event.preview or event.name,
                "toolCallId": event.call_id,
                "status": "running",
                **({"parentToolCallId": event.parent_call_id} if event.parent_call_id else {}),
            }
        if event.call_id not in self._running:
            return None
        self._running.discard(event.call_id)
        return {
            "tool": event.name,
            "toolCallId": event.call_id,
            "status": "completed",
            "duration": round(event.duration, 3),
            "is_error": event.is_error,
            **({"parentToolCallId": event.parent_call_id} if event.parent_call_id else {}),
        }


ROUTES = (
    Route(
        "POST",
        "/v1/chat/completions",
        chat_completions,
        operation_id="createChatCompletion",
        endpoint="chat_completions",
        summary="One agent turn, OpenAI Chat Completions shape (JSON, or SSE with stream: true)",
        parameters=(IDEMPOTENCY_KEY,),
        body=CHAT_REQUEST,
        responses={
            200: Reply("A chat.completion (or an SSE stream of chat.completion.chunk)", {"type": "object"}, sse=True),
            **TURN_ERRORS,
            502: Reply("The agent produced no usable answer (agent_incomplete)"),
        },
    ),
)
