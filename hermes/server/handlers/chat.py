"""POST /v1/chat/completions — JSON and SSE.

Request mapping: ``system`` messages (joined with newlines) are layered on top of
hermes' own system prompt; ``user``/``assistant`` messages are kept (content
normalised), every other role is dropped; the last kept message is the turn's input
and the rest is history. Without ``X-Hermes-Session-Id`` the session id is derived
(``api-`` + 16 hex of sha256(system + "\\n" + first user content)) so clients that
resend the whole transcript map to one session; with it, history comes from the
session store instead of the body. Every turn is persisted (source ``api_server``).

Outcome: see `hermes.server.turns.Outcome` (stop | length | error, the ``hermes``
block, X-Hermes-* headers, 502 ``agent_incomplete`` when there is no usable text).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hermes.agent.events import (
    ReasoningDelta,
    Retrying,
    Status,
    StreamStalled,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
)
from hermes.agent.types import TurnRequest, TurnResult
from hermes.errors import StoreError
from hermes.ids import derived_session_id, new_completion_id
from hermes.server.errors import AgentIncomplete, RequestValidationError, json_response
from hermes.server.idempotency import fingerprint, validate_key
from hermes.server.request import (
    coerce_bool,
    flatten_text,
    has_visible_payload,
    normalize_content,
    optional_str,
    read_json_object,
    session_id_header,
    session_key_header,
    tool_progress_enabled,
)
from hermes.server.sse import ClientDisconnected, DisconnectWatcher, SSEStream
from hermes.server.state import AGENT, IDEMPOTENCY, LIMITER, METRICS, SESSIONS, SETTINGS
from hermes.server.turns import Outcome, TurnCrashed, TurnStream, layered_system_prompt, status_payload, usage_chat

log = logging.getLogger(__name__)

KEPT_ROLES = {"user", "assistant"}
IDEMPOTENCY_FIELDS = ("model", "messages", "tools", "tool_choice", "stream", "temperature", "top_p", "max_tokens")

TOOL_EMOJI = {
    "terminal": "💻",
    "read_file": "📖",
    "write_file": "✍️",
    "patch": "🩹",
    "list_files": "📁",
    "search_files": "🔎",
}


def derive_session_id(system_prompt: str | None, first_user_content: Any) -> str:
    """Deterministic id for clients that resend the transcript: api-<16 hex>."""
    content = first_user_content if isinstance(first_user_content, str) else str(first_user_content)
    return derived_session_id(system_prompt, content)


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


def parse_chat_body(body: dict[str, Any], advertised_model: str) -> ChatRequest:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestValidationError(
            "Missing or invalid 'messages' field", code="invalid_messages", param="messages"
        )
    model = optional_str(body, "model") or advertised_model
    for name in ("user",):
        optional_str(body, name)
    if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
        raise RequestValidationError("'metadata' must be an object", code="invalid_type", param="metadata")
    system_parts: list[str] = []
    kept: list[dict[str, Any]] = []
    first_user: Any = None
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RequestValidationError("Each message must be an object", code="invalid_message", param=param)
        role = message.get("role")
        if not isinstance(role, str):
            raise RequestValidationError("Each message needs a string 'role'", code="invalid_message", param=f"{param}.role")
        if role == "system":
            system_parts.append(flatten_text(normalize_content(message.get("content"), f"{param}.content")))
            continue
        if role not in KEPT_ROLES:
            continue
        content = normalize_content(message.get("content"), f"{param}.content")
        if role == "assistant" and not has_visible_payload(content):
            continue
        if role == "user" and first_user is None:
            first_user = content
        kept.append({"role": role, "content": content})
    if not kept or not has_visible_payload(kept[-1]["content"]):
        raise RequestValidationError("No user message found in messages", code="no_user_message", param="messages")
    system = "\n".join(p for p in system_parts if p) or None
    return ChatRequest(
        model=model,
        stream=coerce_bool(body.get("stream"), False),
        system=system,
        history=kept[:-1],
        input=kept[-1]["content"],
        first_user=first_user if first_user is not None else kept[-1]["content"],
    )


def _load_history(store: Any, session_id: str) -> list[dict[str, Any]]:
    try:
        if store.find_session(session_id) is None:
            return []
        return list(store.history(session_id))
    except StoreError as exc:
        log.warning("session history unavailable for %s: %s", session_id, exc)
        return []


def completion_body(
    cid: str, created: int, model: str, result: TurnResult, outcome: Outcome
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": result.final_text}
    if result.reasoning:
        message["reasoning_content"] = result.reasoning
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": outcome.finish_reason}],
        "usage": usage_chat(result.usage),
    }
    if outcome.hermes is not None:
        body["hermes"] = outcome.hermes
    return body


async def chat_completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    settings = app[SETTINGS]
    body = await read_json_object(request)
    chat = parse_chat_body(body, settings.server_model_name)
    session_key = session_key_header(request)
    header_session = session_id_header(request)
    idem_key = validate_key(request.headers.get("Idempotency-Key"))  # checked even where unused
    if chat.stream:
        idem_key = None  # streams are never cached

    if header_session is not None:
        session_id = header_session
        history = _load_history(app[SESSIONS], session_id)
    else:
        session_id = derive_session_id(chat.system, chat.first_user)
        history = chat.history
    agent = app[AGENT]
    turn_request = TurnRequest(
        input=chat.input,
        session_id=session_id,
        history=history,
        system_prompt=layered_system_prompt(agent, chat.system),
        source="api_server",
        approve=None,
        yolo=settings.yolo,
    )
    headers = {"X-Hermes-Session-Id": session_id}
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key

    if chat.stream:
        return await _stream(request, chat, turn_request, headers)

    async def compute() -> tuple[int, dict[str, Any], dict[str, str]]:
        return await _complete(request, chat, turn_request, headers, watch=idem_key is None)

    if idem_key is None:
        status, data, out_headers = await compute()
    else:
        fp = fingerprint(body, IDEMPOTENCY_FIELDS, session_id=header_session, session_key=session_key)
        status, data, out_headers = await app[IDEMPOTENCY].get_or_set(f"chat\0{idem_key}", fp, compute)
    return json_response(data, status=status, headers=out_headers)


async def _complete(
    request: web.Request,
    chat: ChatRequest,
    turn_request: TurnRequest,
    headers: dict[str, str],
    *,
    watch: bool,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    app = request.app
    with app[LIMITER].admit():
        app[METRICS].turns += 1
        turn = TurnStream(app[AGENT], turn_request)
        try:
            if watch:
                async with DisconnectWatcher(request) as watcher:
                    watcher.on_disconnect(turn.cancel)
                    result = await turn.wait()
            else:
                result = await turn.wait()
        finally:
            await turn.aclose()
    outcome = Outcome.of(result)
    out_headers = {**headers, **outcome.headers()}
    if result is None or outcome.hard_failure:
        error = AgentIncomplete(outcome.error or "Agent run did not produce a response.", extra={"hermes": outcome.hermes})
        return error.status, error.body(), out_headers
    return 200, completion_body(completion_id(), int(time.time()), chat.model, result, outcome), out_headers


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def _stream(
    request: web.Request, chat: ChatRequest, turn_request: TurnRequest, headers: dict[str, str]
) -> web.StreamResponse:
    app = request.app
    named_events = tool_progress_enabled(request)
    cid, created, model = completion_id(), int(time.time()), chat.model
    with app[LIMITER].admit():
        app[METRICS].turns += 1
        stream = SSEStream(request, headers=headers)
        await stream.prepare()
        turn = TurnStream(app[AGENT], turn_request)
        stream.on_disconnect(turn.cancel)
        sent_text = False
        progress = ToolProgress()
        crash: BaseException | None = None
        try:
            await stream.send(_chunk(cid, created, model, {"role": "assistant"}))
            try:
                async for event in turn.events():
                    if isinstance(event, TextDelta):
                        if event.text:
                            sent_text = True
                            await stream.send(_chunk(cid, created, model, {"content": event.text}))
                    elif isinstance(event, ReasoningDelta):
                        if event.text:
                            await stream.send(_chunk(cid, created, model, {"reasoning_content": event.text}))
                    elif isinstance(event, (ToolStarted, ToolCompleted)):
                        payload = progress.on_event(event)
                        if payload is not None and named_events:
                            await stream.send(payload, event="hermes.tool.progress")
                    elif isinstance(event, (Status, Retrying, StreamStalled)) and named_events:
                        await stream.send(status_payload(event), event="hermes.status")
                    elif isinstance(event, TurnCompleted):
                        break
            except TurnCrashed as exc:
                log.error("turn crashed: %s", exc)
                crash = exc
            result = turn.result
            if result is not None and not sent_text and result.final_text and crash is None:
                await stream.send(_chunk(cid, created, model, {"content": result.final_text}))
            outcome = Outcome.of(result, crash=crash)
            finish = _chunk(cid, created, model, {}, outcome.finish_reason)
            if result is not None:
                finish["usage"] = usage_chat(result.usage)
            if outcome.hermes is not None:
                finish["error"] = {"message": outcome.error, "type": "agent_error"}
                finish["hermes"] = outcome.hermes
            await stream.send(finish)
            await stream.send_data("[DONE]")
        except ClientDisconnected:
            pass  # the on_disconnect callback has cancelled the turn
        finally:
            await turn.aclose()
            await stream.close()
    return stream.response


class ToolProgress:
    """Turns ToolStarted/ToolCompleted into `hermes.tool.progress` payloads.

    A ``running`` payload for each visible tool start, a ``completed`` one for its end;
    internal tools (name starting with ``_``) and completions without a matching start
    produce nothing.
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
            }
        if event.call_id not in self._running:
            return None
        self._running.discard(event.call_id)
        return {
            "tool": event.name,
            "toolCallId": event.call_id,
            "status": "completed",
            "duration": round(event.duration, 3),
            "error": event.is_error,
        }



ROUTES = [web.post("/v1/chat/completions", chat_completions)]

_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "object"}},
                {"type": "null"},
            ]
        },
        "name": {"type": "string"},
    },
}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "ChatCompletionRequest": {
        "type": "object",
        "required": ["messages"],
        "properties": {
            "model": {"type": "string"},
            "messages": {"type": "array", "minItems": 1, "items": _MESSAGE},
            "stream": {"type": "boolean"},
            "temperature": {"type": "number"},
            "tools": {"type": "array", "items": {"type": "object"}},
            "metadata": {"type": "object"},
            "user": {"type": "string"},
        },
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v1/chat/completions": {
        "post": {
            "operationId": "createChatCompletion",
            "summary": "One agent turn, OpenAI Chat Completions shape (JSON, or SSE with stream: true)",
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}},
            },
            "responses": {
                "200": {
                    "description": "A chat.completion (or an SSE stream of chat.completion.chunk)",
                    "content": {
                        "application/json": {"schema": {"type": "object"}},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                "400": {"$ref": "#/components/responses/BadRequest"},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "403": {"$ref": "#/components/responses/Forbidden"},
                "413": {"$ref": "#/components/responses/PayloadTooLarge"},
                "429": {"$ref": "#/components/responses/RateLimited"},
                "502": {"description": "The agent produced no usable answer (agent_incomplete)"},
            },
        }
    }
}
