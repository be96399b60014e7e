"""TurnHandle, the one turn handle: events, stop inside the turn's task, close, crash."""

from __future__ import annotations

import asyncio

import pytest

from hermes.agent.events import TextDelta, TurnCompleted, TurnStarted
from hermes.agent.turn_handle import QUEUE_SIZE, TurnCrashed, TurnHandle
from hermes.agent.types import TurnResult
from hermes.error_codes import INTERRUPTED, SERVER_SHUTDOWN


class Producer:
    """Emits `count` deltas (pausing `pause` s before each); like the engine, answers a stop
    with TurnCompleted(status="interrupted", error_code=<the code>)."""

    def __init__(self, count: int, pause: float = 0.0, fail: bool = False) -> None:
        self.count, self.pause, self.fail = count, pause, fail
        self.finished = asyncio.Event()
        self.produced = 0

    async def __call__(self, handle: TurnHandle) -> None:
        try:
            await handle.emit(TurnStarted(session_id="s", model="m"))
            for i in range(self.count):
                if handle.stop_requested:
                    result = TurnResult("s", "interrupted", "text", error_code=handle.stop_code)
                    await handle.emit(TurnCompleted(result))
                    return
                if self.pause:
                    await asyncio.sleep(self.pause)
                self.produced += 1
                await handle.emit(TextDelta(f"{i} "))
            if self.fail:
                raise RuntimeError("store broke")
            await handle.emit(TurnCompleted(TurnResult("s", "completed", "text")))
        finally:
            self.finished.set()


class Waiter:
    """Listens for a stop while it waits for something that never comes (an upstream, a tool)."""

    def __init__(self, *, listen: bool = True) -> None:
        self.listen = listen
        self.waiting = asyncio.Event()
        self.cancelled = False

    async def __call__(self, handle: TurnHandle) -> None:
        await handle.emit(TurnStarted(session_id="s", model="m"))
        if self.listen:
            handle.listen()
        try:
            self.waiting.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            if not handle.unlisten():
                raise
        await handle.emit(TurnCompleted(TurnResult("s", "interrupted", "", error=handle.stop_message)))


async def test_events_end_with_the_result() -> None:
    turn = TurnHandle(Producer(3))
    events = [event async for event in turn.events()]
    await turn.aclose()
    assert [type(e).__name__ for e in events] == ["TurnStarted", "TextDelta", "TextDelta", "TextDelta", "TurnCompleted"]
    assert turn.result is not None and turn.result.status == "completed"


async def test_stop_delivers_the_final_interrupted_result() -> None:
    producer = Producer(1000, pause=0.01)
    turn = TurnHandle(producer)
    seen = 0
    async with asyncio.timeout(10):
        async for event in turn.events():
            if isinstance(event, TextDelta):
                seen += 1
                if seen == 2:
                    turn.stop(SERVER_SHUTDOWN, "the server is shutting down")
    await turn.aclose()
    assert turn.result is not None and turn.result.status == "interrupted"
    assert turn.result.error_code == SERVER_SHUTDOWN
    assert producer.produced < 1000


async def test_a_stop_cancels_the_turns_own_task_while_it_listens_never_the_consumer() -> None:
    waiter = Waiter()
    turn = TurnHandle(waiter)
    events = []

    async def consume() -> None:
        async for event in turn.events():
            events.append(event)

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(waiter.waiting.wait(), 10)
    turn.stop()
    await asyncio.wait_for(consumer, 10)
    assert waiter.cancelled and not consumer.cancelled()
    assert isinstance(events[-1], TurnCompleted) and events[-1].result.error == "interrupted by the user"
    assert turn.stop_code == INTERRUPTED and turn.task.cancelling() == 0
    await turn.aclose()


async def test_aclose_without_a_consumer_lets_the_producer_finish() -> None:
    producer = Producer(QUEUE_SIZE * 4)  # more than the queue holds: emit() waits
    turn = TurnHandle(producer)
    for _ in range(50):
        await asyncio.sleep(0)
    assert not turn.done  # waiting at the full queue
    async with asyncio.timeout(10):
        await turn.aclose()
    assert turn.done and producer.finished.is_set()
    assert turn.result is not None and turn.result.status == "interrupted"


async def test_aclose_cancels_a_producer_that_does_not_settle_within_the_grace() -> None:
    waiter = Waiter(listen=False)  # a stop never reaches it
    turn = TurnHandle(waiter)
    await asyncio.wait_for(waiter.waiting.wait(), 10)
    async with asyncio.timeout(10):
        await turn.aclose(grace=0.01)
    assert turn.task.cancelled() and waiter.cancelled
    assert turn.result is None


async def test_a_producer_exception_reaches_the_consumer_as_turn_crashed() -> None:
    turn = TurnHandle(Producer(1, fail=True))
    with pytest.raises(TurnCrashed, match="store broke"):
        async for _ in turn.events():
            pass
    await turn.aclose()
    assert turn.result is None


async def test_batches_hand_over_what_queued_up_at_once() -> None:
    """A consumer that was behind gets every queued event in one list, in order."""
    producer = Producer(5)
    turn = TurnHandle(producer)
    await producer.finished.wait()  # all 7 events are queued: nobody has read yet
    batches = [batch async for batch in turn.batches()]
    await turn.aclose()
    assert [[type(e).__name__ for e in batch] for batch in batches] == [
        ["TurnStarted", *["TextDelta"] * 5, "TurnCompleted"]
    ]


async def test_batches_are_bounded_by_the_queue_and_keep_the_order() -> None:
    producer = Producer(QUEUE_SIZE * 3)
    turn = TurnHandle(producer)
    seen: list[str] = []
    async for batch in turn.batches():
        assert 1 <= len(batch) <= QUEUE_SIZE
        seen += [e.text for e in batch if isinstance(e, TextDelta)]
    await turn.aclose()
    assert seen == [f"{i} " for i in range(QUEUE_SIZE * 3)]


async def test_batches_raise_the_crash_after_the_events() -> None:
    turn = TurnHandle(Producer(2, fail=True))
    seen: list[object] = []
    with pytest.raises(TurnCrashed):
        async for batch in turn.batches():
            seen += batch
    await turn.aclose()
    assert [type(e).__name__ for e in seen] == ["TurnStarted", "TextDelta", "TextDelta"]


async def test_wait_returns_the_result_and_observers_still_see_every_event() -> None:
    """wait() reads no events: a producer that emits more than the queue holds never waits."""
    producer = Producer(QUEUE_SIZE * 4)
    turn = TurnHandle(producer)
    seen: list[str] = []
    turn.observe(lambda event: seen.append(type(event).__name__))
    async with asyncio.timeout(10):
        result = await turn.wait()
    assert result is turn.result and result is not None and result.status == "completed"
    assert seen == ["TurnStarted", *["TextDelta"] * (QUEUE_SIZE * 4), "TurnCompleted"]
    assert turn.done and producer.finished.is_set()
    await turn.aclose()


async def test_wait_raises_the_crash() -> None:
    turn = TurnHandle(Producer(2, fail=True))
    with pytest.raises(TurnCrashed, match="store broke"):
        await turn.wait()
    await turn.aclose()
    assert turn.result is None


async def test_a_stop_while_waiting_ends_the_wait_with_the_interrupted_result() -> None:
    waiter = Waiter()
    turn = TurnHandle(waiter)
    waiting = asyncio.create_task(turn.wait())
    await asyncio.wait_for(waiter.waiting.wait(), 10)
    turn.stop()
    result = await asyncio.wait_for(waiting, 10)
    assert waiter.cancelled and result is not None and result.error == "interrupted by the user"
    await turn.aclose()


async def test_an_inline_turn_runs_in_the_waiting_task_and_a_stop_from_elsewhere_is_taken_back() -> None:
    waiter = Waiter()
    ran_in: list[tuple[asyncio.Task | None, TurnHandle]] = []

    async def produce(handle: TurnHandle) -> None:
        ran_in.append((asyncio.current_task(), handle))
        await waiter(handle)

    async def consumer() -> TurnResult | None:
        handle = TurnHandle(produce, inline=True)
        try:
            return await handle.wait()
        finally:
            await handle.aclose()  # after the end: returns at once, never waits on its own task

    before = len(asyncio.all_tasks())
    task = asyncio.create_task(consumer())
    await waiter.waiting.wait()
    (ran, handle), = ran_in
    assert ran is task and len(asyncio.all_tasks()) == before + 1  # no task of its own
    handle.stop(SERVER_SHUTDOWN, "shutting down")  # from another task: a disconnect, the shutdown
    result = await asyncio.wait_for(task, 5)
    assert waiter.cancelled and result is not None and result.status == "interrupted"
    assert result.error == "shutting down" and handle.done
    assert task.cancelling() == 0 and not task.cancelled()  # the stop's cancel was taken back


async def test_an_inline_turn_that_raises_is_a_turn_crashed_from_wait() -> None:
    async def produce(handle: TurnHandle) -> None:
        raise RuntimeError("store broke")

    handle = TurnHandle(produce, inline=True)
    with pytest.raises(TurnCrashed):
        await handle.wait()
    assert handle.done
    await handle.aclose()


def test_an_inline_turn_needs_a_task() -> None:
    async def produce(handle: TurnHandle) -> None:
        return None

    with pytest.raises(RuntimeError):
        TurnHandle(produce, inline=True)
