"""The one reader of a request's session and the one writer of the session headers
(`hermes.server.http.request_session`), through the real app: each way a session is
named, their precedence, refused ids, and the headers on JSON and streamed answers of
chat completions, Responses and runs."""

from __future__ import annotations

from typing import Any

import pytest
from _api_harness import Server, parse_sse
from aiohttp.test_utils import make_mocked_request

from hermes.errors import SessionNotFound
from hermes.ids import keyed_session_id
from hermes.server.http.errors import PermissionDenied, RequestValidationError
from hermes.server.http.request_session import (
    CHAT_ID_HEADER,
    PLACEMENT_HEADER,
    SESSION_ID_HEADER,
    SESSION_KEY_HEADER,
    RequestedSession,
    requested_session,
    session_headers,
)
from hermes.testing.upstream import text_reply

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
RUNS = "/v1/runs"


def _chat(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **extra}


async def _run_settled(srv: Server, run_id: str) -> None:
    events = await srv.client.get(f"{RUNS}/{run_id}/events", headers=srv.auth)
    await events.text()


# ---- reading: each way, precedence, refusals -------------------------------------------------


def test_the_reader_takes_the_first_accepted_way_in_precedence_order(auth_server: Server) -> None:
    headers = {SESSION_ID_HEADER: " from-header ", CHAT_ID_HEADER: "chat-1", "Authorization": "Bearer x"}
    body = {"session_id": "from-body", "metadata": {"chat_id": "chat-2"}}
    request = make_mocked_request("POST", CHAT, headers=headers, app=auth_server.app)
    assert requested_session(request, body, "chat_id", "body", "header") == RequestedSession(
        session_id="from-header", named_by="header"
    )
    assert requested_session(request, body, "chat_id", "body") == RequestedSession(
        session_id="from-body", named_by="body"
    )
    assert requested_session(request, body, "chat_id") == RequestedSession(chat_key="chat-1", named_by="chat_id")
    bare = make_mocked_request("POST", CHAT, headers={SESSION_ID_HEADER: "  "}, app=auth_server.app)
    assert requested_session(bare, {"metadata": {"chat_id": " chat-2 "}}, "header", "chat_id") == RequestedSession(
        chat_key="chat-2", named_by="chat_id"
    )
    assert requested_session(bare, {"session_id": "", "metadata": {"chat_id": " "}}, "body", "chat_id") == (
        RequestedSession()
    )
    assert requested_session(bare, {"metadata": "not an object"}, "chat_id") == RequestedSession()


def test_the_reader_refuses_bad_ids_and_a_header_without_a_server_key(server: Server, auth_server: Server) -> None:
    for value in ("../escape", "a" * 300, "bad id"):
        request = make_mocked_request("POST", CHAT, headers={SESSION_ID_HEADER: value}, app=auth_server.app)
        with pytest.raises(RequestValidationError) as info:
            requested_session(request, {}, "header")
        assert (info.value.status, info.value.code, info.value.param) == (400, "invalid_session_id", SESSION_ID_HEADER)
        with pytest.raises(RequestValidationError) as info:
            requested_session(request, {"session_id": value}, "body")
        assert (info.value.code, info.value.param) == ("invalid_session_id", "session_id")
    keyless = make_mocked_request("POST", CHAT, headers={SESSION_ID_HEADER: "fine"}, app=server.app)
    with pytest.raises(PermissionDenied):
        requested_session(keyless, {}, "header")
    assert requested_session(keyless, {}, "chat_id") == RequestedSession()  # a way not accepted is not read


async def test_chat_session_header_wins_over_the_chat_id(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("one"))
    headers = {**srv.auth, SESSION_ID_HEADER: "named-1", CHAT_ID_HEADER: "owui-chat"}
    resp = await srv.client.post(CHAT, json=_chat(metadata={"chat_id": "meta-chat"}), headers=headers)
    assert resp.status == 200
    assert resp.headers[SESSION_ID_HEADER] == "named-1"
    assert PLACEMENT_HEADER not in resp.headers  # named outright: nothing was placed
    assert srv.sessions.get_session("named-1") is not None


@pytest.mark.parametrize("url", [CHAT, RESPONSES])
async def test_the_chat_id_header_wins_over_metadata_and_keys_the_session(auth_server: Server, url: str) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("one"), text_reply("two"))
    body: dict[str, Any] = _chat() if url == CHAT else {"input": "hi"}
    by_header = await srv.client.post(
        url, json={**body, "metadata": {"chat_id": "meta-chat"}}, headers={**srv.auth, CHAT_ID_HEADER: "head-chat"}
    )
    assert by_header.status == 200
    assert by_header.headers[SESSION_ID_HEADER] == keyed_session_id("head-chat")
    assert by_header.headers[PLACEMENT_HEADER] == "keyed"
    by_metadata = await srv.client.post(url, json={**body, "metadata": {"chat_id": "meta-chat"}}, headers=srv.auth)
    assert by_metadata.headers[SESSION_ID_HEADER] == keyed_session_id("meta-chat")
    assert by_metadata.headers[PLACEMENT_HEADER] == "keyed"


async def test_responses_and_runs_do_not_read_the_session_header(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("one"), text_reply("two"))
    headers = {**srv.auth, SESSION_ID_HEADER: "not-for-them"}
    resp = await srv.client.post(RESPONSES, json={"input": "hi"}, headers=headers)
    assert resp.status == 200 and resp.headers[SESSION_ID_HEADER] != "not-for-them"
    run = await srv.client.post(RUNS, json={"input": "hi"}, headers=headers)
    assert run.status == 202
    started = await run.json()
    assert started["session_id"] != "not-for-them"
    await _run_settled(srv, started["run_id"])
    with pytest.raises(SessionNotFound):
        srv.sessions.get_session("not-for-them")


async def test_runs_take_the_body_session_id_and_refuse_a_bad_one(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("done"))
    resp = await srv.client.post(RUNS, json={"input": "hi", "session_id": "run-session-1"}, headers=srv.auth)
    assert resp.status == 202
    started = await resp.json()
    assert started["session_id"] == "run-session-1" == resp.headers[SESSION_ID_HEADER]
    await _run_settled(srv, started["run_id"])
    for bad in ("../up", "has space"):
        refused = await srv.client.post(RUNS, json={"input": "hi", "session_id": bad}, headers=srv.auth)
        assert refused.status == 400
        error = (await refused.json())["error"]
        assert (error["code"], error["param"]) == ("invalid_session_id", "session_id")
    assert len(srv.upstream.requests) == 1


@pytest.mark.parametrize("value", ["../x", "a b", "x" * 300])
async def test_chat_refuses_a_bad_session_header_before_any_work(auth_server: Server, value: str) -> None:
    resp = await auth_server.client.post(CHAT, json=_chat(), headers={**auth_server.auth, SESSION_ID_HEADER: value})
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "invalid_session_id"
    assert auth_server.upstream.requests == []


# ---- writing: the same headers on JSON and streamed answers ---------------------------------------


def test_the_writer_names_the_session_the_key_and_the_placement() -> None:
    assert session_headers("s1", None) == {SESSION_ID_HEADER: "s1"}
    assert session_headers("s1", "k", placement="keyed") == {
        SESSION_ID_HEADER: "s1", SESSION_KEY_HEADER: "k", PLACEMENT_HEADER: "keyed"
    }


@pytest.mark.parametrize("url", [CHAT, RESPONSES])
@pytest.mark.parametrize("stream", [False, True])
async def test_openai_answers_carry_the_session_headers(auth_server: Server, url: str, stream: bool) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("answer"))
    body: dict[str, Any] = _chat(stream=stream) if url == CHAT else {"input": "hi", "stream": stream}
    resp = await srv.client.post(url, json=body, headers={**srv.auth, SESSION_KEY_HEADER: "client-label"})
    assert resp.status == 200
    text = await resp.text()
    if stream:
        assert resp.headers["Content-Type"].startswith("text/event-stream") and parse_sse(text)
    session_id = resp.headers[SESSION_ID_HEADER]
    assert srv.sessions.get_session(session_id) is not None  # the session that answered
    assert resp.headers[SESSION_KEY_HEADER] == "client-label"
    assert resp.headers[PLACEMENT_HEADER] in ("derived", "new")


async def test_run_answers_carry_the_session_headers(auth_server: Server) -> None:
    srv = auth_server
    srv.upstream.enqueue(text_reply("ran"), text_reply("chatted"))
    headers = {**srv.auth, SESSION_KEY_HEADER: "client-label"}
    resp = await srv.client.post(RUNS, json={"input": "hi"}, headers=headers)
    assert resp.status == 202
    started = await resp.json()
    assert resp.headers[SESSION_ID_HEADER] == started["session_id"]
    assert resp.headers[SESSION_KEY_HEADER] == "client-label"
    assert PLACEMENT_HEADER not in resp.headers
    await _run_settled(srv, started["run_id"])
    # A session's chat stream is a run's stream: the same writer names its session.
    streamed = await srv.client.post(
        f"/api/sessions/{started['session_id']}/chat/stream", json={"message": "again"}, headers=headers
    )
    assert streamed.status == 200
    await streamed.text()
    assert streamed.headers[SESSION_ID_HEADER] == started["session_id"]
    assert streamed.headers[SESSION_KEY_HEADER] == "client-label"
