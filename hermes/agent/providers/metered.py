"""Counting the tokens of a stream as they come: progress for status lines.

`MeteredProvider(inner)` passes every event of `inner` through and adds `ProgressChunk`s:
one `reading` when the request is sent, then `generating` with the token count and
rate at most every `interval` seconds (and once at the first token). It counts each
text or reasoning chunk as one token, which is what llama.cpp's server streams; it
sits under wrappers that hide text (the JSON-action protocol), so a tool call being
written still shows as generation. `complete` is passed through unmetered.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

from hermes.agent.provider import ModelRequest, ProgressChunk, Provider, ProviderEvent, ReasoningChunk, TextChunk
from hermes.agent.providers.json_actions import closing_stream

PROGRESS_INTERVAL = 0.5
"""Seconds between two `generating` updates."""


class MeteredProvider(Provider):
    name: ClassVar[str] = "metered"

    def __init__(
        self, inner: Provider, *, interval: float = PROGRESS_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.inner = inner
        self.interval = interval
        self.clock = clock

    def describe(self) -> str:
        return self.inner.describe()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield ProgressChunk("reading")
        tokens = 0
        first = last = 0.0
        async with closing_stream(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, (TextChunk, ReasoningChunk)):
                    now = self.clock()
                    tokens += 1
                    if tokens == 1:
                        first = last = now
                        yield ProgressChunk("generating", tokens, None)
                    elif now - last >= self.interval:
                        last = now
                        # The first token ends the prompt reading: the rate counts from it.
                        yield ProgressChunk("generating", tokens, (tokens - 1) / max(now - first, 1e-9))
                yield event

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
