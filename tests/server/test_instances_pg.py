"""Two `hermes serve` apps on one PostgreSQL database: any instance serves any request.

Each instance is the real app from `create_app` with its own PostgreSQL `Storage` on the
same database, served by a real aiohttp server on loopback and driven over HTTP; the
model is a `ScriptedUpstream`. Everything is in PostgreSQL: the engine's sessions and
turns (`storage.sessions`), runs, their events, receipts, responses and leases.

Skips with the reason where PostgreSQL is missing (fails under CI=true): `pg_url` fixture.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _runs_fixtures import FAST, Frame, read_frames, tools, wait_for
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.tools.terminal import TERMINAL_TOOL
from hermes.config import Settings
from hermes.server.http.app import create_app
from hermes.store.api import Storage
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

STOP_DEADLINE = 3.0
"""Seconds within which a stop is reported by every instance (the pinned Stop detail)."""


@dataclass
class Instance:
    client: TestClient
    storage: Storage

    async def get(self, path: str, **kwargs: Any) -> Any:
        return await self.client.get(path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Any:
        return await self.client.post(path, **kwargs)

    async def status(self, run_id: str) -> dict[str, Any]:
        resp = await self.client.get(f"/v1/runs/{run_id}")
        assert resp.status == 200, await resp.text()
        data: dict[str, Any] = await resp.json()
        return data


def _settings(home: Path, lease_ttl: float) -> Settings:
    return Settings.load({"home": str(home), "model": "scripted-model", "instance_lease_ttl": lease_ttl}, env={})


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


MakeInstance = Callable[..., Awaitable[Instance]]


@pytest.fixture
async def instance(pg_url: str, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[MakeInstance]:
    from hermes.store.postgres import open_postgres_storage

    made: list[tuple[Instance, Agent]] = []

    async def make(name: str, *, lease_ttl: float = 30.0) -> Instance:
        home = tmp_path / name
        settings = _settings(home, lease_ttl)
        settings.ensure_home()
        storage = await open_postgres_storage(pg_url, instance_lease_ttl=lease_ttl)
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=storage.sessions,
            model="scripted-model",
            tools=ToolRegistry([*tools(), TERMINAL_TOOL]),
            options=FAST,
            system_prompt="You are a test agent.",
        )
        client = TestClient(TestServer(create_app(settings, storage=storage, agent=agent)))
        await client.start_server()
        one = Instance(client, storage)
        made.append((one, agent))
        return one

    yield make
    for one, agent in made:
        await one.client.close()
        await agent.aclose()
        await one.storage.aclose()


async def _start(node: Instance, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    resp = await node.post("/v1/runs", json=body, headers=headers or {})
    assert resp.status == 202, await resp.text()
    data: dict[str, Any] = await resp.json()
    return data


def _names(frames: list[Frame]) -> list[str]:
    return [str(f.data["event"]) for f in frames]


# ---- sleeper processes (the terminal tool) ----------------------------------------------


def _sleep_arg(pid_file: Path) -> str:
    """A sleep duration unique to this test, so its process can be found in /proc."""
    return f"30.{abs(hash(str(pid_file))) % 10**9:09d}"


def _sleepers(pid_file: Path) -> list[int]:
    wanted = b"sleep\0" + _sleep_arg(pid_file).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    stat = (entry / "stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


# ---- the tests ------------------------------------------------------------------------------


async def test_events_of_a_run_on_a_stream_from_b_and_resume_there(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(text_reply("one two three four"))
    run_id = (await _start(a, {"input": "count"}))["run_id"]

    frames = await read_frames(await b.get(f"/v1/runs/{run_id}/events"))
    names = _names(frames)
    assert names[0] == "run.started" and names[-1] == "run.completed"
    assert "".join(f.data["delta"] for f in frames if f.data["event"] == "message.delta") == "one two three four"
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))

    resumed = await read_frames(await b.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "2"}))
    assert [(f.id, f.data) for f in resumed] == [(f.id, f.data) for f in frames[2:]]
    after = await read_frames(await a.get(f"/v1/runs/{run_id}/events?after=3"))
    assert [f.id for f in after] == [f.id for f in frames[3:]]

    for node in (a, b):
        status = await node.status(run_id)
        assert status["status"] == "completed" and status["output"] == "one two three four"
        for path in (f"/v1/runs/run_{'0' * 32}", f"/v1/runs/run_{'0' * 32}/events"):
            assert (await node.get(path)).status == 404
        assert (await node.post(f"/v1/runs/run_{'0' * 32}/stop")).status == 404


async def test_a_live_stream_on_b_follows_a_run_of_a(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(tool_reply([call("nap", {"seconds": 0.3}, id="call_nap")]), text_reply("rested"))
    run_id = (await _start(a, {"input": "rest"}))["run_id"]
    frames = await read_frames(await b.get(f"/v1/runs/{run_id}/events"))
    names = _names(frames)
    assert names.index("tool.started") < names.index("tool.completed") < names.index("run.completed")
    assert names[-1] == "run.completed"


async def test_stop_sent_to_b_cancels_the_run_of_a_and_its_process(instance, upstream, tmp_path) -> None:
    a, b = await instance("a"), await instance("b")
    pid_file = tmp_path / "sleeper.pid"
    command = f"echo $$ > {pid_file}; exec sleep {_sleep_arg(pid_file)}"
    upstream.enqueue(tool_reply([call("terminal", {"command": command}, id="call_sleep")]), text_reply("late"))
    run_id = (await _start(a, {"input": "sleep"}))["run_id"]
    await wait_for(lambda: bool(_sleepers(pid_file)), timeout=30)
    events_on_b = asyncio.create_task(read_frames(await b.get(f"/v1/runs/{run_id}/events")))

    resp = await b.post(f"/v1/runs/{run_id}/stop")
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["status"] in ("stopping", "cancelled")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_DEADLINE
    while True:
        statuses = [(await node.status(run_id))["status"] for node in (a, b)]
        if statuses == ["cancelled", "cancelled"] and not _sleepers(pid_file):
            break
        assert loop.time() < deadline, f"after {STOP_DEADLINE} s: {statuses}, sleepers {_sleepers(pid_file)}"
        await asyncio.sleep(0.05)
    frames = await asyncio.wait_for(events_on_b, 10)
    assert _names(frames)[-1] == "run.cancelled"
    # A settled run answers a later stop with its status, on either instance.
    again = await b.post(f"/v1/runs/{run_id}/stop")
    assert (await again.json())["status"] == "cancelled"


async def test_approval_sent_to_b_resolves_the_run_on_a(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(
        tool_reply([call("risky", {"command": "rm -r build"}, id="call_risky")]),
        text_reply("All done."),
    )
    run_id = (await _start(a, {"input": "clean up"}))["run_id"]
    events = await b.get(f"/v1/runs/{run_id}/events")
    first = await read_frames(events, until=lambda f: f.data["event"] == "approval.request")
    assert first[-1].data["request_id"] == "call_risky"
    status = await b.status(run_id)
    assert status["status"] == "waiting_for_approval"
    assert status["approval"]["request_id"] == "call_risky"  # the owner's live view, relayed

    resp = await b.post(f"/v1/runs/{run_id}/approval", json={"choice": "approve"})
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {
        "object": "hermes.run.approval_response", "run_id": run_id, "choice": "once", "resolved": 1,
    }
    names = _names(await read_frames(events))
    assert names.index("approval.responded") < names.index("tool.completed")
    assert names[-1] == "run.completed"
    assert (await a.status(run_id))["status"] == "completed"
    late = await b.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
    assert late.status == 409
    assert (await late.json())["error"]["code"] == "approval_not_active"


async def test_an_approval_with_nothing_pending_is_a_409_relayed_from_the_owner(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(tool_reply([call("nap", {"seconds": 30}, id="call_nap")]))
    run_id = (await _start(a, {"input": "rest"}))["run_id"]
    events = await b.get(f"/v1/runs/{run_id}/events")
    await read_frames(events, until=lambda f: f.data["event"] == "tool.started")
    resp = await b.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "approval_not_pending"
    events.close()


async def test_an_idempotency_receipt_claimed_on_a_is_honoured_on_b(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(text_reply("once"))
    headers = {"Idempotency-Key": "shared-key-1"}
    first = await _start(a, {"input": "go"}, headers)
    replay = await b.post("/v1/runs", json={"input": "go"}, headers=headers)
    assert replay.status == 202
    assert replay.headers["Idempotency-Replayed"] == "true"
    body = await replay.json()
    assert body["run_id"] == first["run_id"] and body["replayed"] is True
    conflict = await b.post("/v1/runs", json={"input": "something else"}, headers=headers)
    assert conflict.status == 409
    assert (await conflict.json())["error"]["code"] == "idempotency_key_conflict"
    await read_frames(await b.get(f"/v1/runs/{first['run_id']}/events"))
    assert len(upstream.requests) == 1  # one run, one model call


async def test_responses_chain_across_instances_and_a_delete_is_seen_everywhere(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(text_reply("Blue."), text_reply("You asked about the sky."))
    first = await (await a.post("/v1/responses", json={"input": "What colour is the sky?"})).json()
    rid = first["id"]
    assert (await (await b.get(f"/v1/responses/{rid}")).json())["id"] == rid

    second = await b.post("/v1/responses", json={"input": "What did I ask?", "previous_response_id": rid})
    assert second.status == 200, await second.text()
    sent = upstream.requests[-1].body["messages"]
    assert any(m.get("content") == "What colour is the sky?" for m in sent)
    assert any(m.get("content") == "Blue." for m in sent)

    deleted = await a.client.delete(f"/v1/responses/{rid}")
    assert deleted.status == 200
    for node in (a, b):
        gone = await node.get(f"/v1/responses/{rid}")
        assert gone.status == 404
        chained = await node.post("/v1/responses", json={"input": "again", "previous_response_id": rid})
        assert chained.status == 404
        assert (await chained.json())["error"]["code"] == "previous_response_not_found"
    assert (await b.client.delete(f"/v1/responses/{rid}")).status == 404


async def test_runs_of_a_dead_owner_end_interrupted_on_every_instance(instance, upstream, pg_url) -> None:
    a = await instance("a")  # default ttl: its own sweeper stays out of the way
    b = await instance("b", lease_ttl=0.6)  # sweeps every 0.2 s
    upstream.enqueue(tool_reply([call("nap", {"seconds": 30}, id="call_nap")]))
    run_id = (await _start(a, {"input": "rest"}))["run_id"]
    on_a = await a.get(f"/v1/runs/{run_id}/events")
    await read_frames(on_a, until=lambda f: f.data["event"] == "tool.started")
    on_b = asyncio.create_task(read_frames(await b.get(f"/v1/runs/{run_id}/events")))

    # A dies: its heartbeat stops and its lease runs out (the run task itself is left
    # alone, as a frozen or partitioned process would leave it).
    await _stop_heartbeat(a)
    await _expire_lease(pg_url, a.storage.instance_id)

    await wait_for(lambda: on_b.done(), timeout=15)
    frames_b = on_b.result()
    assert _names(frames_b)[-1] == "run.interrupted"
    assert frames_b[-1].data["status"] == "interrupted"
    frames_a = await asyncio.wait_for(read_frames(on_a), 10)
    assert _names(frames_a)[-1] == "run.interrupted"
    assert (await b.status(run_id))["status"] == "interrupted"  # A is "dead": only B answers
    record = await b.storage.runs.get(run_id)
    assert record is not None and record.status == "interrupted"
    resume = {"Last-Event-ID": str(frames_b[-2].id)}
    tail = await read_frames(await b.get(f"/v1/runs/{run_id}/events", headers=resume))
    assert _names(tail) == ["run.interrupted"]


async def test_health_detailed_names_the_answering_instance(instance) -> None:
    a, b = await instance("a"), await instance("b")
    seen = []
    for node in (a, b):
        resp = await node.get("/health/detailed")
        text = await resp.text()
        assert resp.status == 200, text
        data = await resp.json()
        assert data["pid"] == os.getpid()
        assert data["instance_id"] == node.storage.instance_id
        assert data["storage"] == {"backend": "postgres"}
        assert data["checks"] == {"session_store": "ok", "response_store": "ok", "run_store": "ok"}
        assert "postgresql://" not in text and "127.0.0.1" not in text
        seen.append(data["instance_id"])
    assert seen[0] != seen[1]
    leases = {lease.instance_id for lease in await a.storage.leases.list_instances()}
    assert set(seen) <= leases


async def _stop_heartbeat(node: Instance) -> None:
    name = f"hermes-lease-{node.storage.instance_id}"
    tasks = [task for task in asyncio.all_tasks() if task.get_name() == name]
    assert tasks, "the instance keeps no lease task"
    for task in tasks:
        task.cancel()


async def _expire_lease(url: str, instance_id: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE hermes.instances SET expires_at = expires_at - 3600, heartbeat_at = heartbeat_at - 3600 "
            "WHERE instance_id = %s",
            (instance_id,),
        )


async def test_a_session_chat_stream_resumes_on_another_instance(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(text_reply("Hello from A."))
    created = await a.post("/api/sessions", json={"title": "shared"})
    assert created.status == 201, await created.text()
    session_id = (await created.json())["session"]["id"]
    assert (await b.get(f"/api/sessions/{session_id}")).status == 200  # sessions REST is shared

    first = await read_frames(await a.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "hi"}))
    assert [f.event for f in first][-1] == "done"
    resume = {"Last-Event-ID": "2"}
    tail = await read_frames(await b.post(f"/api/sessions/{session_id}/chat/stream", headers=resume))
    assert [(f.id, f.event, f.data) for f in tail] == [(f.id, f.event, f.data) for f in first[2:]]
    run_id = first[0].data["run_id"]
    same = await read_frames(await b.get(f"/v1/runs/{run_id}/events", headers=resume))
    assert [(f.id, f.event, f.data) for f in same] == [(f.id, f.event, f.data) for f in first[2:]]


async def test_a_stop_for_a_silent_owner_is_503_until_its_lease_runs_out(
    instance, upstream, pg_url, monkeypatch
) -> None:
    import hermes.server.rest.runs as runs_handlers

    monkeypatch.setattr(runs_handlers, "CONTROL_TIMEOUT", 0.5)
    a, b = await instance("a"), await instance("b")
    upstream.enqueue(tool_reply([call("nap", {"seconds": 30}, id="call_nap")]))
    run_id = (await _start(a, {"input": "rest"}))["run_id"]
    events = await b.get(f"/v1/runs/{run_id}/events")
    await read_frames(events, until=lambda f: f.data["event"] == "tool.started")

    await a.storage.control.aclose()  # A stops answering; its lease still holds
    silent = await b.post(f"/v1/runs/{run_id}/stop")
    assert silent.status == 503
    assert (await silent.json())["error"]["code"] == "run_owner_unavailable"
    assert (await b.status(run_id))["status"] == "running"

    await _stop_heartbeat(a)
    await _expire_lease(pg_url, a.storage.instance_id)  # now A is dead
    settled = await b.post(f"/v1/runs/{run_id}/stop")
    assert settled.status == 200, await settled.text()
    assert (await settled.json())["status"] == "interrupted"
    rest = await asyncio.wait_for(read_frames(events), 10)
    assert _names(rest)[-1] == "run.interrupted"


async def test_a_session_busy_on_one_instance_is_busy_on_every_instance(instance, upstream) -> None:
    a, b = await instance("a"), await instance("b")
    created = await a.post("/api/sessions", json={"title": "shared"})
    session_id = (await created.json())["session"]["id"]
    upstream.enqueue(tool_reply([call("nap", {"seconds": 30}, id="call_nap")]))
    stream = await a.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "rest"})
    frames = await read_frames(stream, until=lambda f: f.event == "tool.started")
    run_id = frames[0].data["run_id"]

    for attempt in (
        b.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "me too"}),
        b.post(f"/api/sessions/{session_id}/chat", json={"message": "me too"}),
        b.client.delete(f"/api/sessions/{session_id}"),
    ):
        resp = await attempt
        assert resp.status == 409, await resp.text()
        error = (await resp.json())["error"]
        assert error["code"] == "run_already_active" and error["run_id"] == run_id

    assert (await b.post(f"/v1/runs/{run_id}/stop")).status == 200
    await wait_for(lambda: _settled(a, run_id), timeout=STOP_DEADLINE + 2)
    # b reads the stored row, which the owner's journal writes just after settling.
    await wait_for(lambda: _settled(b, run_id), timeout=STOP_DEADLINE + 2)
    upstream.enqueue(text_reply("Now it is free."))
    free = await b.post(f"/api/sessions/{session_id}/chat", json={"message": "me now"})
    assert free.status == 200, await free.text()


async def _settled(node: Instance, run_id: str) -> bool:
    return (await node.status(run_id))["status"] == "cancelled"
