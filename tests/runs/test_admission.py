"""Admission of background runs over a real SQLite storage: who is refused, what is
written (nothing, when refused), and that a turn's slot is given back when it ends."""

from __future__ import annotations

import asyncio

import pytest

from hermes.agent.events import TurnCompleted, TurnStarted
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import TurnRequest, TurnResult
from hermes.errors import RunAlreadyActive, ServiceClosing, TooManyTurns
from hermes.runs.admission import Admission, TurnLimiter
from hermes.runs.registry import Run, RunRegistry
from hermes.store.sqlite.assemble import open_sqlite_storage


class GatedEngine:
    """Each turn waits for `gate`, then answers "done"; records the requests it got."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.requests: list[TurnRequest] = []

    def start(self, request: TurnRequest, *, inline: bool = False) -> TurnHandle:
        self.requests.append(request)

        async def produce(handle: TurnHandle) -> None:
            await handle.emit(TurnStarted(session_id=request.session_id or "", model="m"))
            await self.gate.wait()
            await handle.emit(TurnCompleted(TurnResult(request.session_id or "", "completed", "done")))

        return TurnHandle(produce, inline=inline)


class Counter:
    def __init__(self) -> None:
        self.started = 0
        self.outcomes: list[str | None] = []

    def turn_started(self) -> None:
        self.started += 1

    def note_outcome(self, error_code: str | None, error: str | None, at: float) -> None:
        self.outcomes.append(error_code)


@pytest.fixture
async def storage(tmp_path):
    opened = open_sqlite_storage(tmp_path)
    yield opened
    await opened.aclose()


def _admission(storage, engine, *, limit=0, yolo=False):
    counter = Counter()
    admission = Admission(RunRegistry(storage), TurnLimiter(limit), engine, counter, yolo=yolo)
    return admission, counter


async def _start(admission: Admission, session_id: str = "s1") -> Run:
    return await admission.start(
        kind="run", turn=TurnRequest(input="hi"), session_id=session_id
    )


async def test_an_admitted_run_is_driven_to_its_end_and_gives_its_slot_back(storage):
    engine = GatedEngine()
    admission, counter = _admission(storage, engine, limit=1, yolo=True)
    run = await _start(admission)
    assert admission.limiter.active == 1
    assert await admission.active_run_id("s1") == run.run_id
    engine.gate.set()
    await admission.registry.wait(run)
    assert run.status == "completed"
    sent = engine.requests[0]
    assert (sent.session_id, sent.source, sent.yolo) == ("s1", "api_server", True)
    await asyncio.sleep(0)  # the task's done callbacks run on the next loop pass
    assert admission.limiter.active == 0
    assert counter.started == 1
    assert counter.outcomes == [None]
    assert await admission.active_run_id("s1") is None
    assert await run.journal.flush(5)


async def test_a_second_start_of_a_busy_session_is_refused_and_writes_nothing(storage):
    engine = GatedEngine()
    admission, counter = _admission(storage, engine)
    run = await _start(admission)
    with pytest.raises(RunAlreadyActive) as refused:
        await _start(admission)
    assert refused.value.run_id == run.run_id
    assert refused.value.code == "run_already_active"
    assert (await storage.runs.latest_for_session("s1")).run_id == run.run_id
    engine.gate.set()
    await admission.registry.wait(run)
    assert await run.journal.flush(5)
    assert len(engine.requests) == 1
    assert counter.started == 1


async def test_beyond_the_limit_a_turn_is_refused_before_anything_is_written(storage):
    engine = GatedEngine()
    admission, _ = _admission(storage, engine, limit=1)
    first = await _start(admission, "s1")
    with pytest.raises(TooManyTurns) as refused:
        await _start(admission, "s2")
    assert refused.value.limit == 1
    assert str(refused.value) == "Too many concurrent runs (max 1)"
    assert await storage.runs.latest_for_session("s2") is None
    engine.gate.set()
    await admission.registry.wait(first)
    assert await first.journal.flush(5)


async def test_a_closing_instance_admits_nothing(storage):
    engine = GatedEngine()
    admission, _ = _admission(storage, engine)
    await admission.registry.shutdown(timeout=1.0)
    with pytest.raises(ServiceClosing):
        await _start(admission)
    assert engine.requests == []
    assert await storage.runs.latest_for_session("s1") is None
