"""`hermes serve`'s turn log (issue 18, item 6): one line per failed turn, cancelled turn,
failed tool and upstream error, redacted and rate-limited per kind — read with `caplog`
from the real app (chat, Responses and background runs), and the limiter on its own."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from _api_harness import MakeServer, Server

from hermes.runs.turn_log import LOGGER, TurnLog, short
from hermes.testing.upstream import Chunk, Reply, Stall, call, error_reply, text_reply, tool_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
SECRET_URL = "https://user:hunter2@api.example.com/v1?api_key=sk-live-abcdef123456"


def lines(caplog: pytest.LogCaptureFixture, prefix: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.getMessage().startswith(prefix)]


async def until(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


def chat(text: str, **extra: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}], **extra}


async def test_failed_turn_is_one_redacted_error_line(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server.upstream.enqueue(error_reply(400, f"bad request for {SECRET_URL}", type="invalid_request_error"))
    resp = await server.client.post(CHAT, json=chat("hi"))
    assert resp.status == 502
    (record,) = lines(caplog, "turn failed")
    message = record.getMessage()
    assert record.levelno == logging.ERROR
    assert f"session={resp.headers['X-Hermes-Session-Id']}" in message
    assert "code=provider_error" in message and "(400)" in message
    assert "hunter2" not in message and "sk-live" not in message and "api.example.com" not in message
    assert "<url>" in message


@pytest.mark.parametrize("url", [CHAT, RESPONSES])
async def test_upstream_errors_that_are_retried_log_one_line_each(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture, url: str
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server = await make_server(stream_retries=1)
    server.upstream.enqueue(error_reply(500, "upstream exploded"), text_reply("fine now"))
    body = chat("hi", stream=True) if url == CHAT else {"input": "hi", "stream": True}
    resp = await server.client.post(url, json=body)
    assert "fine " in await resp.text()
    (record,) = lines(caplog, "upstream error")
    assert record.levelno == logging.WARNING
    assert "(500)" in record.getMessage() and "upstream exploded" in record.getMessage()
    assert "attempt=1/" in record.getMessage()
    assert lines(caplog, "turn failed") == []


async def test_failed_tool_is_one_warning_line(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "missing.txt"}, id="call_missing")]), text_reply("It is missing.")
    )
    resp = await server.client.post(RESPONSES, json={"input": "read it"})
    assert resp.status == 200
    (record,) = lines(caplog, "tool failed")
    message = record.getMessage()
    assert "tool=read_file" in message and "call=call_missing" in message and "missing.txt" in message
    assert f"session={resp.headers['X-Hermes-Session-Id']}" in message
    assert lines(caplog, "turn") == []


async def test_client_disconnect_is_one_cancelled_line(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server.upstream.enqueue(Reply([Chunk(delta={"role": "assistant", "content": "partial "}), Stall(30)]))
    resp = await server.client.post(CHAT, json=chat("long job", stream=True))
    seen = b""
    while b"partial" not in seen:
        seen += await resp.content.readany()
    session_id = resp.headers["X-Hermes-Session-Id"]
    resp.close()
    await until(lambda: lines(caplog, "turn cancelled"))
    (record,) = lines(caplog, "turn cancelled")
    assert record.getMessage() == f"turn cancelled: session={session_id} code=interrupted"
    assert lines(caplog, "tool failed") == lines(caplog, "turn failed") == []


async def test_stopped_background_run_is_one_cancelled_line(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server.upstream.enqueue(text_reply("busy").stall_after(1))
    started = await (await server.client.post("/v1/runs", json={"input": "a"})).json()
    await until(lambda: server.upstream.requests)
    assert (await server.client.post(f"/v1/runs/{started['run_id']}/stop")).status in (200, 202)
    await until(lambda: lines(caplog, "turn cancelled"))
    assert "code=interrupted" in lines(caplog, "turn cancelled")[0].getMessage()


# ---- the limiter and the redaction on their own -------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_kind_is_rate_limited_on_its_own(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    clock = Clock()
    log = TurnLog(burst=2, window=60.0, clock=clock)
    for n in range(5):
        log.line("turn_failed", logging.ERROR, "turn failed: session=%s", f"s{n}")
    log.line("tool_failed", logging.WARNING, "tool failed: session=%s", "t")
    assert [r.getMessage() for r in caplog.records] == [
        "turn failed: session=s0", "turn failed: session=s1", "tool failed: session=t"
    ]
    clock.now = 60.0
    log.line("turn_failed", logging.ERROR, "turn failed: session=%s", "s5")
    assert caplog.records[-1].getMessage() == "turn failed: session=s5 (3 more turn_failed lines were left out)"


def test_short_keeps_one_line_without_secrets() -> None:
    text = "denied: Authorization: Bearer abc.def.ghi for key sk-proj-ABCDEFGH1234 at " + SECRET_URL + "\nTraceback"
    out = short(text)
    assert "\n" not in out and "Traceback" not in out
    assert "abc.def.ghi" not in out and "ABCDEFGH1234" not in out and "hunter2" not in out
    assert len(short("x" * 1000)) == 200
