"""The Responses API's objects: the parsed request, the chain it continues, the response.

Input mapping (one item onto one transcript message, see `_Transcript`): a string is a
user message; message items keep their role (``system``/``developer`` ones join the
instructions); ``function_call`` and ``mcp_call`` items join the assistant message before
them as tool calls; ``function_call_output`` (and an ``mcp_call``'s own output or error)
becomes the ``tool`` message; ``reasoning`` is dropped; ``item_reference`` is resolved from
the response store (any stored output item id; unknown → 400). The transcript must end
with a user message, the turn's input (else 400 ``invalid_request_error``); the rest is
history.

Output format: ``text.format`` (`hermes.server.openai.output_formats`; malformed → 400) is
the turn's, sent on every model call, and echoed as ``text`` in every response object
(``{"format": {"type": "text"}}`` without one). It is the request's own, never inherited.
So are ``tools``, ``tool_choice`` and ``parallel_tool_calls``: every response object
echoes the request's (``[]``, ``"auto"``, ``true`` when it omitted them).

Chaining: ``previous_response_id`` (unknown → 404) or a ``conversation`` name (unknown →
a new conversation; both at once → 400) loads the stored transcript, session id and
instructions (inherited when the request has none). An explicit ``conversation_history``
replaces the stored transcript. ``truncation: "auto"`` keeps the last 100 history
messages. Stored record (when ``store`` is on, the default):
``{"response", "conversation_history": prior + this turn's transcript, "instructions",
"session_id"}`` — the transcript is stored once, never re-appended.

The output lists only the current turn's items: a ``message`` per text segment (each one
that tool calls closed ends with the blank-line separator, `hermes.runs.wire`) and the server-run tools in the
client's form (`hermes.server.openai.tool_items`: ``mcp_call`` for SDK clients, ``function_call``
+ ``function_call_output`` otherwise). Used by the JSON handler (openai/responses.py) and the SSE one
(openai/responses_stream.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.client_tools import ClientToolResult
from hermes.agent.output_format import OutputFormat, text_format_body
from hermes.agent.types import TurnResult
from hermes.error_codes import SERVER_SHUTDOWN
from hermes.ids import new_item_id, new_response_id, new_session_id
from hermes.runs.utility import flatten_text
from hermes.runs.wire import answer_segments, usage_json
from hermes.server.http.errors import NotFound, RequestValidationError
from hermes.server.http.request import (
    ToolItemForm,
    coerce_bool,
    has_visible_payload,
    normalize_content,
    optional_str,
)
from hermes.server.http.schema import (
    CONTENT_PARTS_DOC,
    SINGLE_LINE_PATTERN,
    Anything,
    Array,
    Body,
    Boolean,
    Object,
    String,
    not_both,
)
from hermes.server.openai.client_tools import function_call_item, trailing_results
from hermes.server.openai.output_formats import TEXT_DOC, responses_output_format
from hermes.server.openai.tool_items import (
    arguments_json,
    call_item,
    finish_mcp_call,
    function_call_output_item,
)
from hermes.store.api import AsyncResponseStore

AUTO_TRUNCATION_LIMIT = 100
MAX_NAME_LENGTH = 256


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
    output_format: OutputFormat | None = None
    """`text.format` (`hermes.server.openai.output_formats`); echoed in the response object."""
    tool_results: tuple[ClientToolResult, ...] | None = None
    """A continuation: the input ends with these `function_call_output`s (then `input` is
    unused and `input_history` is everything before them)."""
    tools: list[Any] = field(default_factory=list)
    """The request's `tools`, echoed in the response object ([] when omitted)."""
    tool_choice: Any = "auto"
    """The request's `tool_choice`, echoed ("auto" when omitted)."""
    parallel_tool_calls: bool = True
    """The request's `parallel_tool_calls`, echoed (true when omitted)."""


ItemLookup = Callable[[str], "dict[str, Any] | None"]
"""A stored output item by its id (`ResponseStore.find_item`), for ``item_reference``."""

INPUT_ROLES = ("user", "assistant", "system", "developer")


class _Transcript:
    """Builds the chat transcript from Responses input items, one item onto one message.

    A tool call (``function_call`` or ``mcp_call``) joins the assistant message right before
    it, so text, calls and results read as the engine writes them (never two assistant
    messages in a row for one answer); an ``mcp_call`` also brings its result as the
    ``tool`` message. ``system``/``developer`` messages go to the instructions.
    """

    def __init__(self, lookup: ItemLookup | None) -> None:
        self.messages: list[dict[str, Any]] = []
        self.system: list[str] = []
        self._lookup = lookup
        self._names: dict[str, str] = {}

    def add(self, item: Any, param: str, *, referenced: bool = False) -> None:
        if isinstance(item, str):
            self.messages.append({"role": "user", "content": normalize_content(item, param)})
            return
        if not isinstance(item, dict):
            raise RequestValidationError(
                "Input items must be strings or objects.", code="invalid_input_item", param=param
            )
        kind = item.get("type", "message")
        if kind is None:
            kind = "message"
        elif not isinstance(kind, str):
            raise RequestValidationError(
                "Input item 'type' must be a string.", code="invalid_input_item", param=f"{param}.type"
            )
        match kind:
            case "message":
                self._message(item, param)
            case "function_call":
                self._call(_str_field(item, "call_id", param), _str_field(item, "name", param),
                           arguments_json(item.get("arguments")))
            case "function_call_output":
                call_id = _str_field(item, "call_id", param)
                self._tool_result(call_id, _output_text(item.get("output"), f"{param}.output"))
            case "mcp_call":
                call_id = _str_field(item, "id", param)
                self._call(call_id, _str_field(item, "name", param), arguments_json(item.get("arguments")))
                self._tool_result(call_id, _mcp_output(item))
            case "reasoning":
                pass  # the model's reasoning is not replayed
            case "item_reference" if not referenced:
                self._reference(item, param)
            case _:
                raise RequestValidationError(
                    f"Unsupported input item type {str(kind)[:64]!r}.",
                    code="unsupported_input_item",
                    param=f"{param}.type",
                )

    def _message(self, item: dict[str, Any], param: str) -> None:
        role = item.get("role", "user")
        if not isinstance(role, str) or role not in INPUT_ROLES:
            raise RequestValidationError(
                "Input message role must be user, assistant, system or developer.",
                code="invalid_role",
                param=f"{param}.role",
            )
        content = normalize_content(item.get("content"), f"{param}.content")
        if role in ("system", "developer"):
            self.system.append(flatten_text(content))
            return
        self.messages.append({"role": role, "content": content})

    def _call(self, call_id: str, name: str, arguments: str) -> None:
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        self._names[call_id] = name
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
            if last.get("content") == "":
                last["content"] = None
            return
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})

    def _tool_result(self, call_id: str, output: str) -> None:
        message = {"role": "tool", "tool_call_id": call_id, "content": output}
        if call_id in self._names:
            message["name"] = self._names[call_id]
        self.messages.append(message)

    def _reference(self, item: dict[str, Any], param: str) -> None:
        ref = item.get("id")
        if not isinstance(ref, str) or not ref:
            raise RequestValidationError("item_reference needs a string 'id'.", code="invalid_input_item",
                                         param=f"{param}.id")
        found = self._lookup(ref) if self._lookup is not None else None
        if found is None:
            raise RequestValidationError(
                f"Unknown item reference: {ref[:128]}", code="item_reference_not_found", param=f"{param}.id"
            )
        self.add(found, param, referenced=True)


def _str_field(item: dict[str, Any], name: str, param: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise RequestValidationError(
            f"Input item of type {item.get('type')!r} needs a string '{name}'.",
            code="invalid_input_item",
            param=f"{param}.{name}",
        )
    return value


def _output_text(value: Any, param: str) -> str:
    """A tool output sent back: a string, or a list of text parts (the SSE form)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return flatten_text(normalize_content(value, param))


def _mcp_output(item: dict[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    error = item.get("error")
    if isinstance(error, dict):
        parts = error.get("content")
        if isinstance(parts, list):
            return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
        return str(error.get("message", ""))
    return "" if error is None else str(error)


def _parse_input(value: Any, lookup: ItemLookup | None) -> tuple[list[dict[str, Any]], list[str]]:
    """(transcript messages, system texts) from the `input` field."""
    if value is None:
        raise RequestValidationError("Missing 'input' field", code="missing_input", param="input")
    if isinstance(value, str):
        return [{"role": "user", "content": normalize_content(value, "input")}], []
    if not isinstance(value, list):
        raise RequestValidationError("'input' must be a string or array", code="invalid_input", param="input")
    transcript = _Transcript(lookup)
    for index, item in enumerate(value):
        transcript.add(item, f"input[{index}]")
    return transcript.messages, transcript.system


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
                f"{param}.role must be 'user' or 'assistant'",
                code="invalid_conversation_history",
                param=f"{param}.role",
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


_NAME_DOC: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": MAX_NAME_LENGTH, "pattern": SINGLE_LINE_PATTERN
}
"""A response id or conversation name, as `_name` checks it."""
_CONTENT_DOC: dict[str, Any] = {"anyOf": [{"type": "string"}, CONTENT_PARTS_DOC]}
_INPUT_DOC: dict[str, Any] = {
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
                            "type": {
                                "type": "string",
                                "enum": [
                                    "message", "function_call", "function_call_output", "mcp_call",
                                    "reasoning", "item_reference",
                                ],
                            },
                            "role": {"type": "string", "enum": ["user", "assistant", "system", "developer"]},
                            "content": _CONTENT_DOC,
                            "id": {"type": "string"},
                            "call_id": {"type": "string"},
                            "name": {"type": "string"},
                            "arguments": {"type": "string"},
                            "output": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
                        },
                    },
                ]
            },
        },
    ]
}

RESPONSE_REQUEST = Body(
    "ResponseRequest",
    {
        "input": Anything(required=True, documented=_INPUT_DOC),
        "model": String(),
        "instructions": String(),
        "previous_response_id": Anything(documented=_NAME_DOC),
        "conversation": Anything(
            documented={
                "anyOf": [_NAME_DOC, {"type": "object", "properties": {"id": {"anyOf": [_NAME_DOC, {"type": "null"}]}}}]
            }
        ),
        "conversation_history": Array(
            items=Object(properties={"role": String(required=True, enum=("user", "assistant")),
                                     "content": Anything(required=True, nullable=True, documented=_CONTENT_DOC)}),
            error=("invalid_conversation_history", "'conversation_history' must be an array of message objects"),
        ),
        "store": Boolean(),
        "stream": Boolean(),
        "truncation": String(
            enum=("auto", "disabled"), value_error=("invalid_truncation", "'truncation' must be 'auto' or 'disabled'")
        ),
        "metadata": Object(),
        "text": Anything(documented=TEXT_DOC),
    },
    rules=(not_both("conversation", "previous_response_id"),),
)
"""`input` and the items of `conversation_history` are checked by `parse_responses_body`
(per-item params such as ``input[2].role``)."""


def parse_responses_body(
    body: dict[str, Any], advertised_model: str, lookup: ItemLookup | None = None
) -> ResponsesRequest:
    RESPONSE_REQUEST.validate(body)
    output_format = responses_output_format(body)
    messages, system = _parse_input(body.get("input"), lookup)
    before, results = trailing_results(messages)
    if results:  # a continuation: the client ran its tools
        messages = [*before, {"role": "user", "content": ""}]
    elif not messages or messages[-1]["role"] != "user" or not has_visible_payload(messages[-1]["content"]):
        raise RequestValidationError(
            "The input must end with a user message (the new turn) or with function_call_output items",
            code="no_user_message",
            param="input",
        )
    conversation_field = body.get("conversation")
    if isinstance(conversation_field, dict):  # OpenAI's {"id": "..."} form
        conversation_field = conversation_field.get("id")
        body = {**body, "conversation": conversation_field}
    previous = _name(body, "previous_response_id")
    conversation = _name(body, "conversation")
    if previous and conversation:
        raise RequestValidationError(
            "Cannot use both 'conversation' and 'previous_response_id'",
            code="conflicting_parameters",
            param="conversation",
        )
    truncation: str | None = body.get("truncation")
    metadata: dict[str, Any] | None = body.get("metadata")
    tools, tool_choice, parallel = body.get("tools"), body.get("tool_choice"), body.get("parallel_tool_calls")
    return ResponsesRequest(
        model=body.get("model") or advertised_model,
        stream=coerce_bool(body.get("stream"), False),
        store=coerce_bool(body.get("store"), True),
        input=messages[-1]["content"],
        input_history=messages[:-1],
        instructions=body.get("instructions"),
        previous_response_id=previous,
        conversation=conversation,
        conversation_history=_parse_history(body.get("conversation_history")),
        truncation=truncation,
        metadata=metadata,
        extra_instructions=system,
        output_format=output_format,
        tool_results=results or None,
        tools=list(tools) if isinstance(tools, list) else [],
        tool_choice=tool_choice if tool_choice is not None else "auto",
        parallel_tool_calls=parallel if isinstance(parallel, bool) else True,
    )


@dataclass
class Chain:
    """Everything a turn inherits from what came before it."""

    history: list[dict[str, Any]]
    session_id: str
    instructions: str | None
    previous_response_id: str | None


async def referenced_items(body: dict[str, Any], store: AsyncResponseStore) -> dict[str, dict[str, Any]]:
    """The stored output items the body's `item_reference` inputs name, by id (unknown
    ids are left out; `parse_responses_body` reports them)."""
    raw = body.get("input")
    if not isinstance(raw, list):
        return {}
    wanted = {
        item["id"] for item in raw
        if isinstance(item, dict) and item.get("type") == "item_reference" and isinstance(item.get("id"), str)
    }
    found: dict[str, dict[str, Any]] = {}
    for item_id in sorted(wanted):
        item = await store.find_item(item_id)
        if item is not None:
            found[item_id] = item
    return found


async def resolve_chain(req: ResponsesRequest, store: AsyncResponseStore) -> Chain:
    previous_id = req.previous_response_id
    if previous_id is None and req.conversation is not None:
        previous_id = await store.get_conversation(req.conversation)
    history: list[dict[str, Any]] = []
    session_id: str | None = None
    instructions = req.instructions
    if previous_id is not None:
        record = await store.get(previous_id)
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


def output_items(result: TurnResult, form: ToolItemForm) -> list[dict[str, Any]]:
    """The current turn's items, in transcript order (see `hermes.server.openai.tool_items` for the tools).

    Text segments become ``message`` items whose texts are `answer_segments` (those closed
    by tool calls end with the separator), so `output_text` equals the streamed deltas of the turn.
    """
    items: list[dict[str, Any]] = []
    if result.reasoning:
        items.append(
            {"id": new_id("rs_"), "type": "reasoning", "summary": [{"type": "summary_text", "text": result.reasoning}]}
        )
    segments = iter(answer_segments(result))
    produced = result.produced()
    tool_results = {m.get("tool_call_id"): m.get("content") for m in produced if m.get("role") == "tool"}
    theirs = {call.call_id: call for call in result.client_calls}
    for message in produced:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            text = message.get("content")
            if isinstance(text, str) and text:
                items.append(message_item(next(segments)))
            for call in message["tool_calls"]:
                client_call = theirs.get(str(call.get("id", "")))
                if client_call is not None:
                    items.append(function_call_item(client_call, item_id=new_id("fc_")))
                else:
                    items.append(_tool_call_item(form, call, tool_results))
        elif role == "tool" and form == "function_call":
            content = message.get("content")
            output = content if isinstance(content, str) else json.dumps(content)
            items.append(function_call_output_item(str(message.get("tool_call_id", "")), output, streamed=False))
    final = next(segments, None)
    if final is not None:
        items.append(message_item(final))
    elif not result.client_calls and not any(item["type"] == "message" for item in items):
        items.append(message_item(final_message_text(result)))
    return items


def _tool_call_item(form: ToolItemForm, call: dict[str, Any], tool_results: dict[Any, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    call_id = str(call.get("id", ""))
    item = call_item(
        form, call_id=call_id, name=str(fn.get("name", "")), arguments=arguments_json(fn.get("arguments")),
        status="completed",
    )
    if form == "mcp_call":
        output = tool_results.get(call_id)
        if output is None:
            item["status"] = "incomplete"
        else:
            finish_mcp_call(item, output if isinstance(output, str) else json.dumps(output), is_error=False)
    return item


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
        if result is not None and result.error_code == SERVER_SHUTDOWN:
            reason = SERVER_SHUTDOWN
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
        "parallel_tool_calls": req.parallel_tool_calls,
        "tool_choice": req.tool_choice,
        "tools": req.tools,
        "store": req.store,
        "truncation": req.truncation or "disabled",
        "text": {"format": text_format_body(req.output_format)},
        "usage": usage_json(result.usage) if result is not None else None,
    }
    if req.conversation is not None:
        body["conversation"] = {"id": req.conversation}
    return body


def error_object(result: TurnResult | None, message: str | None = None) -> dict[str, Any]:
    return {
        "code": (result.error_code if result is not None else None) or "agent_error",
        "message": message or (result.error if result is not None else None) or "Agent run failed.",
    }


async def store_record(
    store: AsyncResponseStore,
    req: ResponsesRequest,
    chain: Chain,
    rid: str,
    response: dict[str, Any],
    transcript: list[dict[str, Any]],
) -> None:
    """Persist one snapshot (no-op with store off) and advance the conversation name."""
    if not req.store:
        return
    await store.put(
        rid,
        {
            "response": response,
            "conversation_history": chain.history + transcript,
            "instructions": chain.instructions,
            "session_id": chain.session_id,
        },
    )
    if req.conversation is not None:
        await store.set_conversation(req.conversation, rid)
