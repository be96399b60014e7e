"""A canned `/v1/responses` server for probing how client libraries treat a tool that the
*server* already ran (issue 9, point 2). Not part of the test suite.

    python responses_stub.py            # prints "stub: listening on http://127.0.0.1:PORT"

The request's `model` picks the representation (`VARIANTS`); `stream` picks JSON or SSE.
Every turn's output is: a preamble message, the variant's tool items, the final message.
A second request in the same probe (the client looping back to "answer" a tool call) is
answered with a plain message `LOOPED`, so the client stops. `GET /_requests` returns the
bodies received since the last `POST /_reset`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from aiohttp import web

PREAMBLE = "Let me run that."
ANSWER = "The command printed hi."
TOOL_ARGS = json.dumps({"command": "echo hi"})
TOOL_OUTPUT = "hi"


def message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def tool_items(variant: str) -> list[dict[str, Any]]:
    if variant == "message_only":
        return []
    if variant in ("mcp_call", "mcp_call_minimal"):
        return [{
            "id": "mcp_1", "type": "mcp_call", "server_label": "hermes", "name": "terminal",
            "arguments": TOOL_ARGS, "output": TOOL_OUTPUT, "error": None, "status": "completed",
        }]
    if variant == "mcp_call_error":
        return [{
            "id": "mcp_1", "type": "mcp_call", "server_label": "hermes", "name": "terminal",
            "arguments": TOOL_ARGS, "output": None, "status": "failed",
            "error": {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "tool failed"}]},
        }]
    if variant == "code_interpreter_call":
        return [{
            "id": "ci_1", "type": "code_interpreter_call", "status": "completed", "container_id": "hermes",
            "code": "echo hi", "outputs": [{"type": "logs", "logs": TOOL_OUTPUT}],
        }]
    if variant == "web_search_call":
        return [{
            "id": "ws_1", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": "echo hi"},
        }]
    if variant == "function_call":
        return [
            {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "terminal",
             "arguments": TOOL_ARGS, "status": "completed"},
            {"id": "fco_1", "type": "function_call_output", "call_id": "call_1", "output": TOOL_OUTPUT,
             "status": "completed"},
        ]
    raise KeyError(variant)


VARIANTS = ("message_only", "mcp_call", "mcp_call_minimal", "mcp_call_error", "code_interpreter_call",
            "web_search_call", "function_call")
MINIMAL_SSE = {"mcp_call_minimal"}
"""Variants whose tool items get only output_item.added/done in SSE (no item-specific events)."""


def output_for(variant: str, looped: bool) -> list[dict[str, Any]]:
    if looped:
        return [message("msg_loop", "LOOPED")]
    return [message("msg_pre", PREAMBLE), *tool_items(variant), message("msg_ans", ANSWER)]


def envelope(resp_id: str, model: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": resp_id, "object": "response", "created_at": int(time.time()), "status": status,
        "model": model, "output": output if status == "completed" else [],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": 1.0, "top_p": 1.0,
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
        "previous_response_id": None, "text": {"format": {"type": "text"}}, "truncation": "disabled",
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
        if status == "completed" else None,
    }


def item_events(index: int, item: dict[str, Any], minimal: bool = False) -> list[dict[str, Any]]:
    """The SSE events OpenAI sends for one output item, in order (`minimal`: only added/done
    for non-message items)."""
    kind = item["type"]
    started = dict(item, status="in_progress")
    if kind == "message":
        started["content"] = []
    if kind == "mcp_call":
        started.update(arguments="", output=None)
    if kind == "function_call":
        started["arguments"] = ""
    if kind == "code_interpreter_call":
        started.update(code="", outputs=None)
    if kind == "function_call_output":
        started = dict(item)
    ev: list[dict[str, Any]] = [{"type": "response.output_item.added", "output_index": index, "item": started}]
    base = {"output_index": index, "item_id": item["id"]}
    if minimal and kind != "message":
        pass
    elif kind == "message":
        text = item["content"][0]["text"]
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        ev += [
            {"type": "response.content_part.added", **base, "content_index": 0, "part": empty},
            {"type": "response.output_text.delta", **base, "content_index": 0, "delta": text, "logprobs": []},
            {"type": "response.output_text.done", **base, "content_index": 0, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **base, "content_index": 0, "part": item["content"][0]},
        ]
    elif kind == "mcp_call":
        ev += [
            {"type": "response.mcp_call.in_progress", **base},
            {"type": "response.mcp_call_arguments.delta", **base, "delta": item["arguments"]},
            {"type": "response.mcp_call_arguments.done", **base, "arguments": item["arguments"]},
            {"type": "response.mcp_call.completed", **base},
        ]
    elif kind == "function_call":
        ev += [
            {"type": "response.function_call_arguments.delta", **base, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **base, "name": item["name"],
             "arguments": item["arguments"]},
        ]
    elif kind == "code_interpreter_call":
        ev += [
            {"type": "response.code_interpreter_call.in_progress", **base},
            {"type": "response.code_interpreter_call_code.delta", **base, "delta": item["code"]},
            {"type": "response.code_interpreter_call_code.done", **base, "code": item["code"]},
            {"type": "response.code_interpreter_call.interpreting", **base},
            {"type": "response.code_interpreter_call.completed", **base},
        ]
    elif kind == "web_search_call":
        ev += [
            {"type": "response.web_search_call.in_progress", **base},
            {"type": "response.web_search_call.searching", **base},
            {"type": "response.web_search_call.completed", **base},
        ]
    ev.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return ev


class Stub:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.count = 0

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        variant = str(body.get("model", "message_only"))
        if variant not in VARIANTS:
            error = {"message": f"unknown variant {variant}", "type": "invalid_request_error", "param": "model",
                     "code": None}
            return web.json_response({"error": error}, status=400)
        looped = len(self.requests) > 1 and not body.get("previous_response_id") and _has_tool_feedback(body)
        self.count += 1
        resp_id = f"resp_{self.count}"
        output = output_for(variant, looped)
        if not body.get("stream"):
            return web.json_response(envelope(resp_id, variant, output, "completed"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        started = envelope(resp_id, variant, output, "in_progress")
        events: list[dict[str, Any]] = [{"type": "response.created", "response": started},
                  {"type": "response.in_progress", "response": envelope(resp_id, variant, output, "in_progress")}]
        for i, item in enumerate(output):
            events += item_events(i, item, minimal=variant in MINIMAL_SSE)
        events.append({"type": "response.completed", "response": envelope(resp_id, variant, output, "completed")})
        for seq, event in enumerate(events):
            event["sequence_number"] = seq
            await resp.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await resp.write_eof()
        return resp

    async def get_requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.requests)

    async def reset(self, request: web.Request) -> web.Response:
        self.requests.clear()
        return web.json_response({"ok": True})


def _has_tool_feedback(body: dict[str, Any]) -> bool:
    """True when the client sends back a tool result / tool item (it believes it must answer)."""
    items = body.get("input")
    if not isinstance(items, list):
        return False
    return any(isinstance(i, dict) and i.get("type") in {"function_call_output", "function_call", "mcp_call",
                                                         "code_interpreter_call", "web_search_call",
                                                         "item_reference"} for i in items)


async def serve() -> None:
    stub = Stub()
    app = web.Application()
    app.router.add_post("/v1/responses", stub.responses)
    app.router.add_get("/_requests", stub.get_requests)
    app.router.add_post("/_reset", stub.reset)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"stub: listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve())
