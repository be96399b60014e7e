"""TurnRun, the one turn runner: events, stop through the interrupt handle, close, crash."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from hermes.agent.events import AgentEvent, TextDelta, TurnCompleted, TurnStarted
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.types import TurnRequest, TurnResult
from hermes.error_codes import SERVER_SHUTDOWN
from hermes.runs.turn import QUEUE_SIZE, TurnCrashed, TurnRun


class Engine:
    """Yields `count` deltas (pausing `pause` s before each); like the engine, answers the
    interrupt handle with TurnCompleted(status="interrupted", error_code=<the code>)."""

    def __init__(self, count: int, pause: float = 0.0, fail: bool = False) -> None:
        self.count, self.pause, self.fail = count, pause, fail
        self.finished = asyncio.Event()
        self.produced = 0

    async def run_turn(
        self, request: TurnRequest, *, interrupt: TurnInterrupt | None = None
    ) -> AsyncIterator[AgentEvent]:
        try:
            yield TurnStarted(session_id="s", model="m")
            for i in range(self.count):
                if interrupt is not None and interrupt.requested:
                    yield TurnCompleted(TurnResult("s", "interrupted", "text", error_code=interrupt.code))
                    return
                if self.pause:
                    await asyncio.sleep(self.pause)
                self.produced += 1
                yield TextDelta(f"{i} ")
            if self.fail:
                raise RuntimeError("store broke")
            yield TurnCompleted(TurnResult("s", "completed", "text"))
        finally:
            self.finished.set()


async def test_events_end_with_the_result() -> None:
    turn = TurnRun(Engine(3), TurnRequest(input="hi"))
    events = [event async for event in turn.events()]
    await turn.aclose()
    assert [type(e).__name__ for e in events] == ["TurnStarted", "TextDelta", "TextDelta", "TextDelta", "TurnCompleted"]
    assert turn.result is not None and turn.result.status == "completed"


async def test_stop_delivers_the_final_interrupted_result() -> None:
    engine = Engine(1000, pause=0.01)
    turn = TurnRun(engine, TurnRequest(input="hi"))
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
    assert engine.produced < 1000


async def test_aclose_without_a_consumer_lets_the_engine_finish() -> None:
    engine = Engine(QUEUE_SIZE * 4)  # more than the queue holds: the pump blocks on put
    turn = TurnRun(engine, TurnRequest(input="hi"))
    for _ in range(50):
        await asyncio.sleep(0)
    assert not turn.done  # blocked on the full queue
    async with asyncio.timeout(10):
        await turn.aclose()
    assert turn.done and engine.finished.is_set()


async def test_an_engine_exception_reaches_the_consumer_as_turn_crashed() -> None:
    turn = TurnRun(Engine(1, fail=True), TurnRequest(input="hi"))
    with pytest.raises(TurnCrashed, match="store broke"):
        async for _ in turn.events():
            pass
    await turn.aclose()
    assert turn.result is None
