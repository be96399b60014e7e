"""Two real `hermes serve --database-url URL` processes on one PostgreSQL database.

Any instance serves any request (issue 11): `previous_response_id` chaining and deleted
responses through the real `openai` SDK, sessions REST, a run's events read and resumed
on either process, stop and approval routed to the owner, idempotency receipts, and the
kill -9 of the owning process (its runs end `interrupted` and their turns are repaired on
the survivor, where the session goes on).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from _serve_procs import SERVER_KEY, Frame, Node, Serve, Sleepers, read_frames, wait_until

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

STOP_DEADLINE = 3.0
"""Seconds within which a stop is reported by every instance and the tool process is gone
(the issue's pinned Stop detail)."""
DEAD_OWNER_DEADLINE = 60.0
"""The issue's bound for a dead owner's runs to end `interrupted` (with a 3 s lease: seconds)."""
WAIT = 60.0
"""Bound for conditions that take no time on an idle machine (a tool process starting)."""


def _names(frames: list[Frame]) -> list[str]:
    return [frame.event for frame in frames]


def _count(n: int) -> Callable[[Frame], bool]:
    """An `until` that stops reading after `n` frames."""
    seen = [0]

    def enough(_frame: Frame) -> bool:
        seen[0] += 1
        return seen[0] >= n

    return enough


def _sdk(node: Node) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=node.base + "/v1", api_key=SERVER_KEY, max_retries=0, timeout=60)


async def test_responses_chain_across_processes_and_a_delete_is_seen_by_both(
    serve: Serve, upstream: ScriptedUpstream
) -> None:
    a, b = await serve("a", "b")
    upstream.enqueue(text_reply("Blue."), text_reply("You asked about the sky."), text_reply("About the sky."))
    async with _sdk(a) as on_a, _sdk(b) as on_b:
        raw = await on_a.responses.with_raw_response.create(model="hermes-agent", input="What colour is the sky?")
        session_id = raw.headers["X-Hermes-Session-Id"]
        first = raw.parse()
        assert first.output_text == "Blue."

        raw_second = await on_b.responses.with_raw_response.create(
            model="hermes-agent", input="What did I ask?", previous_response_id=first.id
        )
        second = raw_second.parse()
        assert second.output_text == "You asked about the sky."
        assert raw_second.headers["X-Hermes-Session-Id"] == session_id  # the chain stays in one session
        assert len(upstream.requests) == 2
        sent = [(m.get("role"), m.get("content")) for m in upstream.requests[1].messages]
        assert ("user", "What colour is the sky?") in sent
        assert ("assistant", "Blue.") in sent
        assert sent[-1] == ("user", "What did I ask?")

        fetched = await on_b.responses.retrieve(first.id)
        assert fetched.id == first.id and fetched.output_text == "Blue."

        # A streamed turn on A chains from B's response; B serves the stored result.
        async with on_a.responses.stream(
            model="hermes-agent", input="And before that?", previous_response_id=second.id
        ) as stream:
            third = await stream.get_final_response()
        assert third.output_text == "About the sky."
        sent = [(m.get("role"), m.get("content")) for m in upstream.requests[2].messages]
        assert ("assistant", "You asked about the sky.") in sent and sent[-1] == ("user", "And before that?")
        assert (await on_b.responses.retrieve(third.id)).output_text == "About the sky."

        status, listed, _ = await b.call("GET", "/api/sessions")
        assert status == 200, listed
        assert session_id in [row["id"] for row in listed["data"]]
        status, messages, _ = await b.call("GET", f"/api/sessions/{session_id}/messages")
        assert status == 200, messages
        assert [(m["role"], m["content"]) for m in messages["data"]] == [
            ("user", "What colour is the sky?"),
            ("assistant", "Blue."),
            ("user", "What did I ask?"),
            ("assistant", "You asked about the sky."),
            ("user", "And before that?"),
            ("assistant", "About the sky."),
        ]

        await on_a.responses.delete(first.id)
        for client in (on_b, on_a):
            with pytest.raises(openai.NotFoundError):
                await client.responses.retrieve(first.id)
        with pytest.raises(openai.NotFoundError):
            await on_b.responses.create(model="hermes-agent", input="again", previous_response_id=first.id)
        with pytest.raises(openai.NotFoundError):
            await on_b.responses.delete(first.id)
        assert (await on_a.responses.retrieve(second.id)).id == second.id  # only the one is gone
    assert len(upstream.requests) == 3


async def test_run_events_read_and_resumed_on_both_processes_are_each_event_once(
    serve: Serve, upstream: ScriptedUpstream
) -> None:
    a, b = await serve("a", "b")
    text = " ".join(f"w{i}" for i in range(30))
    upstream.enqueue(text_reply(text, chunk_delay=0.05))  # a run that is live while it is read
    run_id = await a.start_run({"input": "count"})

    first = await b.events(run_id, until=_count(3))  # then B's client leaves
    assert [f.id for f in first] == [1, 2, 3] and first[0].event == "run.started"
    second = await a.events(run_id, headers={"Last-Event-ID": str(first[-1].id)}, until=_count(4))
    assert len(second) == 4
    rest = await b.events(run_id, query=f"?after={second[-1].id}")

    union = first + second + rest
    assert [f.id for f in union] == list(range(1, len(union) + 1)), [f.id for f in union]
    assert _names(union)[-1] == "run.completed" and _names(union).count("run.completed") == 1
    assert "".join(str(f.data["delta"]) for f in union if f.event == "message.delta") == text
    assert {f.data["run_id"] for f in union} == {run_id}
    for node in (a, b):
        whole = await node.events(run_id)
        assert [(f.id, f.data) for f in whole] == [(f.id, f.data) for f in union]
        status = await node.run_status(run_id)
        assert status["status"] == "completed" and status["output"] == text


async def test_stop_sent_to_b_cancels_the_run_on_a_and_its_tool_process(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    a, b = await serve("a", "b")
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]), text_reply("late"))
    run_id = await a.start_run({"input": "sleep a while"})
    await wait_until(sleepers.pids, timeout=WAIT, what=lambda: a.process.output())
    assert (await b.run_status(run_id))["status"] == "running"
    on_b = asyncio.create_task(b.events(run_id))

    status, body, _ = await b.call("POST", f"/v1/runs/{run_id}/stop")
    assert status == 200, body
    assert body["status"] in ("stopping", "cancelled")
    statuses: list[str] = []

    async def settled_everywhere() -> bool:
        statuses[:] = [(await node.run_status(run_id))["status"] for node in (a, b)]
        return statuses == ["cancelled", "cancelled"] and not sleepers.pids()

    await wait_until(settled_everywhere, timeout=STOP_DEADLINE, what=lambda: (statuses, sleepers.pids()))
    frames = await asyncio.wait_for(on_b, WAIT)
    assert _names(frames)[-1] == "run.cancelled"
    assert "tool.started" in _names(frames)
    for node in (a, b):  # a settled run answers a later stop with its status
        status, again, _ = await node.call("POST", f"/v1/runs/{run_id}/stop")
        assert (status, again["status"]) == (200, "cancelled")
    assert len(upstream.requests) == 1  # the model was not asked again after the stop


async def test_an_idempotency_key_used_on_a_gives_the_same_run_on_b(serve: Serve, upstream: ScriptedUpstream) -> None:
    a, b = await serve("a", "b")
    upstream.enqueue(text_reply("once"))
    key = {"Idempotency-Key": "scale-key-1"}
    run_id = await a.start_run({"input": "go"}, key)

    status, replay, headers = await b.call("POST", "/v1/runs", json={"input": "go"}, headers=key)
    assert status == 202, replay
    assert replay["run_id"] == run_id and replay["replayed"] is True
    assert headers["Idempotency-Replayed"] == "true"

    status, conflict, _ = await b.call("POST", "/v1/runs", json={"input": "something else"}, headers=key)
    assert status == 409, conflict
    assert conflict["error"]["code"] == "idempotency_key_conflict"

    assert _names(await b.events(run_id))[-1] == "run.completed"
    status, again, _ = await a.call("POST", "/v1/runs", json={"input": "go"}, headers=key)
    assert (status, again["run_id"], again["status"]) == (202, run_id, "completed")
    assert len(upstream.requests) == 1  # one run, one model call


def _transcript_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What makes this transcript unusable as model input (empty: a valid transcript)."""
    problems = []
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    asked = set()
    for m in messages:
        for tool_call in m.get("tool_calls") or []:
            asked.add(tool_call["id"])
            if tool_call["id"] not in answered:
                problems.append(f"tool call {tool_call['id']} has no result")
    problems += [f"result for unknown call {i}" for i in answered - asked]
    if not messages or messages[0]["role"] != "user":
        problems.append("does not start with the user message")
    return problems


async def test_kill_9_of_the_owner_ends_its_run_interrupted_on_the_survivor(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    a, b = await serve("a", "b", lease_ttl=3)
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]))
    run_id = await a.start_run({"input": "sleep a while"})
    session_id = (await b.run_status(run_id))["session_id"]

    async with b.session() as client, client.get(f"/v1/runs/{run_id}/events") as live_on_b:
        assert live_on_b.status == 200
        head = await asyncio.wait_for(read_frames(live_on_b, until=lambda f: f.event == "tool.started"), WAIT)
        await wait_until(sleepers.pids, timeout=WAIT, what=lambda: a.process.output())

        os.kill(a.process.pid, signal.SIGKILL)
        await wait_until(lambda: a.process.proc.poll() is not None, timeout=WAIT, what="A did not die")
        statuses: list[str] = []

        async def interrupted_on_b() -> bool:
            statuses.append((await b.run_status(run_id))["status"])
            return statuses[-1] == "interrupted"

        await wait_until(
            interrupted_on_b, timeout=DEAD_OWNER_DEADLINE, what=lambda: (statuses[-3:], b.process.output())
        )
        tail = await asyncio.wait_for(read_frames(live_on_b), WAIT)

    live = head + tail
    assert _names(live)[-1] == "run.interrupted", _names(live)
    assert _names(live).count("run.interrupted") == 1
    assert [f.id for f in live] == list(range(1, len(live) + 1))
    assert live[-1].data["status"] == "interrupted"
    fresh = await b.events(run_id)
    assert [(f.id, f.data) for f in fresh] == [(f.id, f.data) for f in live]
    resumed = await b.events(run_id, headers={"Last-Event-ID": str(live[-2].id)})
    assert _names(resumed) == ["run.interrupted"]

    messages: list[dict[str, Any]] = []

    async def repaired() -> bool:
        status, body, _ = await b.call("GET", f"/api/sessions/{session_id}/messages")
        assert status == 200, body
        messages[:] = body["data"]
        calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        return calls == ["call_sleep"] and not _transcript_problems(messages)

    await wait_until(repaired, timeout=WAIT, what=lambda: (messages, _transcript_problems(messages)))
    assert [(m["role"], m["tool_call_id"]) for m in messages] == [
        ("user", None), ("assistant", None), ("tool", "call_sleep"),
    ]  # fmt: skip
    assert messages[0]["content"] == "sleep a while"
    # The tool's process does not outlive its owner (the supervisor's parent-death signal).
    await wait_until(lambda: not sleepers.pids(), timeout=WAIT, what=sleepers.pids)
    assert len(upstream.requests) == 1

    # The repaired session goes on on the survivor; the model gets a valid transcript.
    upstream.enqueue(text_reply("The sleep was cut short."))
    next_run = await b.start_run({"input": "what happened?", "session_id": session_id})
    assert _names(await b.events(next_run))[-1] == "run.completed"
    sent = upstream.requests[1].messages
    assert [(m["role"], m.get("tool_call_id")) for m in sent if m["role"] != "system"] == [
        ("user", None), ("assistant", None), ("tool", "call_sleep"), ("user", None),
    ]  # fmt: skip
    assert sent[-1]["content"] == "what happened?"


async def test_an_approval_sent_to_b_lets_the_tool_of_a_run_on_a_go_ahead(
    serve: Serve, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    a, b = await serve("a", "b")
    doomed = tmp_path / "a" / "build"  # A's working directory is tmp_path / "a"
    (doomed / "out").mkdir(parents=True)
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm -r build"}, id="call_rm")]), text_reply("Removed."))
    run_id = await a.start_run({"input": "clean up"})

    async with b.session() as client, client.get(f"/v1/runs/{run_id}/events") as live_on_b:
        assert live_on_b.status == 200
        head = await asyncio.wait_for(read_frames(live_on_b, until=lambda f: f.event == "approval.request"), WAIT)
        assert head[-1].data["request_id"] == "call_rm"
        waiting = await b.run_status(run_id)
        assert waiting["status"] == "waiting_for_approval"
        assert waiting["approval"]["request_id"] == "call_rm"
        assert doomed.exists()

        status, body, _ = await b.call("POST", f"/v1/runs/{run_id}/approval", json={"choice": "once"})
        assert status == 200, body
        assert (body["choice"], body["resolved"]) == ("once", 1)
        tail = await asyncio.wait_for(read_frames(live_on_b), WAIT)

    names = _names(head + tail)
    assert names.index("approval.responded") < names.index("tool.completed") < names.index("run.completed")
    assert names[-1] == "run.completed"
    assert not doomed.exists()
    assert (await a.run_status(run_id))["output"] == "Removed."
    status, late, _ = await a.call("POST", f"/v1/runs/{run_id}/approval", json={"choice": "once"})
    assert status == 409 and late["error"]["code"] == "approval_not_active"


async def test_a_session_with_a_run_on_a_is_busy_on_b_too(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    a, b = await serve("a", "b")
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]), text_reply("late"))
    run_id = await a.start_run({"input": "sleep a while"})
    session_id = (await a.run_status(run_id))["session_id"]
    await wait_until(sleepers.pids, timeout=WAIT, what=lambda: a.process.output())

    for node in (a, b):
        status, one, _ = await node.call("GET", f"/api/sessions/{session_id}")
        assert status == 200, one
        assert (one["session"]["active_run_id"], one["session"]["active_run_status"]) == (run_id, "running"), node
        status, listed, _ = await node.call("GET", "/api/sessions")
        assert [row["active_run_id"] for row in listed["data"] if row["id"] == session_id] == [run_id], node
        for method, path, body in (
            ("POST", "/v1/runs", {"input": "meanwhile", "session_id": session_id}),
            ("POST", f"/api/sessions/{session_id}/chat", {"message": "meanwhile"}),
            ("POST", f"/api/sessions/{session_id}/chat/stream", {"message": "meanwhile"}),
            ("DELETE", f"/api/sessions/{session_id}", None),
        ):
            status, refused, _ = await node.call(method, path, json=body)
            assert status == 409, (node.name, path, refused)
            assert (refused["error"]["code"], refused["error"]["run_id"]) == ("run_already_active", run_id)

    status, body, _ = await a.call("POST", f"/v1/runs/{run_id}/stop")
    assert status == 200, body
    await wait_until(lambda: _settled(b, run_id), timeout=WAIT)
    status, one, _ = await b.call("GET", f"/api/sessions/{session_id}")
    assert one["session"]["active_run_id"] is None
    status, deleted, _ = await b.call("DELETE", f"/api/sessions/{session_id}")
    assert status == 200, deleted
    assert len(upstream.requests) == 1  # no second turn ever reached the model


async def _settled(node: Node, run_id: str) -> bool:
    return (await node.run_status(run_id))["status"] == "cancelled"


async def test_sigterm_of_the_owner_ends_its_run_interrupted_on_the_other_instance(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    a, b = await serve("a", "b")
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]), text_reply("late"))
    run_id = await a.start_run({"input": "sleep a while"})
    async with b.session() as client, client.get(f"/v1/runs/{run_id}/events") as live_on_b:
        head = await asyncio.wait_for(read_frames(live_on_b, until=lambda f: f.event == "tool.started"), WAIT)
        await wait_until(sleepers.pids, timeout=WAIT, what=lambda: a.process.output())
        a.process.proc.send_signal(signal.SIGTERM)  # A shuts down cleanly: it settles its own runs
        tail = await asyncio.wait_for(read_frames(live_on_b), WAIT)
    assert await wait_until(lambda: a.process.proc.poll() is not None, timeout=WAIT) and a.process.proc.returncode == 0
    live = head + tail
    assert _names(live)[-1] == "run.interrupted" and [f.id for f in live] == list(range(1, len(live) + 1))
    assert (await b.run_status(run_id))["status"] == "interrupted"
    await wait_until(lambda: not sleepers.pids(), timeout=WAIT, what=sleepers.pids)


async def test_concurrent_starts_for_one_session_on_one_instance_admit_one(
    serve: Serve, upstream: ScriptedUpstream, sleepers: Sleepers
) -> None:
    (a,) = await serve("a")
    upstream.enqueue(tool_reply([call("terminal", {"command": sleepers.command}, id="call_sleep")]), text_reply("late"))
    status, created, _ = await a.call("POST", "/api/sessions", json={"title": "contended"})
    assert status == 201, created
    session_id = created["session"]["id"]
    body = {"input": "sleep a while", "session_id": session_id}
    answers = await asyncio.gather(*(a.call("POST", "/v1/runs", json=body) for _ in range(4)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [202, 409, 409, 409], answers
    winner = next(data["run_id"] for status, data, _ in answers if status == 202)
    assert {data["error"]["run_id"] for status, data, _ in answers if status == 409} == {winner}
    await wait_until(sleepers.pids, timeout=WAIT, what=lambda: a.process.output())
    assert len(upstream.requests) == 1  # one turn on the session
