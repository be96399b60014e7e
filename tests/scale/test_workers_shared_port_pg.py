"""`hermes serve --workers 2 --database-url URL`: a run behind the shared port.

Every request goes over a fresh connection, so the kernel (SO_REUSEPORT) hands it to
either worker: the run's status, its stop and its events must not depend on which one
answers. `/health/detailed` names the answering worker. A worker killed with SIGKILL is
restarted by the parent; the runs it owned end `interrupted` through the shared port.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from _serve_procs import Frame, Serve, Sleepers, wait_until

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

STOP_DEADLINE = 3.0
"""Seconds within which a stop is reported everywhere and the tool process is gone."""
DEAD_OWNER_DEADLINE = 60.0
"""The issue's bound for a dead owner's runs to end `interrupted`."""
WAIT = 60.0
READS = 12
"""Fresh-connection reads per check: the chance that all of them land on one worker is 2**-11."""


def _names(frames: list[Frame]) -> list[str]:
    return [frame.event for frame in frames]


async def test_a_run_behind_the_shared_port_is_readable_stoppable_and_resumable_on_any_worker(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    (pool,) = await serve("pool", workers=2)
    assert len(set(pool.worker_pids)) == 2 and pool.process.pid not in pool.worker_pids
    instances: dict[int, str] = {}

    async def both_workers_answered() -> bool:
        status, body, _ = await pool.call("GET", "/health/detailed")
        assert status == 200, body
        instances[body["pid"]] = body["instance_id"]
        return len(instances) == 2

    await wait_until(both_workers_answered, timeout=WAIT, what=lambda: instances)
    assert set(instances) == set(pool.worker_pids)
    assert len(set(instances.values())) == 2  # two instances, each with its own lease

    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]), text_reply("late"))
    run_id = await pool.start_run({"input": "sleep a while"})
    await wait_until(sleepers.pids, timeout=WAIT, what=pool.process.output)
    for _ in range(READS):
        status = await pool.run_status(run_id)
        assert status["status"] == "running", status
    head = await pool.events(run_id, until=lambda f: f.event == "tool.started")
    assert _names(head) == ["run.started", "tool.started"]

    code, body, _ = await pool.call("POST", f"/v1/runs/{run_id}/stop")
    assert code == 200, body
    assert body["status"] in ("stopping", "cancelled")
    seen: list[Any] = []

    async def cancelled_on_every_read() -> bool:
        seen[:] = [(await pool.run_status(run_id))["status"] for _ in range(4)]
        return seen == ["cancelled"] * 4 and not sleepers.pids()

    await wait_until(cancelled_on_every_read, timeout=STOP_DEADLINE, what=lambda: (seen, sleepers.pids()))
    for _ in range(READS):
        assert (await pool.run_status(run_id))["status"] == "cancelled"

    whole = await pool.events(run_id)
    assert _names(whole)[-1] == "run.cancelled" and _names(whole)[:2] == ["run.started", "tool.started"]
    assert [f.id for f in whole] == list(range(1, len(whole) + 1))
    for _ in range(READS // 2):
        resumed = await pool.events(run_id, headers={"Last-Event-ID": str(head[-1].id)})
        assert [(f.id, f.data) for f in resumed] == [(f.id, f.data) for f in whole[len(head) :]]
        after = await pool.events(run_id, query="?after=1")
        assert [(f.id, f.data) for f in after] == [(f.id, f.data) for f in whole[1:]]
    assert len(upstream.requests) == 1


def _ancestors(pid: int) -> list[int]:
    """The parent chain of `pid` (nearest first), read from /proc."""
    chain = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


async def test_kill_9_of_the_owning_worker_ends_the_run_interrupted_behind_the_shared_port(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    (pool,) = await serve("pool", workers=2, lease_ttl=3)
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]))
    run_id = await pool.start_run({"input": "sleep a while"})
    session_id = (await pool.run_status(run_id))["session_id"]
    pids = await wait_until(sleepers.pids, timeout=WAIT, what=pool.process.output)
    owner = [pid for pid in _ancestors(pids[0]) if pid in pool.worker_pids]
    assert len(owner) == 1, (_ancestors(pids[0]), pool.worker_pids)

    os.kill(owner[0], signal.SIGKILL)
    await pool.process.wait_for_line("hermes serve: worker ", timeout=WAIT)  # the parent restarts it
    statuses: list[str] = []

    async def interrupted() -> bool:
        statuses.append((await pool.run_status(run_id))["status"])
        return statuses[-1] == "interrupted"

    await wait_until(interrupted, timeout=DEAD_OWNER_DEADLINE, what=lambda: (statuses[-3:], pool.process.output()))
    for _ in range(READS // 2):
        frames = await pool.events(run_id)
        assert _names(frames) == ["run.started", "tool.started", "run.interrupted"]
        assert (await pool.run_status(run_id))["status"] == "interrupted"
    code, messages, _ = await pool.call("GET", f"/api/sessions/{session_id}/messages")
    assert code == 200, messages
    assert [(m["role"], m["tool_call_id"]) for m in messages["data"]] == [
        ("user", None), ("assistant", None), ("tool", "call_sleep"),
    ]  # fmt: skip
    await wait_until(lambda: not sleepers.pids(), timeout=WAIT, what=sleepers.pids)
