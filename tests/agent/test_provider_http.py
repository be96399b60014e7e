"""The OpenAI-compatible provider's own HTTP path: headers, URLs, proxies, error mapping."""

from __future__ import annotations

import json

import pytest

from hermes.agent.provider import FinishChunk, ModelRequest, TextChunk, UsageChunk
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.errors import ProviderAuthError, ProviderConnectionError, ProviderRateLimited
from hermes.testing.upstream import ScriptedUpstream, error_reply, text_reply

REQUEST = ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}])


async def _stream(provider: OpenAICompatProvider) -> list[object]:
    return [event async for event in provider.stream(REQUEST)]


async def test_sends_the_key_user_agent_and_the_body_once(upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("hello", usage=(3, 1)))
    provider = OpenAICompatProvider(base_url=upstream.base_url, api_key="sk-test", default_headers={"X-Extra": "1"})
    try:
        events = await _stream(provider)
    finally:
        await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "hello"
    assert any(isinstance(e, UsageChunk) and e.usage.input_tokens == 3 for e in events)
    headers = upstream.requests[0].headers
    assert headers["Authorization"] == "Bearer sk-test"
    assert headers["User-Agent"].startswith("hermes/")
    assert headers["X-Extra"] == "1"
    assert headers["Content-Type"] == "application/json"
    body = upstream.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_keep_alive_reuses_one_connection(upstream: ScriptedUpstream) -> None:
    provider = OpenAICompatProvider(base_url=upstream.base_url, api_key="k")
    try:
        for _ in range(3):
            upstream.enqueue(text_reply("ok"))
            await _stream(provider)
            upstream.enqueue(text_reply("ok"))
            assert any(isinstance(e, FinishChunk) for e in await provider.complete(REQUEST))
        session = provider._session
        assert session is not None and session.connector is not None
        # Every request went over the one pooled connection, which is idle again.
        assert sum(len(conns) for conns in session.connector._conns.values()) == 1
    finally:
        await provider.aclose()
    assert provider._session is None


async def test_credentials_in_the_url_become_basic_auth_and_the_query_is_kept(upstream: ScriptedUpstream) -> None:
    base = upstream.base_url.replace("http://", "http://bob:pw@") + "?tenant=7"
    upstream.enqueue(error_reply(401, "who are you"))
    provider = OpenAICompatProvider(base_url=base, api_key="sk-ignored")
    try:
        with pytest.raises(ProviderAuthError) as info:
            await _stream(provider)
    finally:
        await provider.aclose()
    assert upstream.requests[0].headers["Authorization"] == "Basic Ym9iOnB3"  # bob:pw
    assert "who are you" in info.value.message and "pw" not in info.value.message


async def test_rate_limit_carries_retry_after(upstream: ScriptedUpstream) -> None:
    upstream.enqueue(error_reply(429, "slow down", retry_after=2))
    provider = OpenAICompatProvider(base_url=upstream.base_url)
    try:
        with pytest.raises(ProviderRateLimited) as info:
            await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert (info.value.status, info.value.retry_after, info.value.retryable) == (429, 2.0, True)
    assert "slow down" in info.value.message


async def test_the_proxy_comes_from_the_environment(
    upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The upstream doubles as the proxy: it answers the absolute-form request itself.
    monkeypatch.setenv("HTTP_PROXY", upstream.base_url.rsplit("/v1", 1)[0])
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    upstream.enqueue(text_reply("via proxy"))
    provider = OpenAICompatProvider(base_url="http://model.invalid/v1")
    try:
        events = await _stream(provider)
    finally:
        await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "via proxy"

    monkeypatch.setenv("NO_PROXY", "model.invalid")
    provider = OpenAICompatProvider(base_url="http://model.invalid/v1", connect_timeout=5)
    try:
        with pytest.raises(ProviderConnectionError, match="model.invalid"):
            await _stream(provider)
    finally:
        await provider.aclose()


async def test_undecodable_bytes_in_a_message_still_go_out(upstream: ScriptedUpstream) -> None:
    # Tool output decoded with surrogateescape keeps lone surrogates; the body is ASCII-escaped JSON.
    upstream.enqueue(text_reply("ok"))
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "caf\u00e9 \udcff"}])
    provider = OpenAICompatProvider(base_url=upstream.base_url)
    try:
        events = [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()
    assert any(isinstance(e, FinishChunk) for e in events)
    assert upstream.requests[0].body["messages"][0]["content"] == "caf\u00e9 \udcff"


def test_a_connection_the_server_closed_while_idle_is_not_a_failure() -> None:
    # The server drops idle keep-alive connections after 0.2 s; this loop is busy (a tool,
    # a loaded machine) for longer, so it has not seen the close when it sends again.
    import asyncio
    import time

    with ScriptedUpstream.in_thread(keepalive_timeout=0.2) as upstream:
        upstream.default = text_reply("fine")
        provider = OpenAICompatProvider(base_url=upstream.base_url)

        async def turns() -> list[str]:
            texts = []
            try:
                for _ in range(3):
                    texts.append("".join(e.text for e in await _stream(provider) if isinstance(e, TextChunk)))
                    time.sleep(0.6)
                    texts.append("".join(e.text for e in await provider.complete(REQUEST) if isinstance(e, TextChunk)))
                    time.sleep(0.6)
            finally:
                await provider.aclose()
            return texts

        assert asyncio.run(turns()) == ["fine"] * 6
        assert len(upstream.requests) == 6  # each request reached the server once


async def test_a_request_that_fails_on_a_fresh_connection_is_not_sent_again() -> None:
    # A server that accepts and hangs up: the failure is the server's, not a stale pool's,
    # so it is reported (the engine decides about retries) after one connection.
    import asyncio

    connections = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = OpenAICompatProvider(base_url=f"http://127.0.0.1:{port}/v1")
    try:
        with pytest.raises(ProviderConnectionError):
            await _stream(provider)
    finally:
        await provider.aclose()
        server.close()
        await server.wait_closed()
    assert connections == 1


async def test_keep_alive_off_opens_a_connection_per_request(upstream: ScriptedUpstream) -> None:
    provider = OpenAICompatProvider(base_url=upstream.base_url, keep_alive=False)
    try:
        for _ in range(2):
            upstream.enqueue(text_reply("ok"))
            await _stream(provider)
        session = provider._session
        assert session is not None and session.connector is not None
        assert sum(len(conns) for conns in session.connector._conns.values()) == 0  # nothing pooled
    finally:
        await provider.aclose()
    assert [r.headers.get("Connection", "").lower() for r in upstream.requests] == ["close", "close"]


def test_a_closed_provider_serves_a_later_event_loop() -> None:
    # e.g. a CLI that runs asyncio.run more than once, closing the provider at the end of each.
    import asyncio

    with ScriptedUpstream.in_thread() as upstream:
        upstream.default = text_reply("again")
        provider = OpenAICompatProvider(base_url=upstream.base_url)

        async def once() -> str:
            try:
                return "".join(e.text for e in await _stream(provider) if isinstance(e, TextChunk))
            finally:
                await provider.aclose()

        assert asyncio.run(once()) == "again"
        assert asyncio.run(once()) == "again"


async def test_the_output_format_is_sent_as_response_format(upstream: ScriptedUpstream) -> None:
    from hermes.agent.output_format import JsonObjectFormat, JsonSchemaFormat

    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    provider = OpenAICompatProvider(base_url=upstream.base_url, api_key="k")
    messages = REQUEST.messages
    try:
        await provider.complete(ModelRequest(model="m", messages=messages, output_format=JsonObjectFormat()))
        fmt = JsonSchemaFormat("answer", schema, strict=True, description="one answer")
        events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, output_format=fmt))]
    finally:
        await provider.aclose()
    assert [r.response_format for r in upstream.requests] == [
        {"type": "json_object"},
        {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True, "description": "one answer"},
        },
    ]
    # With nothing queued the scripted upstream answers JSON that fits the schema.
    assert json.loads("".join(e.text for e in events if isinstance(e, TextChunk))) == {"a": "text"}
