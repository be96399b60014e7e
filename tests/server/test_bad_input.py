"""Hostile input gets a 400 with the OpenAI error envelope, over raw sockets on a real listener.

JSON that parses but cannot be carried (lone UTF-16 surrogates, integers beyond Python's
4300-digit limit) is caught by the app; requests aiohttp's own parser rejects are caught
at the protocol layer (`hermes.server.http.protocol`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _raw_http import envelope, exchange, hermes_app, serving

from hermes.server.http.protocol import ConnectionLimits
from hermes.testing.upstream import ScriptedUpstream, text_reply

SURROGATE = '"bad \\ud800 text"'
"""A JSON string literal holding a lone high surrogate."""
HUGE_INT = "1" * 5000


@pytest.fixture
async def port(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[int]:
    upstream.default = text_reply("fine")
    async with hermes_app(tmp_path / "home", upstream.base_url, upstream.model) as app:
        async with serving(app, ConnectionLimits()) as (bound, _):
            yield bound


def post(path: str, body: str | bytes, method: str = "POST") -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode() + data


async def create_session(port: int) -> str:
    status, _, body = await exchange(port, post("/api/sessions", "{}"))
    assert status in (200, 201), body
    data = json.loads(body)
    return str(data.get("id") or data["session"]["id"])


JSON_CASES = {
    "chat message": ("/v1/chat/completions", '{"model":"m","messages":[{"role":"user","content":%s}]}'),
    "chat key": ("/v1/chat/completions", '{"model":"m","messages":[{"role":"user","content":"hi",%s:1}]}'),
    "responses input": ("/v1/responses", '{"model":"m","input":%s}'),
    "responses conversation": ("/v1/responses", '{"model":"m","input":"hi","conversation":%s}'),
    "runs input": ("/v1/runs", '{"input":%s}'),
    "session title": ("/api/sessions", '{"title":%s}'),
    "session system prompt": ("/api/sessions", '{"system_prompt":%s}'),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
async def test_lone_surrogate_is_400(port: int, case: str) -> None:
    path, template = JSON_CASES[case]
    status, headers, body = await exchange(port, post(path, template % SURROGATE))
    assert status == 400, body
    assert headers["content-type"].startswith("application/json")
    error = envelope(body)
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_json"
    assert "surrogate" in error["message"]


SURROGATE_BODIES = {
    # What json.loads turns into a lone surrogate without a \\u escape in the bytes.
    "utf-8 surrogate bytes": b'{"title":"bad \xed\xa0\x80 text"}',
    "utf-16 body": '{"title":"bad \ud800 text"}'.encode("utf-16-le", "surrogatepass"),
}


@pytest.mark.parametrize("case", sorted(SURROGATE_BODIES))
async def test_lone_surrogate_without_an_escape_is_400(port: int, case: str) -> None:
    status, _, body = await exchange(port, post("/api/sessions", SURROGATE_BODIES[case]))
    assert status == 400, body
    assert envelope(body)["code"] == "invalid_json"


@pytest.mark.parametrize("case", sorted(set(JSON_CASES) - {"chat key"}))  # a number is no key
async def test_integer_over_4300_digits_is_400(port: int, case: str) -> None:
    path, template = JSON_CASES[case]
    body_text = template % HUGE_INT
    status, _, body = await exchange(port, post(path, body_text))
    assert status == 400, body
    error = envelope(body)
    assert error["code"] == "invalid_json"
    assert "digits" in error["message"]


@pytest.mark.parametrize("method", ["PATCH", "POST"])
async def test_session_patch_and_fork_with_surrogate_are_400(port: int, method: str) -> None:
    sid = await create_session(port)
    path = f"/api/sessions/{sid}" if method == "PATCH" else f"/api/sessions/{sid}/fork"
    status, _, body = await exchange(port, post(path, f'{{"title":{SURROGATE}}}', method=method))
    assert status == 400, body
    assert envelope(body)["code"] == "invalid_json"


async def test_valid_surrogate_pair_is_accepted(port: int) -> None:
    status, _, body = await exchange(port, post("/api/sessions", '{"title":"smile \\ud83d\\ude00"}'))
    assert status in (200, 201), body


PROTOCOL_CASES = {
    "bad content-length": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    "content-length with transfer-encoding": (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ),
    "header over 8190 bytes": b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
    "NUL in a header": b"GET /health HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\n\r\n",
    "unknown method": b"BR{}EW /health HTTP/1.1\r\nHost: x\r\n\r\n",
    "garbage request line": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_CASES))
async def test_parser_rejections_get_the_json_envelope(port: int, case: str) -> None:
    status, headers, body = await exchange(port, PROTOCOL_CASES[case])
    assert status == 400, body
    assert headers["content-type"].startswith("application/json"), headers
    error = envelope(body)
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_http_request"
    assert "Traceback" not in error["message"]


async def test_server_still_answers_after_malformed_requests(port: int) -> None:
    for raw in PROTOCOL_CASES.values():
        await exchange(port, raw)
    status, _, body = await exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 200
    assert json.loads(body)["status"] == "ok"
