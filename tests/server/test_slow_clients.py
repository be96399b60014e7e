"""Slow and greedy clients against a real listener with small limits (raw sockets).

Headers that never complete and bodies that stop flowing get their connection closed;
connections over the cap are refused with a short 503; repeated log lines are limited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _raw_http import exchange, hermes_app, read_response, serving, wait_closed_by_server

from hermes.server.http.log_limit import RateLimitFilter
from hermes.server.http.protocol import ConnectionLimits, HermesServer, client_key
from hermes.testing.upstream import ScriptedUpstream, text_reply

HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


@contextlib.asynccontextmanager
async def listener(tmp_path: Path, upstream: ScriptedUpstream, limits: ConnectionLimits) -> AsyncIterator[
    tuple[int, HermesServer]
]:
    upstream.default = text_reply("fine")
    async with hermes_app(tmp_path / "home", upstream.base_url, upstream.model) as app:
        async with serving(app, limits) as served:
            yield served


async def test_headers_that_never_complete_are_closed(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    async with listener(tmp_path, upstream, ConnectionLimits(header_timeout=0.5, body_timeout=60)) as (port, _):
        silent_reader, silent_writer = await asyncio.open_connection("127.0.0.1", port)
        partial_reader, partial_writer = await asyncio.open_connection("127.0.0.1", port)
        partial_writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no blank line: the head never ends
        await partial_writer.drain()
        assert await wait_closed_by_server(silent_reader) == b""
        assert await wait_closed_by_server(partial_reader) == b""
        for writer in (silent_writer, partial_writer):
            writer.close()
        status, _, _ = await exchange(port, HEALTH)  # the server itself is fine
        assert status == 200


async def test_headers_trickling_in_past_the_limit_are_closed(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    async with listener(tmp_path, upstream, ConnectionLimits(header_timeout=0.5, body_timeout=60)) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        closed = asyncio.create_task(wait_closed_by_server(reader))
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        with contextlib.suppress(ConnectionError):
            for _ in range(200):  # one header byte at a time keeps data flowing, but the head never ends in time
                if closed.done():
                    break
                writer.write(b"a")
                await writer.drain()
                await asyncio.sleep(0.05)
        assert await asyncio.wait_for(closed, 20) == b""
        writer.close()


async def test_a_body_that_stops_is_closed(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    async with listener(tmp_path, upstream, ConnectionLimits(header_timeout=60, body_timeout=0.5)) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{\"model\": "
        )
        await writer.drain()
        received = await wait_closed_by_server(reader)
        assert b"200 OK" not in received
        writer.close()


async def test_a_body_that_keeps_flowing_is_served(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    async with listener(tmp_path, upstream, ConnectionLimits(header_timeout=60, body_timeout=0.5)) as (port, _):
        body = json.dumps({"title": "slow but steady " + "x" * 40}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        )
        for i in range(0, len(body), 8):  # each piece well inside the per-read limit
            writer.write(body[i : i + 8])
            await writer.drain()
            await asyncio.sleep(0.1)
        status, _, answer = await read_response(reader)
        assert status in (200, 201), answer
        writer.close()


async def test_connections_over_the_cap_are_refused(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    limits = ConnectionLimits(header_timeout=60, body_timeout=60, max_connections=3)
    async with listener(tmp_path, upstream, limits) as (port, server):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        deadline = asyncio.get_running_loop().time() + 20
        while server.open_connections < 3:
            assert asyncio.get_running_loop().time() < deadline, "connections were not registered"
            await asyncio.sleep(0.01)
        status, headers, body = await exchange(port, HEALTH)
        assert status == 503
        assert headers["retry-after"] == "1"
        assert json.loads(body)["error"]["code"] == "too_many_connections"
        assert server.refused >= 1
        for _, writer in held:
            writer.close()
        while server.open_connections >= 3:
            assert asyncio.get_running_loop().time() < deadline, "held connections were not released"
            await asyncio.sleep(0.01)
        status, _, _ = await exchange(port, HEALTH)
        assert status == 200


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, args, None)


def test_rate_limit_filter_drops_repeats_and_reports_them() -> None:
    now = [0.0]
    limiter = RateLimitFilter(burst=3, window=10.0, clock=lambda: now[0])
    passed = [limiter.filter(record("socket.accept() out of system resource\nsocket: fd %d", n)) for n in range(1000)]
    assert passed.count(True) == 3
    assert limiter.filter(record("a different line")) is True
    now[0] = 11.0
    later = record("socket.accept() out of system resource\nsocket: fd %d", 5)
    assert limiter.filter(later) is True
    assert "997 similar lines suppressed" in later.getMessage()


def test_rate_limit_filter_folds_numbers_in_the_first_line() -> None:
    limiter = RateLimitFilter(burst=2, window=60.0, clock=lambda: 0.0)
    results = [limiter.filter(record("[Errno 24] Too many open files: connection %d", n)) for n in range(50)]
    assert results.count(True) == 2


@pytest.mark.parametrize("burst", [1, 5])
def test_rate_limited_handler_writes_at_most_burst_lines(burst: int, tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    handler = logging.FileHandler(path)
    handler.addFilter(RateLimitFilter(burst=burst, window=60.0))
    logger = logging.getLogger("hermes.test.flood")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for _ in range(10_000):
            logger.error("Too many open files")
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert path.read_text().count("Too many open files") == burst


# ---- one client cannot hold every connection -----------------------------------------------


async def _silent_sockets(port: int, count: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """`count` connections from 127.0.0.1 that send nothing (half-open, as an attacker holds them)."""
    return [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]


async def _answer_or_nothing(reader: asyncio.StreamReader, wait: float) -> bytes | None:
    """What the server sent before closing within `wait` seconds; None while it keeps the socket."""
    try:
        return await wait_closed_by_server(reader, wait)
    except TimeoutError:
        return None


async def test_one_client_cannot_hold_every_connection(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    # The whole server takes 300 connections, the attacker opens 300: without the per-client
    # cap it would hold every one and the next client would get the 503.
    cap = 256
    limits = ConnectionLimits(header_timeout=60, body_timeout=60, max_connections=300, max_per_client=cap,
                              first_byte_timeout=60)  # fmt: skip
    async with listener(tmp_path, upstream, limits) as (port, server):
        held = await _silent_sockets(port, 300)
        try:
            answers = await asyncio.gather(*(_answer_or_nothing(reader, 2.0) for reader, _ in held))
            refused = [answer for answer in answers if answer is not None]
            assert len(refused) == 300 - cap  # the extra ones were closed at once, with a 429
            assert all(answer.startswith(b"HTTP/1.1 429 ") for answer in refused)
            assert json.loads(refused[0].split(b"\r\n\r\n", 1)[1])["error"]["code"] == "too_many_client_connections"
            assert server.per_client["127.0.0.1"] == cap

            # Another client is served at once, while the first one holds all it may.
            started = asyncio.get_running_loop().time()
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
            writer.write(HEALTH)
            await writer.drain()
            status, _, _ = await asyncio.wait_for(read_response(reader), 2.0)
            assert status == 200
            assert asyncio.get_running_loop().time() - started < 2.0
            writer.close()
        finally:
            for _, writer in held:
                writer.close()
        deadline = asyncio.get_running_loop().time() + 20
        while server.per_client:
            assert asyncio.get_running_loop().time() < deadline, "closed connections were not released"
            await asyncio.sleep(0.01)
        status, _, _ = await exchange(port, HEALTH)  # the first client is welcome again
        assert status == 200


async def test_a_silent_connection_is_closed_after_the_first_byte_timeout(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    limits = ConnectionLimits(header_timeout=60, body_timeout=60, first_byte_timeout=0.5)
    async with listener(tmp_path, upstream, limits) as (port, server):
        silent_reader, silent_writer = await asyncio.open_connection("127.0.0.1", port)
        talking_reader, talking_writer = await asyncio.open_connection("127.0.0.1", port)
        talking_writer.write(b"GET /health HTTP/1.1\r\n")  # started in time: header_timeout governs it
        await talking_writer.drain()
        started = asyncio.get_running_loop().time()
        assert await wait_closed_by_server(silent_reader, 10) == b""
        assert asyncio.get_running_loop().time() - started < 5
        await asyncio.sleep(0.5)
        talking_writer.write(b"Host: x\r\nConnection: close\r\n\r\n")
        await talking_writer.drain()
        status, _, _ = await read_response(talking_reader)
        assert status == 200
        for writer in (silent_writer, talking_writer):
            writer.close()


def test_clients_are_counted_by_address() -> None:
    assert client_key(("192.0.2.7", 5000)) == "192.0.2.7"
    assert client_key(("::ffff:192.0.2.7", 5000, 0, 0)) == "192.0.2.7"
    # One IPv6 client owns a /64: its addresses count together.
    assert client_key(("2001:db8::1", 1, 0, 0)) == client_key(("2001:db8::ffff:2", 1, 0, 0)) == "2001:db8::/64"
    assert client_key(("2001:db8:0:1::1", 1, 0, 0)) != client_key(("2001:db8::1", 1, 0, 0))
    assert client_key(("fe80::1%eth0", 1, 0, 2)) == "fe80::/64"
    assert client_key("") is None and client_key(("not-an-ip", 1)) is None
