"""Server-run tools as Responses output items, in the form the client accepts as already executed.

A tool that hermes ran on the server must never reach a client as a call for it to make
(docs/api-decisions.md, "Real clients"; the measurements are in tests/clients/FINDINGS.md):

- SDK clients (hermes/server/http/request.py `is_sdk_client`: the `X-Stainless-Lang` header,
  or `ai-sdk/`, `litellm/`, `codex_…/` in the User-Agent) get one
  ``mcp_call`` item per tool: ``server_label: "hermes"``, ``name``, ``arguments`` (JSON
  string), ``output`` (the tool result), ``status: completed``; a tool that failed is
  ``status: failed`` with ``output: null`` and ``error: {"type": "mcp_tool_execution_error",
  "content": [{"type": "text", "text": …}]}``. Every SDK client measured (openai Python/Node,
  openai-agents, the AI SDK, pydantic-ai, langchain-openai) takes it as executed.
- Everyone else (Open WebUI, which draws tool cards only for these; curl; scripts following
  the reference server) gets ``function_call`` + ``function_call_output`` items. An SDK client opts into
  this form with ``X-Hermes-Tool-Progress: true``.

``function_call_output.output`` is the raw string in JSON responses and a list of
``input_text`` parts in SSE (tests/server/test_api_responses.py pins both).
"""

from __future__ import annotations

import json
from typing import Any

from hermes.ids import new_item_id
from hermes.server.http.request import ToolItemForm

SERVER_LABEL = "hermes"


def arguments_json(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def call_item(form: ToolItemForm, *, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    """The item for a tool call (for `mcp_call`: without its output yet)."""
    if form == "mcp_call":
        return {
            "id": new_item_id("mcp_"),
            "type": "mcp_call",
            "status": status,
            "server_label": SERVER_LABEL,
            "name": name,
            "arguments": arguments,
            "output": None,
            "error": None,
        }
    return {
        "id": new_item_id("fc_"),
        "type": "function_call",
        "status": status,
        "name": name,
        "call_id": call_id,
        "arguments": arguments,
    }


def finish_mcp_call(item: dict[str, Any], output: str, *, is_error: bool) -> None:
    """Fill an `mcp_call` item with the tool's result (in place)."""
    if is_error:
        item.update(
            status="failed",
            output=None,
            error={"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": output}]},
        )
    else:
        item.update(status="completed", output=output, error=None)


def function_call_output_item(call_id: str, output: str, *, streamed: bool) -> dict[str, Any]:
    return {
        "id": new_item_id("fco_"),
        "type": "function_call_output",
        "call_id": call_id,
        "output": [{"type": "input_text", "text": output}] if streamed else output,
        "status": "completed",
    }
