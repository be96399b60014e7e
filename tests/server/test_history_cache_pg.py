"""The per-process history cache on PostgreSQL, with two `hermes serve` apps on one database.

Each app keeps the model-ready history of a session between turns
(`hermes.agent.history.SessionHistories`); a write through the other instance (a turn,
an undo, a fork) must show in this one's next request to the model. Real apps from
`create_app` on loopback, each with its own PostgreSQL `Storage` on the same database;
the model is a `ScriptedUpstream` whose requests are read back.

Skips with the reason where PostgreSQL is missing (fails under CI=true): `pg_url` fixture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _runs_fixtures import FAST
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.server.http.app import create_app
from hermes.store.api import Storage
from hermes.testing.upstream import ScriptedUpstream, text_reply

KEY = "sk-cache"
ANSWER = "noted"


@dataclass
class Instance:
    client: TestClient
    storage: Storage
    agent: Agent


MakeInstance = Callable[[str], Awaitable[Instance]]


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        server.default = text_reply(ANSWER)
        yield server


@pytest.fixture
async def instance(pg_url: str, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[MakeInstance]:
    from hermes.store.postgres import open_postgres_storage

    made: list[Instance] = []

    async def make(name: str) -> Instance:
        settings = Settings.load(
            {"home": str(tmp_path / name), "model": "scripted-model", "server_key": KEY}, env={}
        )
        settings.ensure_home()
        storage = await open_postgres_storage(pg_url)
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=storage.sessions, model="scripted-model", tools=ToolRegistry(), options=FAST,
            system_prompt="You are a test agent.",
        )  # fmt: skip
        client = TestClient(TestServer(create_app(settings, storage=storage, agent=agent)))
        await client.start_server()
        one = Instance(client, storage, agent)
        made.append(one)
        return one

    yield make
    for one in made:
        await one.client.close()
        await one.agent.aclose()
        await one.storage.aclose()


async def _turn(node: Instance, upstream: ScriptedUpstream, session_id: str, text: str) -> list[Any]:
    """One chat turn in `session_id` through `node`: what the model was sent, after the prompt."""
    before = len(upstream.requests)
    resp = await node.client.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": text}]},
        headers={"X-Hermes-Session-Id": session_id, "Authorization": f"Bearer {KEY}"},
    )  # fmt: skip
    assert resp.status == 200, await resp.text()
    assert len(upstream.requests) == before + 1
    return [m["content"] for m in upstream.requests[-1].messages[1:]]


async def test_a_turn_through_the_other_instance_is_in_the_next_request(
    instance: MakeInstance, upstream: ScriptedUpstream
) -> None:
    a, b = await instance("a"), await instance("b")
    await _turn(a, upstream, "shared", "one")
    await _turn(a, upstream, "shared", "two")  # a's cache now holds the session
    assert await _turn(b, upstream, "shared", "three") == ["one", ANSWER, "two", ANSWER, "three"]
    assert await _turn(a, upstream, "shared", "four") == ["one", ANSWER, "two", ANSWER, "three", ANSWER, "four"]
    assert a.agent.histories is not None and a.agent.histories.reads["append"] >= 1


async def test_an_undo_through_the_other_instance_is_seen(instance: MakeInstance, upstream: ScriptedUpstream) -> None:
    a, b = await instance("a"), await instance("b")
    for text in ("one", "two", "three"):
        await _turn(a, upstream, "undone", text)
    await b.storage.sessions.undo_turns("undone", 1)
    assert await _turn(a, upstream, "undone", "again") == ["one", ANSWER, "two", ANSWER, "again"]


async def test_a_fork_is_sent_its_own_history_on_either_instance(
    instance: MakeInstance, upstream: ScriptedUpstream
) -> None:
    a, b = await instance("a"), await instance("b")
    for text in ("one", "two"):
        await _turn(a, upstream, "forked", text)
    first_answer = (await a.storage.sessions.get_messages("forked"))[1].id
    resp = await b.client.post(
        "/api/sessions/forked/fork", json={"at_message_id": first_answer}, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert resp.status == 201, await resp.text()
    fork_id = (await resp.json())["session"]["id"]
    assert await _turn(a, upstream, fork_id, "branch") == ["one", ANSWER, "branch"]
    assert await _turn(a, upstream, "forked", "three") == ["one", ANSWER, "two", ANSWER, "three"]
    assert await _turn(b, upstream, fork_id, "more") == ["one", ANSWER, "branch", ANSWER, "more"]
