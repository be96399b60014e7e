"""Two instances on one PostgreSQL database see each other's writes at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from hermes.store.api import Storage
from hermes.store.records import NewMessage, StoredRunEvent

WAIT = 10.0


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[tuple[Storage, Storage]]:
    from hermes.store.postgres import open_postgres_storage

    first = await open_postgres_storage(pg_url)
    second = await open_postgres_storage(pg_url)
    try:
        yield first, second
    finally:
        await first.aclose()
        await second.aclose()


async def test_sessions_and_responses_are_shared(two: tuple[Storage, Storage]) -> None:
    a, b = two
    session = await a.sessions.create_session(source="api_server", title="shared")
    await a.sessions.append_message(session.id, NewMessage(role="user", content="hello from a"))
    assert [m.content for m in await b.sessions.get_messages(session.id)] == ["hello from a"]
    assert [hit.session.id for hit in await b.sessions.search("hello")] == [session.id]
    await a.responses.put("resp_x", {"response": {"id": "resp_x"}})
    assert await b.responses.get("resp_x") == {"response": {"id": "resp_x"}}
    assert await b.responses.delete("resp_x")
    assert await a.responses.get("resp_x") is None


async def test_live_events_cross_instances_through_notify(two: tuple[Storage, Storage]) -> None:
    a, b = two
    await a.run_events.append("run_x", "run.started")
    received: list[StoredRunEvent] = []
    first = asyncio.Event()

    async def follow() -> None:
        async with b.run_events.subscribe("run_x") as subscription:
            async for event in subscription:
                received.append(event)
                first.set()

    follower = asyncio.create_task(follow())
    await asyncio.wait_for(first.wait(), WAIT)
    for index in range(5):
        await a.run_events.append("run_x", "text.delta", {"delta": str(index)})
    await a.run_events.append("run_x", "run.completed", final=True)
    await asyncio.wait_for(follower, WAIT)
    assert [event.seq for event in received] == [1, 2, 3, 4, 5, 6, 7]


async def test_notify_wakes_a_subscriber_well_before_polling(pg_url: str) -> None:
    """With polling effectively off, only the notification can deliver the live event."""
    from hermes.store.postgres import open_postgres_storage
    from hermes.store.postgres.events import PgRunEventStore

    writer = await open_postgres_storage(pg_url)
    reader = await open_postgres_storage(pg_url)
    try:
        assert isinstance(reader.run_events, PgRunEventStore)
        reader.run_events._poll_interval = 3600.0
        async with reader.run_events.subscribe("run_n") as subscription:
            assert await subscription.next(timeout=0.05) is None  # the LISTEN is now in place
            await writer.run_events.append("run_n", "tick")
            event = await subscription.next(timeout=WAIT)
        assert event is not None and event.seq == 1
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_idempotency_claims_race_across_instances(two: tuple[Storage, Storage]) -> None:
    a, b = two
    results = await asyncio.gather(
        *(store.receipts.claim_receipt("k", "key", f"fp{i}", f"run_{i}") for i, store in enumerate([a, b] * 4))
    )
    assert sum(result is None for result in results) == 1


async def test_a_dropped_listen_connection_delays_no_event(pg_url: str) -> None:
    """The LISTEN connection is killed; the store reconnects and re-reads, so the next
    event still arrives without waiting for the (here hour-long) poll."""
    import psycopg

    from hermes.store.postgres import open_postgres_storage
    from hermes.store.postgres.events import PgRunEventStore
    from hermes.store.postgres.listener import APPLICATION_PREFIX

    writer = await open_postgres_storage(pg_url)
    reader = await open_postgres_storage(pg_url)
    try:
        assert isinstance(reader.run_events, PgRunEventStore)
        reader.run_events._poll_interval = 3600.0
        async with reader.run_events.subscribe("run_d") as subscription:
            assert await subscription.next(timeout=0.05) is None
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
                cursor = await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'LISTEN %%' AND application_name = %s",
                    (APPLICATION_PREFIX + reader.instance_id,),
                )
                assert [row[0] for row in await cursor.fetchall()] == [True]  # the reader's listener
            await writer.run_events.append("run_d", "tick")
            event = await subscription.next(timeout=WAIT)
        assert event is not None and event.seq == 1
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_each_instance_holds_one_listen_connection(two: tuple[Storage, Storage], pg_url: str) -> None:
    """Run events and control messages of an instance share its one LISTEN connection:
    with a subscription open and the control channel serving, each instance has exactly
    one LISTEN connection, and both kinds of notification still arrive through it."""
    import psycopg

    from hermes.store.postgres.listener import APPLICATION_PREFIX
    from hermes.store.records import ControlMessage, ControlReply

    a, b = two

    async def echo(message: ControlMessage) -> ControlReply:
        return ControlReply(ok=True, data={"run_id": message.run_id})

    for storage in (a, b):
        await storage.control.serve(echo)
    async with b.run_events.subscribe("run_l") as subscription:
        assert await subscription.next(timeout=0.05) is None  # b's LISTEN is in place
        reply = await a.control.request(b.instance_id, ControlMessage("status", "run_l"), timeout=WAIT)
        assert reply.ok and reply.data == {"run_id": "run_l"}
        await a.run_events.append("run_l", "tick")
        event = await subscription.next(timeout=WAIT)
        assert event is not None and event.seq == 1
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            cursor = await admin.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN %%' GROUP BY application_name"
            )
            counts = dict(await cursor.fetchall())
    assert counts == {APPLICATION_PREFIX + a.instance_id: 1, APPLICATION_PREFIX + b.instance_id: 1}


async def test_one_unsettled_run_per_session_across_instances(two: tuple[Storage, Storage]) -> None:
    """Starts of one session racing on two instances: the database admits exactly one."""
    import time

    from hermes.errors import SessionBusy
    from hermes.store.records import RunRecord

    async def start(storage: Storage, run_id: str) -> bool:
        now = time.time()
        try:
            await storage.runs.put(RunRecord(run_id, "queued", now, now, session_id="s_race"))
        except SessionBusy:
            return False
        return True

    admitted = await asyncio.gather(*(start(storage, f"run_{i}") for i, storage in enumerate([*two] * 4)))
    assert sum(admitted) == 1
