"""A scripted upstream that picks each reply from the request itself (for real applications).

The queue of `ScriptedUpstream` suits tests that know every request in advance. Real
applications send requests of their own (Open WebUI's title and tag tasks, retries of a
client library), so `test_extra_clients.py` and the scripts in `tests/clients/matrix` and
`tests/clients/openwebui` answer by *route* instead: `RoutedUpstream(route)` calls
`route(body)` for every chat completions request and plays the `Reply` it returns. The
rest (recording, SSE framing, JSON folding) is `ScriptedUpstream`'s own.

Invariant: a route is a pure function of the request body, so the answer to a request does
not depend on how many other requests (a client's own retries, background tasks) came
before it. Helpers below read the parts a route needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes.testing.upstream import Reply, ScriptedUpstream

Route = Callable[[dict[str, Any]], Reply]


class RoutedUpstream(ScriptedUpstream):
    """`ScriptedUpstream` whose reply is `route(body)` for each request."""

    def __init__(self, route: Route, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.route = route

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = {}
        # No await between here and the base class popping the queue (the body is cached),
        # so concurrent requests each get their own reply.
        self.replies.clear()
        self.replies.append(self.route(body))
        return await super()._chat(request)


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return text_of(message)
    return ""


def after_tool(body: dict[str, Any]) -> str | None:
    """The content of the last message when it is a tool result, else None."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return text_of(messages[-1])
    return None


def offered_tools(body: dict[str, Any]) -> list[str]:
    """Names of the function tools the request offers the model."""
    out = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out.append(str(fn["name"]))
    return out


def all_text(body: dict[str, Any]) -> str:
    return "\n".join(text_of(m) for m in body.get("messages") or [])
