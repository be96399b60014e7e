"""Channel, the turn's event queue: order, backpressure, wake-ups, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from hermes.agent._channel import Channel


async def test_items_come_out_in_order() -> None:
    channel: Channel[int] = Channel(4)
    for i in range(4):
        channel.put_nowait(i)
    assert channel.full()
    assert [channel.get_nowait() for _ in range(4)] == [0, 1, 2, 3]
    assert len(channel) == 0


async def test_a_waiting_getter_is_woken_by_a_put() -> None:
    channel: Channel[str] = Channel(2)
    getter = asyncio.create_task(channel.get())
    await asyncio.sleep(0)  # the getter waits
    assert not getter.done()
    channel.put_nowait("a")
    assert await getter == "a"


async def test_a_full_channel_makes_the_producer_wait_until_the_consumer_takes() -> None:
    channel: Channel[int] = Channel(1)
    await channel.put(1)
    putter = asyncio.create_task(channel.put(2))
    await asyncio.sleep(0)
    assert not putter.done() and len(channel) == 1
    assert await channel.get() == 1
    await putter
    assert channel.get_nowait() == 2


async def test_clear_wakes_a_waiting_producer() -> None:
    channel: Channel[int] = Channel(1)
    channel.put_nowait(1)
    putter = asyncio.create_task(channel.put(2))
    await asyncio.sleep(0)
    channel.clear()
    await putter
    assert [channel.get_nowait()] == [2]


@pytest.mark.parametrize("side", ["get", "put"])
async def test_a_cancelled_wait_loses_nothing_and_leaves_no_waiter(side: str) -> None:
    channel: Channel[int] = Channel(1)
    if side == "put":
        channel.put_nowait(1)
    waiter = asyncio.create_task(channel.get() if side == "get" else channel.put(2))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    if side == "get":
        channel.put_nowait(7)  # no stale getter swallows it
        assert await channel.get() == 7
    else:
        assert len(channel) == 1 and channel.get_nowait() == 1  # the cancelled put added nothing
        await channel.put(3)  # and a new put does not trip over the old waiter
        assert channel.get_nowait() == 3


async def test_a_getter_woken_then_cancelled_leaves_the_item() -> None:
    channel: Channel[int] = Channel(2)
    getter = asyncio.create_task(channel.get())
    await asyncio.sleep(0)
    channel.put_nowait(5)  # wakes the getter ...
    getter.cancel()  # ... which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await getter
    assert channel.get_nowait() == 5
