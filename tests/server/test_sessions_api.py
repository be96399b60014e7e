"""The sessions REST API over the real app, the real engine and a scripted upstream."""

from __future__ import annotations

from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)
from _runs_fixtures import parse_frames, read_frames, wait_for

from hermes.ids import SESSION_ID
from hermes.store.records import NewMessage
from hermes.testing.upstream import call, error_reply, text_reply, tool_reply

KEY = "sk-sessions-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _seed(db, title="Chat", messages=(("user", "earlier"), ("assistant", "prior answer"))):
    record = db.create_session(source="api_server", title=title)
    for role, content in messages:
        db.append_message(record.id, NewMessage(role=role, content=content))
    return record.id


async def test_crud_and_message_history(serve, sessions_db):
    client = await serve()
    resp = await client.post("/api/sessions", json={"title": "Mobile chat", "model": "test-model"})
    assert resp.status == 201
    created = await resp.json()
    assert created["object"] == "hermes.session"
    session_id = created["session"]["id"]
    assert created["session"]["title"] == "Mobile chat"
    assert created["session"]["source"] == "api_server"
    assert "system_prompt" not in created["session"]
    sessions_db.append_message(session_id, NewMessage(role="user", content="hello from phone"))
    sessions_db.append_message(session_id, NewMessage(role="assistant", content="hello from hermes"))

    listed = await (await client.get("/api/sessions?limit=10&offset=0")).json()
    assert listed["object"] == "list"
    assert [s["id"] for s in listed["data"]] == [session_id]
    assert listed["data"][0]["message_count"] == 2
    assert listed["has_more"] is False

    got = await (await client.get(f"/api/sessions/{session_id}")).json()
    assert got["session"]["message_count"] == 2

    messages = await (await client.get(f"/api/sessions/{session_id}/messages")).json()
    assert messages["object"] == "list"
    assert messages["session_id"] == session_id
    assert [m["role"] for m in messages["data"]] == ["user", "assistant"]
    assert messages["data"][0]["content"] == "hello from phone"
    assert messages["pagination"] == {"limit": 100, "offset": 0, "order": "oldest", "returned": 2}

    latest = await (await client.get(f"/api/sessions/{session_id}/messages?order=latest&limit=1")).json()
    assert [m["content"] for m in latest["data"]] == ["hello from hermes"]
    older = await (await client.get(f"/api/sessions/{session_id}/messages?order=latest&limit=1&offset=1")).json()
    assert [m["content"] for m in older["data"]] == ["hello from phone"]

    patched = await client.patch(f"/api/sessions/{session_id}", json={"title": "Renamed"})
    assert patched.status == 200
    assert (await patched.json())["session"]["title"] == "Renamed"

    deleted = await client.delete(f"/api/sessions/{session_id}")
    assert deleted.status == 200
    assert await deleted.json() == {"object": "hermes.session.deleted", "id": session_id, "deleted": True}
    assert sessions_db.find_session(session_id) is None
    assert (await client.get(f"/api/sessions/{session_id}")).status == 404


async def test_create_with_id_conflict_and_validation(serve, sessions_db):
    client = await serve()
    resp = await client.post("/api/sessions", json={"id": "my-session-1", "system_prompt": "Be terse."})
    assert resp.status == 201
    assert (await resp.json())["session"]["has_system_prompt"] is True
    again = await client.post("/api/sessions", json={"id": "my-session-1"})
    assert again.status == 409
    assert (await again.json())["error"]["code"] == "session_exists"
    cases = [
        ({"id": "../x"}, "invalid_session_id"),
        ({"id": 5}, "invalid_session_id"),
        ({"id": "x" * 300}, "invalid_session_id"),
        ({"title": 7}, "invalid_title"),
        ({"title": "a\nb"}, "invalid_title"),
        ({"title": "x" * 300}, "invalid_title"),
        ({"system_prompt": ["no"]}, "invalid_system_prompt"),
        ({"source": "bad source!"}, "invalid_source"),
        ({"model": {}}, "invalid_model"),
    ]
    for body, code in cases:
        r = await client.post("/api/sessions", json=body)
        assert r.status == 400, body
        assert (await r.json())["error"]["code"] == code
    empty = await client.post("/api/sessions")
    assert empty.status == 201
    assert SESSION_ID.match((await empty.json())["session"]["id"])  # the one generated-id format
    assert sessions_db.count_sessions() == 2


async def test_fork_copies_messages_and_marks_parent_branched(serve, sessions_db):
    source_id = _seed(sessions_db, title="Original", messages=(("user", "first path"), ("assistant", "answer")))
    client = await serve()
    resp = await client.post(f"/api/sessions/{source_id}/fork", json={"title": "Alternative"})
    assert resp.status == 201
    payload = await resp.json()
    fork = payload["session"]
    assert payload["object"] == "hermes.session"
    assert fork["id"] != source_id
    assert fork["parent_session_id"] == source_id
    assert fork["title"] == "Alternative"
    assert [m.content for m in sessions_db.get_messages(fork["id"])] == ["first path", "answer"]
    assert sessions_db.get_session(source_id).end_reason == "branched"
    bad = await client.post(f"/api/sessions/{source_id}/fork", json={"at_message_id": "x"})
    assert bad.status == 400


async def test_chat_uses_stored_history_and_echoes_session_headers(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    upstream.enqueue(text_reply("fresh answer"))
    client = await serve(server_key=KEY)
    resp = await client.post(
        f"/api/sessions/{session_id}/chat",
        json={"message": "next", "system_message": "stay focused"},
        headers={**AUTH, "X-Hermes-Session-Key": "client-42"},
    )
    assert resp.status == 200, await resp.text()
    payload = await resp.json()
    assert resp.headers["X-Hermes-Session-Id"] == session_id
    assert resp.headers["X-Hermes-Session-Key"] == "client-42"
    assert payload["object"] == "hermes.session.chat.completion"
    assert payload["status"] == "completed"
    assert payload["session_id"] == session_id
    assert payload["message"] == {"role": "assistant", "content": "fresh answer"}
    assert payload["usage"]["total_tokens"] == 15
    sent = upstream.requests[0].messages
    assert sent[0] == {"role": "system", "content": "stay focused"}
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "earlier"),
        ("assistant", "prior answer"),
        ("user", "next"),
    ]
    assert [m.content for m in sessions_db.get_messages(session_id)][-2:] == ["next", "fresh answer"]
    status = await (await client.get(f"/v1/runs/{payload['run_id']}", headers=AUTH)).json()
    assert status["status"] == "completed"


IMAGE_IN = [
    {"type": "input_text", "text": "What's in this image?"},
    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
]
IMAGE_OUT = [
    {"type": "text", "text": "What's in this image?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
]


async def test_chat_accepts_multimodal_message(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(text_reply("A cat."))
    client = await serve(server_key=KEY)
    resp = await client.post(f"/api/sessions/{session_id}/chat", json={"message": IMAGE_IN}, headers=AUTH)
    assert resp.status == 200, await resp.text()
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": IMAGE_OUT}


async def test_chat_stream_accepts_multimodal_message(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(text_reply("A cat."))
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": IMAGE_IN})
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    body = await resp.text()
    assert "event: assistant.completed" in body
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": IMAGE_OUT}


async def test_chat_stream_lifecycle_events(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(text_reply("Hello world", reasoning="thinking hard"))
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "stream please"})
    assert resp.status == 200
    assert resp.headers["X-Hermes-Session-Id"] == session_id
    run_id = resp.headers["X-Hermes-Run-Id"]
    frames = parse_frames(await resp.text())
    names = [f.event for f in frames]
    for name in ("run.started", "message.started", "assistant.delta", "tool.progress", "assistant.completed",
                 "run.completed", "done"):
        assert name in names, name
    assert names[0] == "run.started" and names[-1] == "done"
    assert names.index("assistant.completed") < names.index("run.completed") < names.index("done")
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert all(f.data["seq"] == f.id and f.data["run_id"] == run_id and f.data["session_id"] == session_id
               for f in frames)
    assert frames[0].data["user_message"] == {"role": "user", "content": "stream please"}
    message_id = frames[1].data["message"]["id"]
    assert message_id.startswith("msg_") and len(message_id) == 36
    deltas = "".join(f.data["delta"] for f in frames if f.event == "assistant.delta")
    assert deltas == "Hello world"
    completed = next(f for f in frames if f.event == "assistant.completed")
    assert completed.data["content"] == "Hello world"
    thinking = [f for f in frames if f.event == "tool.progress"]
    assert thinking[0].data["tool_name"] == "_thinking"


async def test_run_completed_carries_the_turns_transcript(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    upstream.enqueue(
        tool_reply([call("echo", {"text": "q"}, id="call_1")], text="Let me search for that:"),
        text_reply("Here is the summary."),
    )
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "search then summarize"})
    frames = parse_frames(await resp.text())
    done = next(f for f in frames if f.event == "run.completed")
    messages = done.data["messages"]
    contents = [m["content"] for m in messages]
    assert "Let me search for that:" in contents
    assert "Here is the summary." in contents
    assert all(m["role"] in ("assistant", "tool") for m in messages)
    assert any(m.get("tool_calls") for m in messages)
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_1" and tool["tool_name"] == "echo"
    names = [f.event for f in frames]
    assert "assistant.commentary" in names
    assert "tool.started" in names and "tool.completed" in names


async def test_stream_survives_disconnect_and_resumes(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(text_reply("one two three four five six seven", chunk_delay=0.05))
    client = await serve()
    url = f"/api/sessions/{session_id}/chat/stream"
    resp = await client.post(url, json={"message": "count"})
    run_id = resp.headers["X-Hermes-Run-Id"]
    early = await read_frames(resp, until=lambda f: f.event == "assistant.delta")
    resp.close()

    resumed = await client.post(url, headers={"Last-Event-ID": str(early[-1].id)})
    assert resumed.status == 200
    rest = await read_frames(resumed)
    assert rest[0].id == early[-1].id + 1
    assert rest[-1].event == "done"
    text = "".join(f.data["delta"] for f in early + rest if f.event == "assistant.delta")
    assert text == "one two three four five six seven"

    # The same run is followable through the runs API, in the session format.
    again = await read_frames(await client.get(f"/v1/runs/{run_id}/events?after=0"))
    assert [f.id for f in again] == [f.id for f in early + rest]
    assert sessions_db.get_messages(session_id)[-1].content == "one two three four five six seven"


async def test_stream_approval_through_runs_endpoint(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(tool_reply([call("risky", {"command": "rm -r out"}, id="call_r")]), text_reply("Cleaned."))
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "clean"})
    frames = await read_frames(resp, until=lambda f: f.event == "approval.request")
    request = frames[-1].data
    assert request["request_id"] == "call_r" and request["command"] == "rm -r out"
    approved = await client.post(f"/v1/runs/{request['run_id']}/approval", json={"choice": "session"})
    assert approved.status == 200
    rest = await read_frames(resp)
    names = [f.event for f in rest]
    assert "approval.responded" in names and names[-1] == "done"
    tool_rows = [m for m in sessions_db.get_messages(session_id) if m.role == "tool"]
    assert tool_rows[0].content == "ran it"


async def test_failed_turn_is_502_on_chat_and_run_failed_on_stream(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(error_reply(400, "bad request upstream"))
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat", json={"message": "hi"})
    assert resp.status == 502
    error = (await resp.json())["error"]
    assert error["code"] == "agent_incomplete"
    assert error["hermes"]["failed"] is True

    upstream.enqueue(error_reply(400, "bad request upstream"))
    stream = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "hi"})
    names = [f.event for f in parse_frames(await stream.text())]
    assert "run.failed" in names and names[-1] == "done"


async def test_auth_required_when_key_configured(serve):
    client = await serve(server_key=KEY)
    resp = await client.get("/api/sessions")
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "invalid_api_key"
    ok = await client.get("/api/sessions", headers=AUTH)
    assert ok.status == 200
    data = await ok.json()
    assert data["object"] == "list" and data["data"] == []


async def test_session_key_header_rejected_without_api_key(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    client = await serve()
    resp = await client.post(
        f"/api/sessions/{session_id}/chat", json={"message": "hello"}, headers={"X-Hermes-Session-Key": "client-42"}
    )
    assert resp.status == 403
    assert "X-Hermes-Session-Key requires API key" in (await resp.json())["error"]["message"]
    assert upstream.requests == []


async def test_bad_input_is_rejected_before_model_and_store(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    client = await serve()
    before = [m.id for m in sessions_db.get_messages(session_id)]
    base = f"/api/sessions/{session_id}"
    cases = [
        ("get", "/api/sessions?limit=0", None, 400, "invalid_limit"),
        ("get", "/api/sessions?limit=201", None, 400, "invalid_limit"),
        ("get", "/api/sessions?limit=abc", None, 400, "invalid_limit"),
        ("get", "/api/sessions?offset=-1", None, 400, "invalid_offset"),
        ("get", f"{base}/messages?order=sideways", None, 400, "invalid_order"),
        ("get", f"{base}/messages?limit=501", None, 400, "invalid_limit"),
        ("patch", base, {"pinned": True}, 400, "unsupported_session_field"),
        ("patch", base, {"title": ""}, 400, "invalid_title"),
        ("patch", base, {"title": 5}, 400, "invalid_title"),
        ("post", f"{base}/chat", {}, 400, "missing_message"),
        ("post", f"{base}/chat", {"message": "  "}, 400, "missing_message"),
        ("post", f"{base}/chat", {"message": 12}, 400, "invalid_content"),
        ("post", f"{base}/chat", {"message": [{"type": "file", "file_id": "x"}]}, 400, "unsupported_content_type"),
        ("post", f"{base}/chat", {"message": "hi", "system_message": 3}, 400, "invalid_system_prompt"),
        ("post", f"{base}/chat", {"message": "hi", "model": ""}, 400, "invalid_model"),
        (
            "post",
            f"{base}/chat/stream",
            {"input": [{"type": "input_image", "image_url": ""}]},
            400,
            "invalid_image_url",
        ),
        ("post", f"{base}/chat/stream", {}, 400, "missing_message"),
        ("get", "/api/sessions/nope-nope", None, 404, "session_not_found"),
        ("get", "/api/sessions/..%2Fx/messages", None, 404, "session_not_found"),
        ("post", "/api/sessions/unknown-1/chat", {"message": "hi"}, 404, "session_not_found"),
        ("post", "/api/sessions/unknown-1/chat/stream", {"message": "hi"}, 404, "session_not_found"),
        ("post", "/api/sessions/unknown-1/fork", {}, 404, "session_not_found"),
        ("delete", "/api/sessions/unknown-1", None, 404, "session_not_found"),
        ("patch", "/api/sessions/unknown-1", {"title": "x"}, 404, "session_not_found"),
    ]
    for method, path, body, status, code in cases:
        resp = (
            await getattr(client, method)(path, json=body) if body is not None else await getattr(client, method)(path)
        )
        assert resp.status == status, (method, path, body, await resp.text())
        error = (await resp.json())["error"]
        assert error["code"] == code, (method, path, body, error)
    for raw in (b"{", b"[]", b'"x"'):
        resp = await client.post(f"{base}/chat", data=raw, headers={"Content-Type": "application/json"})
        assert resp.status == 400
        resp = await client.patch(base, data=raw, headers={"Content-Type": "application/json"})
        assert resp.status == 400
    assert upstream.requests == []
    assert [m.id for m in sessions_db.get_messages(session_id)] == before
    assert sessions_db.get_session(session_id).title == "Chat"


async def test_busy_session_refuses_a_second_turn_and_delete(serve, upstream, sessions_db):
    session_id = _seed(sessions_db, messages=())
    upstream.enqueue(text_reply("slow").stall_after(1))
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "one"})
    run_id = resp.headers["X-Hermes-Run-Id"]
    await read_frames(resp, until=lambda f: f.event == "assistant.delta")
    second = await client.post(f"/api/sessions/{session_id}/chat", json={"message": "two"})
    assert second.status == 409
    assert (await second.json())["error"]["code"] == "run_already_active"
    info = await (await client.get(f"/api/sessions/{session_id}")).json()
    assert info["session"]["active_run_id"] == run_id
    assert (await client.delete(f"/api/sessions/{session_id}")).status == 409
    await client.post(f"/v1/runs/{run_id}/stop")
    rest = await read_frames(resp)
    assert [f.event for f in rest][-2:] == ["run.cancelled", "done"]
    await wait_for(lambda: sessions_db.get_session(session_id).end_reason == "interrupted")


async def test_sessions_carry_their_folder_and_list_by_folder_or_id_prefix(serve, sessions_db):
    import os

    client = await serve()
    created = (await (await client.post("/api/sessions", json={"title": "Here"})).json())["session"]
    assert created["cwd"] == os.path.realpath(os.getcwd())  # the server's folder: where its tools run
    other = sessions_db.create_session(source="cli", title="There", cwd="/srv/there", session_id="zz_other_1")
    sessions_db.create_session(source="cli", title="There too", cwd="/srv/there", session_id="zz_other_2")

    there = await (await client.get("/api/sessions", params={"cwd": "/srv/there"})).json()
    assert [s["id"] for s in there["data"]] == ["zz_other_2", other.id] and there["total"] == 2
    assert all(s["cwd"] == "/srv/there" for s in there["data"])
    nowhere = await (await client.get("/api/sessions", params={"cwd": "/nowhere"})).json()
    assert nowhere["data"] == [] and nowhere["total"] == 0
    prefixed = await (await client.get("/api/sessions", params={"id_prefix": "zz_other"})).json()
    assert sorted(s["id"] for s in prefixed["data"]) == ["zz_other_1", "zz_other_2"]
    got = await (await client.get(f"/api/sessions/{other.id}")).json()
    assert got["session"]["cwd"] == "/srv/there"

    for params in ({"cwd": "relative/path"}, {"id_prefix": ""}):
        bad = await client.get("/api/sessions", params=params)
        assert bad.status == 400
        body = await bad.json()
        assert body["error"]["type"] == "invalid_request_error" and body["error"]["param"] in params
