"""POST /v1/runs and friends over the real app, a real engine and a scripted upstream."""

from __future__ import annotations

import asyncio

from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)
from _runs_fixtures import read_frames, wait_for

from hermes.server.http.state import RUNS, SETTINGS
from hermes.testing.upstream import call, text_reply, tool_reply


async def _start(client, body=None, headers=None):
    resp = await client.post("/v1/runs", json=body or {"input": "hi"}, headers=headers or {})
    assert resp.status == 202, await resp.text()
    return await resp.json()


async def test_run_streams_events_with_ids_and_settles_completed(serve, upstream, sessions_db):
    upstream.enqueue(text_reply("Hello there friend"))
    client = await serve()
    started = await _start(client, {"input": "say hello"})
    assert started["status"] == "started"
    assert started["replayed"] is False
    run_id = started["run_id"]
    assert run_id.startswith("run_") and len(run_id) == 36

    resp = await client.get(f"/v1/runs/{run_id}/events")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.headers["X-Accel-Buffering"] == "no"
    text = await resp.text()
    assert text.rstrip().endswith(": stream closed")
    from _runs_fixtures import parse_frames

    frames = parse_frames(text)
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    names = [f.data["event"] for f in frames]
    assert names[0] == "run.started"
    assert names[-1] == "run.completed"
    assert all(f.event is None for f in frames)  # unnamed frames, the name is in the payload
    assert "".join(f.data["delta"] for f in frames if f.data["event"] == "message.delta") == "Hello there friend"
    final = frames[-1].data
    assert final["run_id"] == run_id and isinstance(final["timestamp"], float)
    assert final["output"] == "Hello there friend"
    assert final["usage"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    assert status["object"] == "hermes.run"
    assert status["status"] == "completed"
    assert status["output"] == "Hello there friend"
    assert status["last_event"] == "run.completed"
    session = sessions_db.get_session(status["session_id"])
    assert session.source == "api_server"
    assert [m.role for m in sessions_db.get_messages(session.id)] == ["user", "assistant"]


async def test_two_subscribers_and_resume_with_last_event_id(serve, upstream):
    upstream.enqueue(text_reply("one two three four five six", chunk_delay=0.05))
    client = await serve()
    run_id = (await _start(client))["run_id"]

    first = await client.get(f"/v1/runs/{run_id}/events")
    second = await client.get(f"/v1/runs/{run_id}/events")
    early = await read_frames(first, until=lambda f: f.data["event"] == "message.delta")
    first.close()  # the first client drops mid-run
    seen = early[-1].id

    full = await read_frames(second)
    assert full[-1].data["event"] == "run.completed"

    resumed = await client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(seen)})
    rest = await read_frames(resumed)
    assert [f.id for f in early + rest] == [f.id for f in full]
    assert [f.data for f in early + rest] == [f.data for f in full]

    via_query = await read_frames(await client.get(f"/v1/runs/{run_id}/events?after={full[-2].id}"))
    assert [f.data["event"] for f in via_query] == ["run.completed"]


async def test_disconnect_does_not_stop_the_run(serve, upstream):
    upstream.enqueue(text_reply("slow answer arrives eventually", chunk_delay=0.05))
    client = await serve()
    run_id = (await _start(client))["run_id"]
    resp = await client.get(f"/v1/runs/{run_id}/events")
    await read_frames(resp, until=lambda f: f.data["event"] == "message.delta")
    resp.close()
    status = await wait_for(
        lambda: _status_if(client, run_id, "completed"), timeout=10
    )
    assert status["output"] == "slow answer arrives eventually"


async def _status_if(client, run_id, wanted):
    body = await (await client.get(f"/v1/runs/{run_id}")).json()
    return body if body["status"] == wanted else None


async def test_stop_cancels_a_running_turn(serve, upstream):
    upstream.enqueue(text_reply("partial words then silence").stall_after(2))
    client = await serve()
    run_id = (await _start(client))["run_id"]
    events = await client.get(f"/v1/runs/{run_id}/events")
    await read_frames(events, until=lambda f: f.data["event"] == "message.delta")

    resp = await client.post(f"/v1/runs/{run_id}/stop")
    assert resp.status == 200
    assert (await resp.json())["status"] in ("stopping", "cancelled")
    rest = await read_frames(events)
    assert rest[-1].data["event"] == "run.cancelled"
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    assert status["status"] == "cancelled"
    await wait_for(lambda: upstream.requests[0].client_disconnected)

    again = await client.post(f"/v1/runs/{run_id}/stop")
    assert again.status == 200
    assert (await again.json())["status"] == "cancelled"


async def test_unknown_and_malformed_run_ids_are_404(serve):
    client = await serve()
    for path in ("/v1/runs/run_" + "0" * 32, "/v1/runs/nope", "/v1/runs/run_" + "0" * 32 + "/events"):
        resp = await client.get(path)
        assert resp.status == 404, path
        body = await resp.json()
        assert body["error"]["code"] == "run_not_found"
    for path in ("/stop", "/approval"):
        resp = await client.post("/v1/runs/run_" + "a" * 32 + path, json={"choice": "once"})
        assert resp.status == 404


async def _approval_run(client, upstream, command="rm -r build"):
    upstream.enqueue(
        tool_reply([call("risky", {"command": command}, id="call_risky")]),
        text_reply("All done."),
    )
    run_id = (await _start(client, {"input": "clean up"}))["run_id"]
    events = await client.get(f"/v1/runs/{run_id}/events")
    frames = await read_frames(events, until=lambda f: f.data["event"] == "approval.request")
    request = frames[-1].data
    assert request["request_id"] == "call_risky"
    assert request["choices"] == ["once", "session", "deny"]
    assert request["command"] == "rm -r build"
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    assert status["status"] == "waiting_for_approval"
    assert status["approval"]["request_id"] == "call_risky"
    return run_id, events


async def test_approval_once_runs_the_command(serve, upstream, sessions_db):
    client = await serve()
    run_id, events = await _approval_run(client, upstream)
    resp = await client.post(f"/v1/runs/{run_id}/approval", json={"choice": "approve"})
    assert resp.status == 200
    body = await resp.json()
    assert body == {"object": "hermes.run.approval_response", "run_id": run_id, "choice": "once", "resolved": 1}
    rest = await read_frames(events)
    names = [f.data["event"] for f in rest]
    assert names.index("approval.responded") < names.index("tool.completed")
    assert names[-1] == "run.completed"
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    tool_rows = [m for m in sessions_db.get_messages(status["session_id"]) if m.role == "tool"]
    assert tool_rows[0].content == "ran it"

    late = await client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
    assert late.status == 409
    assert (await late.json())["error"]["code"] == "approval_not_active"


async def test_approval_deny_and_timeout(serve, upstream, sessions_db):
    client = await serve(approval_timeout=0.2)
    # Timeout: nobody answers, the command is denied.
    upstream.enqueue(tool_reply([call("risky", {"command": "rm -r a"}, id="call_a")]), text_reply("ok"))
    run_id = (await _start(client))["run_id"]
    frames = await read_frames(await client.get(f"/v1/runs/{run_id}/events"))
    assert frames[-1].data["event"] == "run.completed"
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    tool_rows = [m for m in sessions_db.get_messages(status["session_id"]) if m.role == "tool"]
    assert tool_rows[0].content == "denied: not run"

    # Explicit deny.
    client.server.app[RUNS].approval_timeout = 5.0
    run_id, events = await _approval_run(client, upstream)
    resp = await client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny", "request_id": "call_risky"})
    assert resp.status == 200
    assert (await resp.json())["request_id"] == "call_risky"
    await read_frames(events)
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    tool_rows = [m for m in sessions_db.get_messages(status["session_id"]) if m.role == "tool"]
    assert tool_rows[0].content == "denied: not run"


async def test_yolo_server_skips_approval(serve, upstream, sessions_db):
    client = await serve(yolo=True)
    upstream.enqueue(tool_reply([call("risky", {"command": "rm -r a"})]), text_reply("ok"))
    run_id = (await _start(client))["run_id"]
    frames = await read_frames(await client.get(f"/v1/runs/{run_id}/events"))
    assert "approval.request" not in [f.data["event"] for f in frames]
    status = await (await client.get(f"/v1/runs/{run_id}")).json()
    tool_rows = [m for m in sessions_db.get_messages(status["session_id"]) if m.role == "tool"]
    assert tool_rows[0].content == "ran it"


async def test_approval_request_validation(serve, upstream):
    upstream.enqueue(text_reply("x").stall_after(1))
    client = await serve()
    run_id = (await _start(client))["run_id"]
    url = f"/v1/runs/{run_id}/approval"
    cases = [
        ({"choice": "always"}, 400, "invalid_approval_choice"),
        ({"choice": 3}, 400, "invalid_approval_choice"),
        ({}, 400, "invalid_approval_choice"),
        ({"choice": "once", "request_id": 5}, 400, "invalid_approval_request"),
        ({"choice": "once", "request_id": "x" * 300}, 400, "invalid_approval_request"),
        ({"choice": "once"}, 409, "approval_not_pending"),
    ]
    for body, status, code in cases:
        resp = await client.post(url, json=body)
        assert resp.status == status, body
        assert (await resp.json())["error"]["code"] == code
    bad_json = await client.post(url, data=b"{nope", headers={"Content-Type": "application/json"})
    assert bad_json.status == 400
    await client.post(f"/v1/runs/{run_id}/stop")


async def test_idempotency_key_replays_and_conflicts(serve, upstream, tmp_path):
    upstream.enqueue(text_reply("only once"))
    client = await serve()
    headers = {"Idempotency-Key": "retry-123"}
    first = await _start(client, {"input": "do it"}, headers)
    await read_frames(await client.get(f"/v1/runs/{first['run_id']}/events"))

    replay = await client.post("/v1/runs", json={"input": "do it"}, headers=headers)
    assert replay.status == 202
    assert replay.headers["Idempotency-Replayed"] == "true"
    body = await replay.json()
    assert body["run_id"] == first["run_id"]
    assert body["replayed"] is True
    assert body["status"] == "completed"
    assert len(upstream.requests) == 1

    conflict = await client.post("/v1/runs", json={"input": "something else"}, headers=headers)
    assert conflict.status == 409
    assert (await conflict.json())["error"]["code"] == "idempotency_key_conflict"

    for bad in ("", "x" * 256, "has space", "ünïcode"):
        resp = await client.post("/v1/runs", json={"input": "a"}, headers={"Idempotency-Key": bad})
        assert resp.status == 400, bad
        assert (await resp.json())["error"]["code"] == "invalid_idempotency_key"
    assert len(upstream.requests) == 1


async def test_receipts_are_durable_across_app_restarts(serve, upstream):
    upstream.enqueue(text_reply("once"))
    client = await serve()
    headers = {"Idempotency-Key": "durable-1"}
    first = await _start(client, {"input": "go"}, headers)
    await read_frames(await client.get(f"/v1/runs/{first['run_id']}/events"))
    await client.close()

    again = await serve()  # same HERMES home, fresh process state
    replay = await again.post("/v1/runs", json={"input": "go"}, headers=headers)
    assert replay.status == 202
    assert replay.headers["Idempotency-Replayed"] == "true"
    assert (await replay.json())["run_id"] == first["run_id"]
    status = await (await again.get(f"/v1/runs/{first['run_id']}")).json()
    assert status["status"] == "completed"
    assert status["output"] == "once"
    gone = await again.get(f"/v1/runs/{first['run_id']}/events")
    assert gone.status == 410
    assert (await gone.json())["error"]["code"] == "run_events_expired"


async def test_concurrency_cap_answers_429_but_replays_pass(serve, upstream):
    upstream.enqueue(text_reply("busy").stall_after(1))
    client = await serve(server_max_concurrent_runs=1)
    first = await _start(client, {"input": "a"}, {"Idempotency-Key": "k1"})
    resp = await client.post("/v1/runs", json={"input": "b"})
    assert resp.status == 429
    assert resp.headers["Retry-After"] == "1"
    assert (await resp.json())["error"]["type"] == "rate_limit_error"
    replay = await client.post("/v1/runs", json={"input": "a"}, headers={"Idempotency-Key": "k1"})
    assert replay.status == 202
    assert (await replay.json())["run_id"] == first["run_id"]
    await client.post(f"/v1/runs/{first['run_id']}/stop")
    await wait_for(lambda: _status_if(client, first["run_id"], "cancelled"))
    upstream.enqueue(text_reply("free again"))
    assert (await client.post("/v1/runs", json={"input": "c"})).status == 202


async def test_one_active_run_per_session(serve, upstream):
    upstream.enqueue(text_reply("busy").stall_after(1))
    client = await serve()
    first = await _start(client, {"input": "a", "session_id": "shared-1"})
    resp = await client.post("/v1/runs", json={"input": "b", "session_id": "shared-1"})
    assert resp.status == 409
    body = await resp.json()
    assert body["error"]["code"] == "run_already_active"
    assert body["error"]["run_id"] == first["run_id"]
    await client.post(f"/v1/runs/{first['run_id']}/stop")


async def test_conversation_history_and_instructions_reach_the_model(serve, upstream):
    upstream.enqueue(text_reply("ok"))
    client = await serve()
    run_id = (
        await _start(
            client,
            {
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "third"}]}],
                "instructions": "Be brief.",
                "conversation_history": [
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "second"},
                ],
            },
        )
    )["run_id"]
    await read_frames(await client.get(f"/v1/runs/{run_id}/events"))
    sent = upstream.requests[0].messages
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert [m["content"] for m in sent[1:]] == ["first", "second", "third"]


async def test_rejected_requests_reach_neither_model_nor_store(serve, upstream, sessions_db):
    client = await serve()
    cases = [
        ({}, "missing_input"),
        ({"input": ""}, "missing_input"),
        ({"input": "   "}, "missing_input"),
        ({"input": 42}, "invalid_input"),
        ({"input": [7]}, "invalid_input"),
        ({"input": "hi", "instructions": 5}, "invalid_type"),
        ({"input": "hi", "model": ["x"]}, "invalid_type"),
        ({"input": "hi", "session_id": "../etc"}, "invalid_session_id"),
        ({"input": "hi", "session_id": "x" * 300}, "invalid_session_id"),
        ({"input": "hi", "conversation_history": "nope"}, "invalid_history"),
        ({"input": "hi", "conversation_history": [{"role": "robot", "content": "x"}]}, "invalid_history"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "unsupported_content_type",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "ftp://x"}]}]},
            "invalid_image_url",
        ),
    ]
    for body, code in cases:
        resp = await client.post("/v1/runs", json=body)
        assert resp.status == 400, body
        error = (await resp.json())["error"]
        assert error["code"] == code, (body, error)
        assert error["type"] == "invalid_request_error"
    for raw in (b"{", b"[1, 2]", b"null"):
        resp = await client.post("/v1/runs", data=raw, headers={"Content-Type": "application/json"})
        assert resp.status == 400
    resp = await client.post("/v1/runs", json={"input": "hi"}, headers={"X-Hermes-Session-Key": "k"})
    assert resp.status == 403  # no API key configured: session keys are refused
    bad_after = await client.get("/v1/runs/run_" + "0" * 32 + "/events?after=-1")
    assert bad_after.status == 400
    assert upstream.requests == []
    assert sessions_db.list_sessions() == []


async def test_auth_required_when_key_configured(serve, upstream):
    client = await serve(server_key="sk-test-key-123456")
    resp = await client.post("/v1/runs", json={"input": "hi"})
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "invalid_api_key"
    upstream.enqueue(text_reply("ok"))
    auth = {"Authorization": "Bearer sk-test-key-123456", "X-Hermes-Session-Key": "client-7"}
    resp = await client.post("/v1/runs", json={"input": "hi"}, headers=auth)
    assert resp.status == 202
    assert resp.headers["X-Hermes-Session-Key"] == "client-7"
    run_id = (await resp.json())["run_id"]
    frames = await read_frames(await client.get(f"/v1/runs/{run_id}/events", headers=auth))
    assert frames[-1].data["event"] == "run.completed"


async def test_shutdown_marks_in_flight_runs_interrupted(serve, upstream):
    upstream.enqueue(text_reply("never finishes").stall_after(1))
    client = await serve()
    run_id = (await _start(client))["run_id"]
    registry = client.server.app[RUNS]
    await wait_for(lambda: registry.get(run_id).status == "running")
    home = client.server.app[SETTINGS].home
    await client.close()
    # The app's storage is still open (the fixture closes it); read the durable row afresh.
    from state_db import stored_run

    record = stored_run(home, run_id)
    assert record is not None and record.status == "interrupted"
    await asyncio.sleep(0)


async def test_a_failed_tool_is_reported_with_is_error_never_a_top_level_error(serve, upstream):
    upstream.enqueue(tool_reply([call("no_such_tool", {})], text="Trying."), text_reply("Done anyway."))
    client = await serve()
    run_id = (await _start(client, {"input": "try it"}))["run_id"]
    frames = await read_frames(await client.get(f"/v1/runs/{run_id}/events"))
    (completed,) = [f.data for f in frames if f.data["event"] == "tool.completed"]
    assert completed["is_error"] is True and "error" not in completed
    assert frames[-1].data["event"] == "run.completed"
