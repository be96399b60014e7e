"""Consistency across instances on one PostgreSQL database, end to end over HTTP.

- A retried non-streamed `/v1/chat/completions` or `/v1/responses` with one
  `Idempotency-Key` that lands on another instance does not run again: the answer is a
  receipt in the storage, and a retry of a request still running elsewhere waits for it.
- Two starts of one session fired together at two instances admit exactly one: the
  storage holds at most one unsettled run per session.

Each instance is the real app from `create_app` with its own PostgreSQL `Storage` on the
same database, served by a real aiohttp server on loopback; the model is one
`ScriptedUpstream` that counts the calls. Skips where PostgreSQL is missing (fails under
CI=true): `pg_url` fixture.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from _runs_fixtures import FAST, wait_for
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.runs.idempotency import IdempotencyPolicy, IdempotentAnswers
from hermes.server.http.app import create_app
from hermes.store.api import Storage
from hermes.store.records import TERMINAL_STATES
from hermes.testing.upstream import Reply, ScriptedUpstream, Sleep, text_reply

Node = tuple[TestClient, Storage]
MakeNode = Callable[..., Awaitable[Node]]


def slow(text: str, seconds: float) -> Reply:
    return Reply([Sleep(seconds), *text_reply(text).steps])


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
async def node(pg_url: str, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[MakeNode]:
    from hermes.store.postgres import open_postgres_storage

    made: list[tuple[TestClient, Storage, Agent]] = []

    async def make(name: str, idempotency: IdempotentAnswers | None = None) -> Node:
        settings = Settings.load({"home": str(tmp_path / name), "model": "scripted-model"}, env={})
        settings.ensure_home()
        storage = await open_postgres_storage(pg_url)
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=storage.sessions,
            model="scripted-model",
            tools=ToolRegistry([]),
            options=FAST,
            system_prompt="You are a test agent.",
        )
        app = create_app(settings, storage=storage, agent=agent, idempotency=idempotency)
        client = TestClient(TestServer(app))
        await client.start_server()
        made.append((client, storage, agent))
        return client, storage

    yield make
    for client, storage, agent in made:
        await client.close()
        await agent.aclose()
        await storage.aclose()


async def _answer(client: TestClient, path: str, body: dict[str, Any], key: str) -> tuple[int, Any, str | None]:
    resp = await client.post(path, json=body, headers={"Idempotency-Key": key})
    return resp.status, await resp.json(), resp.headers.get("X-Hermes-Session-Id")


# ---- Idempotency-Key across instances -----------------------------------------------------


async def test_a_retried_chat_completion_on_another_instance_runs_once(node: MakeNode, upstream) -> None:
    (a, _), (b, _) = await node("a"), await node("b")
    upstream.enqueue(slow("answered once", 0.5))
    body = {"messages": [{"role": "user", "content": "hi"}]}

    first = asyncio.create_task(_answer(a, "/v1/chat/completions", body, "chat-key-1"))
    await wait_for(lambda: upstream.requests)  # A is computing the answer
    retried_while_running = await _answer(b, "/v1/chat/completions", body, "chat-key-1")
    answered = await first
    retried_after = await _answer(b, "/v1/chat/completions", body, "chat-key-1")

    assert answered[0] == 200
    assert answered[1]["choices"][0]["message"]["content"] == "answered once"
    assert retried_while_running == answered == retried_after  # status, body and session header
    assert answered[2] is not None
    assert len(upstream.requests) == 1


async def test_a_retried_response_on_another_instance_runs_once(node: MakeNode, upstream) -> None:
    (a, storage), (b, _) = await node("a"), await node("b")
    upstream.enqueue(slow("stored once", 0.5))

    first = asyncio.create_task(_answer(a, "/v1/responses", {"input": "hi"}, "resp-key-1"))
    await wait_for(lambda: upstream.requests)
    retried_while_running = await _answer(b, "/v1/responses", {"input": "hi"}, "resp-key-1")
    answered = await first
    retried_after = await _answer(b, "/v1/responses", {"input": "hi"}, "resp-key-1")

    assert answered[0] == 200 and answered[1]["id"].startswith("resp_")
    assert retried_while_running == answered == retried_after
    assert len(upstream.requests) == 1
    assert await storage.responses.count() == 1


async def test_another_payload_with_the_key_on_another_instance_runs_again(node: MakeNode, upstream) -> None:
    (a, _), (b, _) = await node("a"), await node("b")
    upstream.enqueue(text_reply("a"), text_reply("b"))
    first = await _answer(a, "/v1/chat/completions", {"messages": [{"role": "user", "content": "a"}]}, "k-2")
    second = await _answer(b, "/v1/chat/completions", {"messages": [{"role": "user", "content": "b"}]}, "k-2")
    assert first[1]["choices"][0]["message"]["content"] == "a"
    assert second[1]["choices"][0]["message"]["content"] == "b"
    assert len(upstream.requests) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_retry_still_waiting_past_the_bound_is_a_409_then_replays(
    node: MakeNode, upstream, stream: bool
) -> None:
    (a, _), (b, _) = await node("a"), await node("b", IdempotentAnswers(IdempotencyPolicy(wait=0.2)))
    upstream.enqueue(slow("answered late", 1.0))
    body = {"messages": [{"role": "user", "content": "slow one"}], "stream": stream}
    headers = {"Idempotency-Key": f"k-409-{stream}"}

    async def post(client: TestClient) -> tuple[int, str]:
        resp = await client.post("/v1/chat/completions", json=body, headers=headers)
        return resp.status, await resp.text()

    first = asyncio.create_task(post(a))
    await wait_for(lambda: upstream.requests)  # A is computing the answer
    busy = await b.post("/v1/chat/completions", json=body, headers=headers)
    assert busy.status == 409 and busy.headers["Retry-After"] == "1"
    error = (await busy.json())["error"]
    assert (error["code"], error["param"]) == ("idempotency_key_in_progress", "Idempotency-Key")
    answered = await first
    assert answered[0] == 200 and "answered late" in answered[1]
    assert await post(b) == answered  # once answered, the retry replays it
    assert len(upstream.requests) == 1


async def test_one_key_sent_to_two_instances_at_once_starts_one_run(node: MakeNode, upstream) -> None:
    """Runs claim the key before they start (issue 30: the same idempotency as chat), so of
    two instances given one key at once exactly one starts a run and the other replays it."""
    (a, _), (b, _) = await node("a"), await node("b")
    upstream.enqueue(slow("one run", 0.3))
    body = {"input": "go", "session_id": "raced-run"}
    answers = await asyncio.gather(*(_answer(client, "/v1/runs", body, "run-race-1") for client in (a, b, a, b)))
    assert {status for status, _, _ in answers} == {202}
    assert len({data["run_id"] for _, data, _ in answers}) == 1
    assert sorted(data["replayed"] for _, data, _ in answers) == [False, True, True, True]
    assert {session for _, _, session in answers} == {"raced-run"}
    run_id = answers[0][1]["run_id"]

    async def settled() -> bool:
        status = await (await b.get(f"/v1/runs/{run_id}")).json()
        return bool(status["status"] == "completed")

    await wait_for(settled)
    assert len(upstream.requests) == 1


# ---- one unsettled run per session ---------------------------------------------------------


async def _unsettled_runs(pg_url: str, session_id: str) -> int:
    """Counted in the database itself, not through an instance's view."""
    from hermes.store.postgres.connect import connect

    conn = await connect(pg_url)
    try:
        cursor = await conn.execute(
            "SELECT count(*) FROM hermes.runs WHERE session_id = %s AND status <> ALL(%s)",
            (session_id, sorted(TERMINAL_STATES)),
        )
        row = await cursor.fetchone()
    finally:
        await conn.close()
    assert row is not None
    return int(row[0])


async def test_two_starts_of_one_session_on_two_instances_admit_one(node: MakeNode, upstream, pg_url: str) -> None:
    (a, _), (b, _) = await node("a"), await node("b")
    for attempt in range(6):  # each race passes the pre-check on both instances about half the time
        session_id = f"race-{attempt}"
        upstream.enqueue(slow(f"run {attempt}", 1.0))  # the admitted run stays unsettled a while
        body = {"input": "go", "session_id": session_id}
        ra, rb = await asyncio.gather(a.post("/v1/runs", json=body), b.post("/v1/runs", json=body))
        by_status = {ra.status: await ra.json(), rb.status: await rb.json()}
        assert sorted(by_status) == [202, 409], by_status
        admitted, refused = by_status[202], by_status[409]["error"]
        assert refused["code"] == "run_already_active"
        assert refused.get("run_id") in (None, admitted["run_id"])
        assert await _unsettled_runs(pg_url, session_id) == 1
        run_id = admitted["run_id"]
        await wait_for(lambda run_id=run_id: _settled(a, run_id), timeout=10.0)


async def _settled(client: TestClient, run_id: str) -> bool:
    resp = await client.get(f"/v1/runs/{run_id}")
    return (await resp.json())["status"] in TERMINAL_STATES
