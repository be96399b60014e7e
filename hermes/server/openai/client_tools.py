"""The client's own function tools on the OpenAI endpoints: request side and answer side.

Request side: `chat_client_tools` / `responses_client_tools` read `tools`, `tool_choice`
and `parallel_tool_calls` into `ClientTools` (hermes/agent/client_tools.py), which the turn
offers to the model beside hermes' own tools. Non-function tool types (Responses
built-ins, Open WebUI's extras) are ignored. `server_results_dropped` removes a
continuation's results for calls hermes ran itself.

Answer side: `chat_tool_calls` (the assistant message's ``tool_calls``) and
`function_call_items` (Responses ``function_call`` items) render a turn that ended
waiting for the client (`TurnResult.client_calls`).

Invariants:
- A client tool named like one of hermes' tools is a 400 ``invalid_request_error``
  naming it (``param: "tools"``); so is a name given twice.
- A named `tool_choice` must name one of the client's function tools (400 on
  ``param: "tool_choice"``); `required` without client tools is `auto` (hermes' own tools
  are not the client's to force).
- A result for a call hermes ran (a call of one of its own tools in the history) is
  accepted and ignored: the server already recorded that call's result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hermes.agent.client_tools import (
    ClientToolCall,
    ClientToolResult,
    ClientTools,
    NamedChoice,
    ToolChoice,
    call_names,
)
from hermes.messages import ChatMessage
from hermes.server.http.errors import RequestValidationError

MAX_TOOL_NAME = 64


def chat_client_tools(body: dict[str, Any], hermes_names: Iterable[str]) -> ClientTools | None:
    """The client tools of a chat completions body (`tools[].function{name,description,parameters}`)."""
    schemas: list[dict[str, Any]] = []
    for index, tool in _function_tools(body):
        function = tool.get("function")
        if not isinstance(function, dict):
            raise _invalid("A function tool needs a 'function' object", f"tools[{index}].function")
        schemas.append(_schema(function, f"tools[{index}].function"))
    return _client_tools(body, schemas, hermes_names, _chat_named)


def responses_client_tools(body: dict[str, Any], hermes_names: Iterable[str]) -> ClientTools | None:
    """The client tools of a Responses body (`tools[]` with `type: "function"`, flat)."""
    schemas = [_schema(tool, f"tools[{index}]") for index, tool in _function_tools(body)]
    return _client_tools(body, schemas, hermes_names, _responses_named)


def continuation_results(
    results: tuple[ClientToolResult, ...], history: list[ChatMessage], hermes_names: Iterable[str], *, param: str
) -> tuple[ClientToolResult, ...]:
    """The results a continuation passes on: those answering calls of the client's tools.

    A result for a call of one of hermes' own tools is ignored (hermes ran it and recorded
    its result); one answering no call of `history` is dropped, and when every result is
    of that kind the request has nothing to continue: 400 ``no_user_message``.
    """
    names = call_names(history)
    if not any(result.call_id in names for result in results):
        raise RequestValidationError(
            "The tool results answer no tool call of this conversation; end the input with a user message",
            code="no_user_message",
            param=param,
        )
    own = frozenset(hermes_names)
    return tuple(r for r in results if r.call_id in names and names[r.call_id] not in own)


def continued_history(
    body_history: list[ChatMessage], stored: list[ChatMessage], results: tuple[ClientToolResult, ...]
) -> list[ChatMessage]:
    """The history a chat continuation goes on from.

    A chat client never sees hermes' own calls, so the assistant message it resends
    carries only its calls. When the session's stored transcript ends with the assistant
    message that made the calls `results` answer, the stored transcript is the history
    (hermes' calls and results included); otherwise the body's.
    """
    wanted = {result.call_id for result in results}
    for message in reversed(stored):
        if message.get("role") == "assistant":
            made = {str(call.get("id", "")) for call in message.get("tool_calls") or ()}
            return stored if wanted and wanted <= made else body_history
    return body_history


def chat_tool_calls(calls: tuple[ClientToolCall, ...]) -> list[dict[str, Any]]:
    """The assistant message's `tool_calls` for the client's calls."""
    return [
        {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in calls
    ]


def function_call_item(call: ClientToolCall, *, item_id: str, status: str = "completed") -> dict[str, Any]:
    """A Responses `function_call` item for one of the client's calls."""
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "name": call.name,
        "call_id": call.call_id,
        "arguments": call.arguments,
    }


def message_tool_calls(raw: Any, param: str) -> list[dict[str, Any]]:
    """An assistant message's `tool_calls` as the client sent them, checked and normalised."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _invalid("'tool_calls' must be an array", param)
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(function, dict):
            raise _invalid("A tool call needs a string 'id' and a 'function' object", f"{param}[{index}]")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str):
            raise _invalid("A tool call's function needs a string 'name'", f"{param}[{index}].function.name")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        calls.append({"id": call["id"], "type": "function", "function": {"name": name, "arguments": arguments}})
    return calls


def trailing_results(messages: list[ChatMessage]) -> tuple[list[ChatMessage], tuple[ClientToolResult, ...]]:
    """(the messages before, the results) when `messages` end with tool results; else (messages, ())."""
    end = len(messages)
    while end > 0 and messages[end - 1].get("role") == "tool":
        end -= 1
    results = tuple(
        ClientToolResult(str(m.get("tool_call_id", "")), _text(m.get("content")), m.get("name")) for m in messages[end:]
    )
    return messages[:end], results


# ---- internals ------------------------------------------------------------------------------


def _function_tools(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _invalid("'tools' must be an array", "tools")
    return [(i, t) for i, t in enumerate(tools) if isinstance(t, dict) and t.get("type", "function") == "function"]


def _schema(spec: dict[str, Any], param: str) -> dict[str, Any]:
    name = spec.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_TOOL_NAME:
        raise _invalid(f"A function tool needs a 'name' of 1 to {MAX_TOOL_NAME} characters", f"{param}.name")
    function: dict[str, Any] = {"name": name}
    description = spec.get("description")
    if isinstance(description, str):
        function["description"] = description
    parameters = spec.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise _invalid("A function tool's 'parameters' must be an object", f"{param}.parameters")
    function["parameters"] = parameters if parameters is not None else {"type": "object", "properties": {}}
    if isinstance(spec.get("strict"), bool):
        function["strict"] = spec["strict"]
    return {"type": "function", "function": function}


def _chat_named(choice: dict[str, Any]) -> str | None:
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


def _responses_named(choice: dict[str, Any]) -> str | None:
    name = choice.get("name")
    if not isinstance(name, str):
        return _chat_named(choice)  # some clients send the chat form to /v1/responses
    return name


def _client_tools(
    body: dict[str, Any], schemas: list[dict[str, Any]], hermes_names: Iterable[str], named: Any
) -> ClientTools | None:
    own = frozenset(hermes_names)
    seen: set[str] = set()
    for schema in schemas:
        name = schema["function"]["name"]
        if name in own:
            raise RequestValidationError(
                f"The tool name {name!r} is taken by one of hermes' own tools; rename the tool",
                code="tool_name_conflict",
                param="tools",
            )
        if name in seen:
            raise _invalid(f"The tool name {name!r} is given twice", "tools")
        seen.add(name)
    choice = _choice(body.get("tool_choice"), seen, named)
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise _invalid("'parallel_tool_calls' must be a boolean", "parallel_tool_calls")
    if not schemas and choice == "auto" and parallel is None:
        return None
    return ClientTools(tuple(schemas), choice, parallel)


def _choice(value: Any, names: set[str], named: Any) -> ToolChoice:
    if value is None or value == "auto":
        return "auto"
    if value == "none":
        return "none"
    if value == "required":
        return "required" if names else "auto"
    if isinstance(value, dict) and value.get("type") == "function":
        name = named(value)
        if name is None or name not in names:
            raise _invalid(f"tool_choice names a function that is not in 'tools': {str(name)[:64]!r}", "tool_choice")
        return NamedChoice(name)
    if isinstance(value, dict):
        return "auto"  # a built-in tool type (file_search, …): hermes has none of those
    raise _invalid("'tool_choice' must be none, auto, required or a function", "tool_choice")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def _invalid(message: str, param: str) -> RequestValidationError:
    return RequestValidationError(message, code="invalid_tools", param=param)
