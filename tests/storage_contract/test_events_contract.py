"""Run events: append with seq, read after a seq, subscribe to history then live events."""

from __future__ import annotations

import asyncio

import pytest

from hermes.errors import StoreError
from hermes.store.api import Storage
from hermes.store.records import StoredRunEvent

WAIT = 10.0
"""Upper bound for any wait in these tests (they normally take milliseconds)."""


def seqs(events: list[StoredRunEvent]) -> list[int]:
    return [event.seq for event in events]


async def test_append_numbers_events_per_run(storage: Storage) -> None:
    events = storage.run_events
    first = await events.append("run_a", "run.started", {"model": "m"})
    assert (first.seq, first.name, first.data, first.final) == (1, "run.started", {"model": "m"}, False)
    await events.append("run_b", "run.started")
    await events.append("run_a", "text.delta", {"delta": "hi \x00 🎉"})
    last = await events.append("run_a", "run.completed", {"status": "completed"}, final=True)
    assert last.seq == 3 and last.final
    stored = await events.read_after("run_a")
    assert seqs(stored) == [1, 2, 3] and stored[1].data == {"delta": "hi \x00 🎉"} and stored[2].final
    assert seqs(await events.read_after("run_a", 1)) == [2, 3]
    assert seqs(await events.read_after("run_a", 1, limit=1)) == [2]
    assert await events.read_after("run_a", 3) == []
    assert seqs(await events.read_after("run_b")) == [1]
    assert await events.read_after("nope") == []
    with pytest.raises(StoreError, match="ended"):
        await events.append("run_a", "late")


async def test_concurrent_appends_get_distinct_seqs(storage: Storage) -> None:
    appended = await asyncio.gather(*(storage.run_events.append("run_c", "tick", {"i": i}) for i in range(20)))
    assert sorted(seqs(list(appended))) == list(range(1, 21))
    assert seqs(await storage.run_events.read_after("run_c")) == list(range(1, 21))


async def test_subscribe_gives_history_then_live_events_until_final(storage: Storage) -> None:
    events = storage.run_events
    for index in range(3):
        await events.append("run_s", "tick", {"i": index})
    received: list[StoredRunEvent] = []
    started = asyncio.Event()

    async def consume() -> None:
        async with events.subscribe("run_s", after=1) as subscription:
            async for event in subscription:
                received.append(event)
                if len(received) == 2:
                    started.set()

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), WAIT)
    await events.append("run_s", "tick", {"i": 3})
    await events.append("run_s", "run.completed", final=True)
    await asyncio.wait_for(consumer, WAIT)
    assert seqs(received) == [2, 3, 4, 5] and received[-1].final


async def test_next_with_timeout_returns_none_and_close_ends(storage: Storage) -> None:
    events = storage.run_events
    subscription = events.subscribe("run_t")
    assert await subscription.next(timeout=0.05) is None
    await events.append("run_t", "tick")
    event = await asyncio.wait_for(subscription.next(timeout=WAIT), WAIT)
    assert event is not None and event.seq == 1 and subscription.last_seq == 1
    waiting = asyncio.create_task(subscription.next())
    await asyncio.sleep(0)
    await subscription.aclose()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, WAIT)


async def test_subscription_after_the_final_event_ends_at_once(storage: Storage) -> None:
    await storage.run_events.append("run_f", "tick")
    await storage.run_events.append("run_f", "run.failed", final=True)
    async with storage.run_events.subscribe("run_f", after=0) as subscription:
        got = [event async for event in subscription]
    assert seqs(got) == [1, 2]
    async with storage.run_events.subscribe("run_f", after=2) as subscription:
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(subscription.next(timeout=WAIT), WAIT)


async def test_delete_and_prune(storage: Storage) -> None:
    events = storage.run_events
    await events.append("old", "tick", ts=100.0)
    await events.append("old", "run.completed", final=True, ts=101.0)
    await events.append("open", "tick", ts=100.0)
    await events.append("fresh", "run.completed", final=True)
    assert await events.prune_events(before=1000.0) == 2
    assert await events.read_after("old") == []
    assert seqs(await events.read_after("open")) == [1]
    await events.delete_events("fresh")
    assert await events.read_after("fresh") == []
