"""A session past its compaction threshold, driven through every server path.

Each path resumes from the stored summary as `hermes chat -r` does: the first turn past
the threshold summarises once, every later turn makes exactly one upstream call (the
requests the scripted upstream received are counted) and starts from the summary. Also:
an undo or a fork between turns changes what the next turn sends (the history cache).
"""

from __future__ import annotations

import asyncio
from typing import Any

from _api_harness import SERVER_KEY, MakeServer, Server

from hermes.agent.context import SUMMARIZER_PROMPT, SUMMARY_HEADER
from hermes.server.http.state import STORAGE
from hermes.store.records import NewMessage
from hermes.testing.upstream import text_reply

WINDOW = 4000
TURNS = 5
ANSWER = "noted"


def long_history(pairs: int = 12) -> list[dict[str, str]]:
    messages = []
    for i in range(pairs):
        messages.append({"role": "user", "content": f"step {i}: " + "q" * 1200})
        messages.append({"role": "assistant", "content": f"did {i}: " + "a" * 1200})
    return messages


def _seed(srv: Server, session_id: str) -> None:
    srv.sessions.create_session(source="api_server", session_id=session_id, system_prompt="You are a test agent.")
    for message in long_history():
        srv.sessions.append_message(session_id, NewMessage(role=message["role"], content=message["content"]))


async def _server(make_server: MakeServer) -> Server:
    srv = await make_server(context_window=WINDOW, server_key=SERVER_KEY)
    srv.upstream.default = text_reply(ANSWER)
    return srv


def _is_summary_request(request: Any) -> bool:
    return bool(request.messages) and request.messages[0].get("content") == SUMMARIZER_PROMPT


class Calls:
    """The upstream requests of each turn."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.seen = 0
        self.turns: list[list[Any]] = []

    def take(self) -> list[Any]:
        requests = list(self.srv.upstream.requests[self.seen :])
        self.seen = len(self.srv.upstream.requests)
        self.turns.append(requests)
        return requests

    def check(self, session_id: str, last_inputs: list[str]) -> None:
        """One summary (in the first turn), then one call per turn, each from the summary."""
        first, *rest = self.turns
        assert [_is_summary_request(r) for r in first][-1] is False
        assert any(_is_summary_request(r) for r in first)
        assert [len(requests) for requests in rest] == [1] * len(rest), [len(t) for t in self.turns]
        for requests, text in zip(self.turns, last_inputs, strict=True):
            turn = requests[-1]
            assert turn.messages[1]["content"].startswith(SUMMARY_HEADER), turn.messages[1]["content"][:80]
            assert turn.messages[-1] == {"role": "user", "content": text}
            assert sum(m.get("content") == text for m in turn.messages) == 1  # sent once
        assert len(self.srv.sessions.compactions(session_id)) == 1


async def test_session_header_turns_resume_from_the_summary(make_server: MakeServer) -> None:
    srv = await _server(make_server)
    _seed(srv, "compact-header")
    calls = Calls(srv)
    inputs = [f"header turn {i}" for i in range(TURNS)]
    for text in inputs:
        resp = await srv.client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": text}]},
            headers={"X-Hermes-Session-Id": "compact-header", **srv.auth},
        )  # fmt: skip
        assert resp.status == 200, await resp.text()
        calls.take()
    calls.check("compact-header", inputs)
    # The turns before this one are in the request, after the summary.
    last = calls.turns[-1][-1].messages
    assert [m["content"] for m in last if m["role"] == "user"][-2:] == inputs[-2:]


async def test_a_resent_history_resumes_from_the_summary(make_server: MakeServer) -> None:
    srv = await _server(make_server)
    calls = Calls(srv)
    messages: list[dict[str, str]] = long_history()
    inputs = [f"resent turn {i}" for i in range(TURNS)]
    session_ids = set()
    for text in inputs:
        messages.append({"role": "user", "content": text})
        resp = await srv.client.post("/v1/chat/completions", json={"messages": messages}, headers=srv.auth)
        assert resp.status == 200, await resp.text()
        session_ids.add(resp.headers["X-Hermes-Session-Id"])
        messages.append({"role": "assistant", "content": (await resp.json())["choices"][0]["message"]["content"]})
        calls.take()
    assert len(session_ids) == 1
    calls.check(session_ids.pop(), inputs)


async def test_a_responses_chain_resumes_from_the_summary(make_server: MakeServer) -> None:
    srv = await _server(make_server)
    calls = Calls(srv)
    inputs = [f"chained turn {i}" for i in range(TURNS)]
    items = [{"type": "message", "role": m["role"], "content": m["content"]} for m in long_history()]
    session_ids = set()
    previous: str | None = None
    for text in inputs:
        body: dict[str, Any] = {"model": "hermes-agent", "input": text}
        if previous is None:  # the first request brings the whole conversation
            body["input"] = [*items, {"role": "user", "content": text}]
        else:
            body["previous_response_id"] = previous
        resp = await srv.client.post("/v1/responses", json=body, headers=srv.auth)
        assert resp.status == 200, await resp.text()
        session_ids.add(resp.headers["X-Hermes-Session-Id"])
        previous = (await resp.json())["id"]
        calls.take()
    assert len(session_ids) == 1
    calls.check(session_ids.pop(), inputs)


async def test_runs_resume_from_the_summary(make_server: MakeServer) -> None:
    srv = await _server(make_server)
    _seed(srv, "compact-runs")
    calls = Calls(srv)
    inputs = [f"run turn {i}" for i in range(TURNS)]
    for text in inputs:
        resp = await srv.client.post("/v1/runs", json={"input": text, "session_id": "compact-runs"}, headers=srv.auth)
        assert resp.status == 202, await resp.text()
        run_id = (await resp.json())["run_id"]
        for _ in range(500):
            status = await (await srv.client.get(f"/v1/runs/{run_id}", headers=srv.auth)).json()
            if status["status"] not in ("queued", "started", "running"):
                break
            await asyncio.sleep(0.02)
        assert status["status"] == "completed", status
        calls.take()
    calls.check("compact-runs", inputs)


async def _header_turn(srv: Server, session_id: str, text: str) -> list[dict[str, Any]]:
    before = len(srv.upstream.requests)
    resp = await srv.client.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": text}]},
        headers={"X-Hermes-Session-Id": session_id, **srv.auth},
    )  # fmt: skip
    assert resp.status == 200, await resp.text()
    assert len(srv.upstream.requests) == before + 1
    messages: list[dict[str, Any]] = srv.upstream.requests[-1].messages
    return messages


def _said(messages: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in messages[1:]]


async def test_an_undo_between_turns_changes_the_next_request(make_server: MakeServer) -> None:
    srv = await make_server(server_key=SERVER_KEY)
    srv.upstream.default = text_reply(ANSWER)
    for text in ("one", "two"):
        await _header_turn(srv, "undo-me", text)
    await srv.app[STORAGE].sessions.undo_turns("undo-me", 1)
    assert _said(await _header_turn(srv, "undo-me", "three")) == ["one", ANSWER, "three"]


async def test_a_fork_between_turns_sends_each_session_its_own_history(make_server: MakeServer) -> None:
    srv = await make_server(server_key=SERVER_KEY)
    srv.upstream.default = text_reply(ANSWER)
    for text in ("one", "two"):
        await _header_turn(srv, "fork-me", text)
    first_answer = srv.sessions.get_messages("fork-me")[1].id
    resp = await srv.client.post(
        "/api/sessions/fork-me/fork", json={"at_message_id": first_answer}, headers=srv.auth
    )
    assert resp.status == 201, await resp.text()
    fork_id = (await resp.json())["session"]["id"]
    assert _said(await _header_turn(srv, fork_id, "branch")) == ["one", ANSWER, "branch"]
    assert _said(await _header_turn(srv, "fork-me", "three")) == ["one", ANSWER, "two", ANSWER, "three"]
