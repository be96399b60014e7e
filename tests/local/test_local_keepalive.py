"""Requests to a real llama.cpp server after it closed an idle keep-alive connection.

llama.cpp's HTTP server drops a keep-alive connection a few seconds after a reply. When
this process is busy in that moment (a tool running, a loaded machine), it has not seen
the close by the time it sends the next model call over the pooled connection, which
then fails with "Server disconnected" or "Can not write request body". The event loop
is blocked here on purpose (time.sleep) to put the client exactly in that state.
"""

from __future__ import annotations

import time

import pytest

from hermes.agent.provider import ModelRequest, ProviderEvent, TextChunk
from hermes.agent.providers.local import LocalProvider, LocalServer
from hermes.agent.providers.openai_compat import OpenAICompatProvider

pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(600)]

IDLE_PAST_KEEP_ALIVE = 6.0
"""Seconds the loop is busy between two model calls: past llama.cpp's keep-alive (5 s)."""


def request(model: str) -> ModelRequest:
    return ModelRequest(model=model, messages=[{"role": "user", "content": "Say hi."}], extra={"max_tokens": 4})


async def calls_with_busy_pauses(provider: OpenAICompatProvider, model: str) -> list[list[ProviderEvent]]:
    replies = []
    for _ in range(3):
        replies.append([event async for event in provider.stream(request(model))])
        time.sleep(IDLE_PAST_KEEP_ALIVE)
    replies.append(await provider.complete(request(model)))
    return replies


async def test_a_pooled_connection_closed_by_llama_cpp_is_not_a_failed_call(local_server: LocalServer) -> None:
    provider = OpenAICompatProvider(base_url=f"{local_server.base_url}/v1")  # keep-alive on, as for any endpoint
    try:
        replies = await calls_with_busy_pauses(provider, local_server.alias)
    finally:
        await provider.aclose()
    assert len(replies) == 4
    assert all(any(isinstance(e, TextChunk) for e in events) for events in replies)


async def test_the_local_provider_survives_busy_pauses_on_fresh_connections(local_provider: LocalProvider) -> None:
    http = local_provider._http
    replies = await calls_with_busy_pauses(http, local_provider.model_name)
    assert all(any(isinstance(e, TextChunk) for e in events) for events in replies)
    session = http._session
    assert session is not None and session.connector is not None
    assert sum(len(conns) for conns in session.connector._conns.values()) == 0  # nothing kept to go stale
