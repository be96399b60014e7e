"""The run registry over a real SQLite storage: journals, subscriptions, stop, approvals,
retention, shutdown, and the control messages other instances relay."""

from __future__ import annotations

import asyncio

import pytest

from hermes.agent.types import ApprovalDecision, ApprovalRequest
from hermes.runs.registry import ApprovalNotPending, RunRegistry
from hermes.store.records import ControlMessage
from hermes.store.sqlite.assemble import open_sqlite_storage


@pytest.fixture
async def storage(tmp_path):
    opened = open_sqlite_storage(tmp_path)
    yield opened
    await opened.aclose()


async def _collect(storage, run_id, after=0):
    async with storage.run_events.subscribe(run_id, after) as subscription:
        return [(e.seq, e.name) async for e in subscription]


async def test_subscribers_each_get_every_event_and_resume_after_seq(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id="s1", model="m")
    gate = asyncio.Event()

    async def turn():
        run.set_status("running")
        run.emit("message.delta", {"delta": "a"})
        await gate.wait()
        run.emit("message.delta", {"delta": "b"})
        run.set_status("completed", output="ab")
        run.emit("run.completed", {"output": "ab"}, final=True)

    registry.start(run, turn())
    first = asyncio.create_task(_collect(storage, run.run_id))
    second = asyncio.create_task(_collect(storage, run.run_id))
    await asyncio.sleep(0)
    gate.set()
    expected = [(1, "message.delta"), (2, "message.delta"), (3, "run.completed")]
    assert await asyncio.wait_for(first, 5) == expected
    assert await asyncio.wait_for(second, 5) == expected
    assert await _collect(storage, run.run_id, after=1) == expected[1:]
    assert await _collect(storage, run.run_id, after=3) == []
    assert await run.journal.flush(5)
    record = await storage.runs.get(run.run_id)
    assert record.status == "completed"
    assert record.output == "ab"
    assert record.owner_instance == storage.instance_id


async def test_a_run_is_stored_before_create_returns(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id=None, model=None)
    assert (await storage.runs.get(run.run_id)).status == "queued"


async def test_stop_cancels_the_task_and_settles_cancelled(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id=None, model=None)
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
    assert run.closed
    assert await _collect(storage, run.run_id) == [(1, "run.settled")]
    (settled,) = await storage.run_events.read_after(run.run_id)
    assert settled.final and settled.data["status"] == "cancelled"
    assert (await storage.runs.get(run.run_id)).status == "cancelled"
    assert registry.active_count == 0


async def test_a_relayed_stop_settles_the_run_and_answers_its_status(storage):
    registry = RunRegistry(storage)
    await storage.control.serve(registry.handle_control)
    run = await registry.create(kind="run", session_id=None, model=None)
    started = asyncio.Event()

    async def turn():
        run.set_status("running")
        started.set()
        await asyncio.Event().wait()

    registry.start(run, turn())
    await started.wait()
    reply = await storage.control.request(storage.instance_id, ControlMessage("stop", run.run_id), timeout=5)
    assert reply.ok and reply.data["status"] == "stopping"
    await registry.wait(run)
    assert run.status == "cancelled"
    unknown = await storage.control.request(storage.instance_id, ControlMessage("stop", "run_nope"), timeout=5)
    assert not unknown.ok and unknown.code == "run_not_active"
    odd = await storage.control.request(storage.instance_id, ControlMessage("reboot", run.run_id), timeout=5)
    assert not odd.ok and odd.code == "unknown_op"
    elsewhere = await storage.control.request("inst_" + "0" * 24, ControlMessage("stop", run.run_id), timeout=5)
    assert not elsewhere.ok and elsewhere.code == "run_not_active"


async def test_settled_run_is_evicted_but_status_stays_in_store(storage):
    registry = RunRegistry(storage, retention=0.05)
    run = await registry.create(kind="run", session_id=None, model=None)

    async def turn():
        run.set_status("completed", output="x")
        run.emit("run.completed", {}, final=True)

    await registry.start(run, turn())
    assert registry.get(run.run_id) is run
    for _ in range(200):
        if registry.get(run.run_id) is None and not await storage.run_events.read_after(run.run_id):
            break
        await asyncio.sleep(0.01)
    assert registry.get(run.run_id) is None
    assert (await registry.status(run.run_id))["status"] == "completed"
    assert await storage.run_events.read_after(run.run_id) == []  # in-process events go with it


async def test_approval_resolves_or_times_out_to_deny(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id="s", model=None)
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


async def test_a_relayed_approval_answers_the_pending_one(storage):
    registry = RunRegistry(storage)
    await storage.control.serve(registry.handle_control)
    run = await registry.create(kind="run", session_id="s", model=None)
    run.set_status("running")
    req = ApprovalRequest("s", "call_1", "terminal", "rm -rf /tmp/x", "recursive delete", "rm")
    waiter = asyncio.create_task(run.wait_approval(req, timeout=5))
    await asyncio.sleep(0)
    message = ControlMessage("approval", run.run_id, {"choice": "deny", "request_id": "call_1"})
    reply = await storage.control.request(storage.instance_id, message, timeout=5)
    assert reply.ok and reply.data == {"choice": "deny", "resolved": 1, "request_id": "call_1"}
    assert await waiter is ApprovalDecision.DENY
    again = await storage.control.request(storage.instance_id, message, timeout=5)
    assert not again.ok and again.code == "approval_not_pending"


async def test_shutdown_interrupts_live_runs_in_store(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id=None, model=None)
    started = asyncio.Event()

    async def turn():
        run.set_status("running")
        started.set()
        await asyncio.Event().wait()

    registry.start(run, turn())
    await started.wait()
    assert await registry.shutdown() == [run.run_id]
    assert run.status == "interrupted"
    assert (await storage.runs.get(run.run_id)).status == "interrupted"
    events = await storage.run_events.read_after(run.run_id)
    assert events[-1].name == "run.settled" and events[-1].final
    assert events[-1].data["status"] == "interrupted"
    assert registry.closing




async def test_a_run_settled_elsewhere_supersedes_its_journal_and_stops(storage):
    registry = RunRegistry(storage)
    run = await registry.create(kind="run", session_id=None, model=None)
    started = asyncio.Event()

    async def turn():
        run.set_status("running")
        run.emit("run.started", {})
        started.set()
        await asyncio.Event().wait()

    registry.start(run, turn())
    await started.wait()
    assert await run.journal.flush(5)
    # Another instance's sweeper settled it: the stream ends, the row says interrupted.
    await storage.runs.mark_interrupted([run.run_id])
    await storage.run_events.append(run.run_id, "run.interrupted", {"status": "interrupted"}, final=True)
    run.set_status("running")  # a late write of this instance
    run.emit("message.delta", {"delta": "late"})
    await registry.wait(run)
    assert run.journal.superseded
    assert (await storage.runs.get(run.run_id)).status == "interrupted"
    events = await storage.run_events.read_after(run.run_id)
    assert [e.name for e in events] == ["run.started", "run.interrupted"]
