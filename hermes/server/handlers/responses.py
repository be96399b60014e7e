"""POST /v1/responses (JSON and SSE), GET and DELETE /v1/responses/{id}.

Input mapping: a string is one user message; in an array, strings are user messages and
message objects keep their role (``system``/``developer`` items join the instructions),
while echoed ``reasoning``/``function_call``/``function_call_output`` items are skipped.
The last item is the turn's input, earlier ones are history.

Chaining: ``previous_response_id`` (unknown → 404) or a ``conversation`` name (unknown →
a new conversation; both at once → 400) loads the stored transcript, session id and
instructions (inherited when the request has none). An explicit ``conversation_history``
replaces the stored transcript. ``truncation: "auto"`` keeps the last 100 history
messages. Stored record (when ``store`` is on, the default):
``{"response", "conversation_history": prior + this turn's transcript, "instructions",
"session_id"}`` — the transcript is stored once, never re-appended.

The output lists only the current turn's items: ``function_call`` / ``function_call_output``
per tool call, commentary ``message`` items for text written beside tool calls, then the
final ``message``. Streaming lives in `hermes.server.handlers.responses_stream`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hermes.agent.types import TurnRequest, TurnResult
from hermes.ids import new_item_id, new_response_id, new_session_id
from hermes.server.errors import AgentIncomplete, NotFound, RequestValidationError, json_response
from hermes.server.idempotency import fingerprint, validate_key
from hermes.server.request import (
    coerce_bool,
    flatten_text,
    has_visible_payload,
    normalize_content,
    optional_str,
    read_json_object,
    session_key_header,
)
from hermes.server.sse import DisconnectWatcher
from hermes.server.state import AGENT, IDEMPOTENCY, LIMITER, METRICS, RESPONSES, SETTINGS
from hermes.server.turns import Outcome, TurnStream, layered_system_prompt, usage_responses

AUTO_TRUNCATION_LIMIT = 100
MAX_NAME_LENGTH = 256
SKIPPED_INPUT_TYPES = {"reasoning", "function_call", "function_call_output", "item_reference"}
IDEMPOTENCY_FIELDS = (
    "input",
    "instructions",
    "previous_response_id",
    "conversation",
    "conversation_history",
    "model",
    "store",
    "truncation",
    "tools",
)


def new_id(prefix: str) -> str:
    return new_item_id(prefix)


def response_id() -> str:
    return new_response_id()


# ---- request parsing ------------------------------------------------------------------------


@dataclass
class ResponsesRequest:
    model: str
    stream: bool
    store: bool
    input: str | list[dict[str, Any]]
    input_history: list[dict[str, Any]]
    instructions: str | None
    previous_response_id: str | None
    conversation: str | None
    conversation_history: list[dict[str, Any]] | None
    truncation: str | None
    metadata: dict[str, Any] | None = None
    extra_instructions: list[str] = field(default_factory=list)


def _parse_input(value: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(messages, system texts) from the `input` field."""
    if value is None:
        raise RequestValidationError("Missing 'input' field", code="missing_input", param="input")
    if isinstance(value, str):
        return [{"role": "user", "content": normalize_content(value, "input")}], []
    if not isinstance(value, list):
        raise RequestValidationError("'input' must be a string or array", code="invalid_input", param="input")
    messages: list[dict[str, Any]] = []
    system: list[str] = []
    for index, item in enumerate(value):
        param = f"input[{index}]"
        if isinstance(item, str):
            messages.append({"role": "user", "content": normalize_content(item, param)})
            continue
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            raise RequestValidationError("Input item 'type' must be a string.", code="invalid_input_item", param=f"{param}.type")
        if kind in SKIPPED_INPUT_TYPES:
            continue
        if kind is not None and kind != "message":
            raise RequestValidationError(
                f"Unsupported input item type {str(kind)[:64]!r}.", code="unsupported_input_item", param=f"{param}.type"
            )
        role = item.get("role", "user")
        if not isinstance(role, str) or role not in ("user", "assistant", "system", "developer"):
            raise RequestValidationError(
                "Input message role must be user, assistant, system or developer.",
                code="invalid_role",
                param=f"{param}.role",
            )
        content = normalize_content(item.get("content"), f"{param}.content")
        if role in ("system", "developer"):
            system.append(flatten_text(content))
            continue
        messages.append({"role": role, "content": content})
    return messages, system


def _parse_history(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise RequestValidationError(
            "'conversation_history' must be an array of message objects",
            code="invalid_conversation_history",
            param="conversation_history",
        )
    history: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        param = f"conversation_history[{index}]"
        if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
            raise RequestValidationError(
                f"{param} must have 'role' and 'content' fields", code="invalid_conversation_history", param=param
            )
        role = entry["role"]
        if not isinstance(role, str) or role not in ("user", "assistant"):
            raise RequestValidationError(
                f"{param}.role must be 'user' or 'assistant'", code="invalid_conversation_history", param=f"{param}.role"
            )
        history.append({"role": role, "content": normalize_content(entry["content"], f"{param}.content")})
    return history


def _name(body: dict[str, Any], field_name: str) -> str | None:
    value = optional_str(body, field_name)
    if value is None:
        return None
    if not value or len(value) > MAX_NAME_LENGTH or any(ch in value for ch in "\r\n\x00"):
        raise RequestValidationError(f"Invalid '{field_name}'", code=f"invalid_{field_name}", param=field_name)
    return value


def parse_responses_body(body: dict[str, Any], advertised_model: str) -> ResponsesRequest:
    messages, system = _parse_input(body.get("input"))
    if not messages or not has_visible_payload(messages[-1]["content"]):
        raise RequestValidationError("No user message found in input", code="no_user_message", param="input")
    conversation_field = body.get("conversation")
    if isinstance(conversation_field, dict):  # OpenAI's {"id": "..."} form
        conversation_field = conversation_field.get("id")
        body = {**body, "conversation": conversation_field}
    previous = _name(body, "previous_response_id")
    conversation = _name(body, "conversation")
    if previous and conversation:
        raise RequestValidationError(
            "Cannot use both 'conversation' and 'previous_response_id'", code="conflicting_parameters", param="conversation"
        )
    truncation = optional_str(body, "truncation")
    if truncation not in (None, "auto", "disabled"):
        raise RequestValidationError(
            "'truncation' must be 'auto' or 'disabled'", code="invalid_truncation", param="truncation"
        )
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise RequestValidationError("'metadata' must be an object", code="invalid_type", param="metadata")
    return ResponsesRequest(
        model=optional_str(body, "model") or advertised_model,
        stream=coerce_bool(body.get("stream"), False),
        store=coerce_bool(body.get("store"), True),
        input=messages[-1]["content"],
        input_history=messages[:-1],
        instructions=optional_str(body, "instructions"),
        previous_response_id=previous,
        conversation=conversation,
        conversation_history=_parse_history(body.get("conversation_history")),
        truncation=truncation,
        metadata=metadata,
        extra_instructions=system,
    )


@dataclass
class Chain:
    """Everything a turn inherits from what came before it."""

    history: list[dict[str, Any]]
    session_id: str
    instructions: str | None
    previous_response_id: str | None


def resolve_chain(req: ResponsesRequest, store: Any) -> Chain:
    previous_id = req.previous_response_id
    if previous_id is None and req.conversation is not None:
        previous_id = store.get_conversation(req.conversation)
    history: list[dict[str, Any]] = []
    session_id: str | None = None
    instructions = req.instructions
    if previous_id is not None:
        record = store.get(previous_id)
        if record is None:
            if req.previous_response_id is not None:
                raise NotFound(
                    f"Previous response not found: {previous_id}",
                    code="previous_response_not_found",
                    param="previous_response_id",
                )
            previous_id = None  # the conversation's response was deleted: start afresh
        else:
            history = list(record.get("conversation_history") or [])
            session_id = record.get("session_id")
            if instructions is None:
                instructions = record.get("instructions")
    if req.conversation_history is not None:
        history = list(req.conversation_history)
    history.extend(req.input_history)
    if req.truncation == "auto" and len(history) > AUTO_TRUNCATION_LIMIT:
        history = history[-AUTO_TRUNCATION_LIMIT:]
    return Chain(
        history=history,
        session_id=session_id or new_session_id(),
        instructions=instructions,
        previous_response_id=previous_id,
    )


def system_text(req: ResponsesRequest, chain: Chain) -> str | None:
    parts = [p for p in (chain.instructions, *req.extra_instructions) if p]
    return "\n".join(parts) or None


# ---- output items ---------------------------------------------------------------------------


def message_item(text: str, *, item_id: str | None = None, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id or new_id("msg_"),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call_item(call: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    fn = call.get("function") or {}
    arguments = fn.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments or {})
    return {
        "id": new_id("fc_"),
        "type": "function_call",
        "status": status,
        "name": fn.get("name", ""),
        "arguments": arguments,
        "call_id": call.get("id", ""),
    }


def output_items(result: TurnResult) -> list[dict[str, Any]]:
    """The current turn's items (the transcript after its user message) plus the final message."""
    items: list[dict[str, Any]] = []
    if result.reasoning:
        items.append(
            {"id": new_id("rs_"), "type": "reasoning", "summary": [{"type": "summary_text", "text": result.reasoning}]}
        )
    for message in result.messages[1:]:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            text = message.get("content")
            if isinstance(text, str) and text.strip():
                items.append(message_item(text))
            items.extend(function_call_item(call) for call in message["tool_calls"])
        elif role == "tool":
            content = message.get("content")
            items.append(
                {
                    "id": new_id("fco_"),
                    "type": "function_call_output",
                    "status": "completed",
                    "call_id": message.get("tool_call_id", ""),
                    "output": content if isinstance(content, str) else json.dumps(content),
                }
            )
    items.append(message_item(final_message_text(result)))
    return items


def final_message_text(result: TurnResult | None) -> str:
    if result is None:
        return "(No response generated)"
    return result.final_text or result.error or "(No response generated)"


def response_status(result: TurnResult | None) -> str:
    if result is None:
        return "failed"
    return {"completed": "completed", "partial": "incomplete", "interrupted": "incomplete"}.get(result.status, "failed")


def envelope(
    rid: str,
    created_at: int,
    req: ResponsesRequest,
    chain: Chain,
    *,
    status: str,
    output: list[dict[str, Any]],
    result: TurnResult | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    incomplete = None
    if status == "incomplete":
        reason = "interrupted" if result is None or result.status == "interrupted" else "max_output_tokens"
        incomplete = {"reason": reason}
    body: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": req.model,
        "output": output,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": chain.instructions,
        "previous_response_id": chain.previous_response_id,
        "metadata": req.metadata or {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": req.store,
        "truncation": req.truncation or "disabled",
        "usage": usage_responses(result.usage) if result is not None else None,
    }
    if req.conversation is not None:
        body["conversation"] = {"id": req.conversation}
    return body


def error_object(result: TurnResult | None, message: str | None = None) -> dict[str, Any]:
    return {
        "code": (result.error_code if result is not None else None) or "agent_error",
        "message": message or (result.error if result is not None else None) or "Agent run failed.",
    }


def store_record(
    store: Any,
    req: ResponsesRequest,
    chain: Chain,
    rid: str,
    response: dict[str, Any],
    transcript: list[dict[str, Any]],
) -> None:
    """Persist one snapshot (no-op with store off) and advance the conversation name."""
    if not req.store:
        return
    store.put(
        rid,
        {
            "response": response,
            "conversation_history": chain.history + transcript,
            "instructions": chain.instructions,
            "session_id": chain.session_id,
        },
    )
    if req.conversation is not None:
        store.set_conversation(req.conversation, rid)


# ---- handlers -------------------------------------------------------------------------------


async def create_response(request: web.Request) -> web.StreamResponse:
    app = request.app
    settings = app[SETTINGS]
    session_key = session_key_header(request)
    body = await read_json_object(request)
    req = parse_responses_body(body, settings.server_model_name)
    idem_key = validate_key(request.headers.get("Idempotency-Key"))  # checked even where unused
    if req.stream:
        idem_key = None  # streams are never cached
    chain = resolve_chain(req, app[RESPONSES])
    agent = app[AGENT]
    turn_request = TurnRequest(
        input=req.input,
        session_id=chain.session_id,
        history=chain.history,
        system_prompt=layered_system_prompt(agent, system_text(req, chain)),
        source="api_server",
        approve=None,
        yolo=settings.yolo,
    )
    headers = {"X-Hermes-Session-Id": chain.session_id}
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key
    if req.stream:
        from hermes.server.handlers.responses_stream import stream_response

        return await stream_response(request, req, chain, turn_request, headers)

    async def compute() -> tuple[int, dict[str, Any], dict[str, str]]:
        return await _complete(request, req, chain, turn_request, headers, watch=idem_key is None)

    if idem_key is None:
        status, data, out_headers = await compute()
    else:
        fp = fingerprint(body, IDEMPOTENCY_FIELDS, session_key=session_key)
        status, data, out_headers = await app[IDEMPOTENCY].get_or_set(f"responses\0{idem_key}", fp, compute)
    return json_response(data, status=status, headers=out_headers)


async def _complete(
    request: web.Request,
    req: ResponsesRequest,
    chain: Chain,
    turn_request: TurnRequest,
    headers: dict[str, str],
    *,
    watch: bool,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    app = request.app
    rid, created_at = response_id(), int(time.time())
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
    status = response_status(result)
    error = error_object(result) if status == "failed" else None
    response = envelope(
        rid, created_at, req, chain, status=status, output=output_items(result) if result else [], result=result, error=error
    )
    transcript = list(result.messages) if result is not None else [{"role": "user", "content": req.input}]
    store_record(app[RESPONSES], req, chain, rid, response, transcript)
    out_headers = {**headers, **outcome.headers()}
    if outcome.hard_failure:
        failure = AgentIncomplete(
            outcome.error or "Agent run did not produce a response.",
            extra={"hermes": outcome.hermes, "response_id": rid},
        )
        return failure.status, failure.body(), out_headers
    return 200, response, out_headers


async def get_response(request: web.Request) -> web.Response:
    rid = request.match_info["response_id"]
    record = request.app[RESPONSES].get(rid)
    if record is None or not isinstance(record.get("response"), dict):
        raise NotFound(f"Response not found: {rid[:256]}", code="response_not_found", param="response_id")
    return json_response(record["response"])


async def delete_response(request: web.Request) -> web.Response:
    rid = request.match_info["response_id"]
    if not request.app[RESPONSES].delete(rid):
        raise NotFound(f"Response not found: {rid[:256]}", code="response_not_found", param="response_id")
    return json_response({"id": rid, "object": "response", "deleted": True})


ROUTES = [
    web.post("/v1/responses", create_response),
    web.get("/v1/responses/{response_id}", get_response, allow_head=False),
    web.delete("/v1/responses/{response_id}", delete_response),
]

_CONTENT = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "ResponseRequest": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "model": {"type": "string"},
            "input": {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "anyOf": [
                                {"type": "string"},
                                {
                                    "type": "object",
                                    "properties": {
                                        "type": {"type": "string", "enum": ["message"]},
                                        "role": {"type": "string", "enum": ["user", "assistant", "system", "developer"]},
                                        "content": _CONTENT,
                                    },
                                    "required": ["content"],
                                },
                            ]
                        },
                    },
                ]
            },
            "instructions": {"type": "string"},
            "previous_response_id": {"type": "string"},
            "conversation": {"type": "string"},
            "conversation_history": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["role", "content"],
                    "properties": {"role": {"type": "string", "enum": ["user", "assistant"]}, "content": _CONTENT},
                },
            },
            "store": {"type": "boolean"},
            "stream": {"type": "boolean"},
            "truncation": {"type": "string", "enum": ["auto", "disabled"]},
            "metadata": {"type": "object"},
        },
    },
    "Response": {
        "type": "object",
        "required": ["id", "object", "status", "output"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "response"},
            "status": {"type": "string"},
            "output": {"type": "array", "items": {"type": "object"}},
        },
    },
}

_ID_PARAM = {"name": "response_id", "in": "path", "required": True, "schema": {"type": "string"}}

OPENAPI_PATHS: dict[str, Any] = {
    "/v1/responses": {
        "post": {
            "operationId": "createResponse",
            "summary": "One agent turn, OpenAI Responses shape (JSON, or SSE with stream: true)",
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ResponseRequest"}}},
            },
            "responses": {
                "200": {
                    "description": "A response object (or an SSE stream of response.* events)",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Response"}},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                "400": {"$ref": "#/components/responses/BadRequest"},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "403": {"$ref": "#/components/responses/Forbidden"},
                "404": {"$ref": "#/components/responses/NotFound"},
                "413": {"$ref": "#/components/responses/PayloadTooLarge"},
                "429": {"$ref": "#/components/responses/RateLimited"},
                "502": {"description": "The agent produced no usable answer (agent_incomplete)"},
            },
        }
    },
    "/v1/responses/{response_id}": {
        "get": {
            "operationId": "getResponse",
            "summary": "A stored response",
            "parameters": [_ID_PARAM],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Response"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "404": {"$ref": "#/components/responses/NotFound"},
            },
        },
        "delete": {
            "operationId": "deleteResponse",
            "summary": "Delete a stored response (and conversation names pointing at it)",
            "parameters": [_ID_PARAM],
            "responses": {
                "200": {"description": "Deleted", "content": {"application/json": {"schema": {"type": "object"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "404": {"$ref": "#/components/responses/NotFound"},
            },
        },
    },
}
