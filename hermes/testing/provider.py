"""ScriptedProvider: the scripted upstream's replies played in-process, without HTTP.

For tests that exercise a front end or the engine's logic and don't need the real
`openai` SDK on the wire (those use `ScriptedUpstream`). It plays the same `Reply`
scripts, so a test can switch between the two without rewriting its script:

    provider = ScriptedProvider()
    provider.enqueue(text_reply("hi"), tool_reply([call("echo", {"text": "x"})]))
    agent = Agent(provider, store=store, model="scripted")
    ...
    provider.assert_complete()

`register_scripted(provider)` makes it selectable as `provider = "scripted"` in Settings.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    register_provider,
    unregister_provider,
)
from hermes.agent.types import Usage
from hermes.errors import ProviderAuthError, ProviderConnectionError, ProviderError, ProviderRateLimited
from hermes.testing.upstream import Chunk, Drop, Raw, Reply, Sleep, Stall


class ScriptedProvider(Provider):
    name: ClassVar[str] = "scripted"

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.default: Reply | None = None
        self.requests: list[ModelRequest] = []

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def assert_complete(self) -> None:
        if self.replies:
            raise AssertionError(f"{len(self.replies)} scripted replies were never requested")

    def _next(self, request: ModelRequest) -> Reply:
        self.requests.append(request)
        reply = self.replies.popleft() if self.replies else self.default
        if reply is None:
            raise ProviderError("scripted provider: no reply queued")
        if reply.status != 200:
            raise _error_for(reply)
        return reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        reply = self._next(request)
        for step in reply.steps:
            if isinstance(step, Chunk):
                if reply.chunk_delay:
                    await asyncio.sleep(reply.chunk_delay)
                for event in _events_of(step):
                    yield event
            elif isinstance(step, (Sleep, Stall)):
                await asyncio.sleep(step.seconds)
                if isinstance(step, Stall):
                    return
            elif isinstance(step, Drop):
                raise ProviderConnectionError("scripted connection drop", retryable=True)
            elif isinstance(step, Raw):
                raise ProviderError("scripted provider cannot play raw bytes")

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        return [event async for event in self.stream(request)]


def _events_of(chunk: Chunk) -> list[ProviderEvent]:
    if chunk.usage is not None:
        u = chunk.usage
        cached = int((u.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
        return [UsageChunk(Usage(u["prompt_tokens"], u["completion_tokens"], u["total_tokens"], cached))]
    events: list[ProviderEvent] = []
    delta: dict[str, Any] = chunk.delta or {}
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if reasoning:
        events.append(ReasoningChunk(reasoning))
    if delta.get("content"):
        events.append(TextChunk(delta["content"]))
    for tc in delta.get("tool_calls") or ():
        fn = tc.get("function") or {}
        events.append(
            ToolCallChunk(
                index=tc["index"], id=tc.get("id"), name=fn.get("name") or None, arguments=fn.get("arguments") or ""
            )
        )
    if chunk.finish_reason:
        events.append(FinishChunk(chunk.finish_reason))
    return events


def _error_for(reply: Reply) -> ProviderError:
    message = ((reply.error or {}).get("error") or {}).get("message", "scripted error")
    retry_after = float(reply.headers["Retry-After"]) if "Retry-After" in reply.headers else None
    if reply.status in (401, 403):
        return ProviderAuthError(f"authentication failed ({reply.status}): {message}", status=reply.status)
    if reply.status == 429:
        return ProviderRateLimited(message, status=429, retryable=True, retry_after=retry_after)
    return ProviderError(message, status=reply.status, retryable=reply.status >= 500, retry_after=retry_after)


def register_scripted(provider: ScriptedProvider) -> None:
    """Make `provider` what Settings(provider="scripted") builds."""
    register_provider(ScriptedProvider.name, lambda settings: provider)


def unregister_scripted() -> None:
    unregister_provider(ScriptedProvider.name)
