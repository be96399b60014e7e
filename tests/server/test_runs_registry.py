"""The in-memory run registry: event log, followers, stop, approvals, retention, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from hermes.agent.types import ApprovalDecision, ApprovalRequest
from hermes.server.runs import ApprovalNotPending, RunRegistry
from hermes.store.run_store import open_run_store


@pytest.fixture
def store(tmp_path):
    s = open_run_store(tmp_path / "runs.db")
    yield s
    s.close()


async def _collect(run, after=0):
    return [(e.seq, e.name) async for e in run.follow(after)]


async def test_followers_each_get_every_event_and_resume_after_seq(store):
    registry = RunRegistry(store)
    run = registry.create(kind="run", session_id="s1", model="m")
    gate = asyncio.Event()

    async def turn():
        run.set_status("running")
        run.emit("message.delta", {"delta": "a"})
        await gate.wait()
        run.emit("message.delta", {"delta": "b"})
        run.set_status("completed", output="ab")
        run.emit("run.completed", {"output": "ab"})
        run.close_log()

    registry.start(run, turn())
    first = asyncio.create_task(_collect(run))
    second = asyncio.create_task(_collect(run))
    await asyncio.sleep(0)
    gate.set()
    expected = [(1, "message.delta"), (2, "message.delta"), (3, "run.completed")]
    assert await first == expected
    assert await second == expected
    assert await _collect(run, after=1) == expected[1:]
    assert await _collect(run, after=3) == []
    assert store.get(run.run_id).status == "completed"
    assert store.get(run.run_id).output == "ab"


async def test_stop_cancels_the_task_and_settles_cancelled(store):
    registry = RunRegistry(store)
    run = registry.create(kind="run", session_id=None, model=None)
    started = asyncio.Event()

    async def turn():
        run.set_status("running")
        started.set()
        await asyncio.Event().wait()

    registry.start(run, turn())
    await started.wait()
    assert registry.active_count == 1
    await registry.stop(run)
    assert run.status == "stopping"
    await registry.wait(run)
    assert run.status == "cancelled"
    assert run.closed and run.events[-1].name == "run.cancelled"
    assert store.get(run.run_id).status == "cancelled"
    assert registry.active_count == 0


async def test_settled_log_is_evicted_but_status_stays_in_store(store):
    registry = RunRegistry(store, retention=0.05)
    run = registry.create(kind="run", session_id=None, model=None)

    async def turn():
        run.set_status("completed", output="x")
        run.emit("run.completed", {})
        run.close_log()

    await registry.start(run, turn())
    assert registry.get(run.run_id) is run
    for _ in range(100):
        if registry.get(run.run_id) is None:
            break
        await asyncio.sleep(0.01)
    assert registry.get(run.run_id) is None
    assert registry.status(run.run_id)["status"] == "completed"


async def test_approval_resolves_or_times_out_to_deny():
    registry = RunRegistry(None)
    run = registry.create(kind="run", session_id="s", model=None)
    run.set_status("running")
    req = ApprovalRequest("s", "call_1", "terminal", "rm -rf /tmp/x", "recursive delete", "rm")
    waiter = asyncio.create_task(run.wait_approval(req, timeout=5))
    await asyncio.sleep(0)
    assert run.status == "waiting_for_approval"
    assert run.to_json()["approval"]["request_id"] == "call_1"
    with pytest.raises(ApprovalNotPending):
        run.resolve_approval(ApprovalDecision.ONCE, request_id="call_other")
    assert run.resolve_approval(ApprovalDecision.ONCE) == 1
    assert await waiter is ApprovalDecision.ONCE
    assert run.status == "running"
    with pytest.raises(ApprovalNotPending):
        run.resolve_approval(ApprovalDecision.ONCE)

    req2 = ApprovalRequest("s", "call_2", "terminal", "rm -rf /", "recursive delete", "rm")
    assert await run.wait_approval(req2, timeout=0.01) is ApprovalDecision.DENY
    assert run.status == "running"


async def test_shutdown_interrupts_live_runs_in_store(store):
    registry = RunRegistry(store)
    run = registry.create(kind="run", session_id=None, model=None)
    started = asyncio.Event()

    async def turn():
        run.set_status("running")
        started.set()
        await asyncio.Event().wait()

    registry.start(run, turn())
    await started.wait()
    assert await registry.shutdown() == [run.run_id]
    assert run.status == "interrupted"
    assert store.get(run.run_id).status == "interrupted"
    assert registry.closing


async def test_capacity():
    registry = RunRegistry(None, max_concurrent=1)
    assert not registry.at_capacity
    run = registry.create(kind="run", session_id=None, model=None)
    assert registry.at_capacity
    run.set_status("completed")
    assert not registry.at_capacity
