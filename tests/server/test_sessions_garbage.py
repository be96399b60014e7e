"""Garbage in, 4xx out: no malformed body, field or id reaches a 500, the model or the store."""

from __future__ import annotations

import itertools

from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)

from hermes.store.records import NewMessage

VALUES = [None, True, 0, -1, 10**30, 1.5, "", " ", "\x00", "a\r\nb", "ü" * 70_000, [], [None], [[[]]], {}, {"a": {}},
          [{"type": "image_url"}], [{"type": 5}], [{"type": "text", "text": None}]]
FIELDS = ["input", "message", "instructions", "system_message", "session_id", "model", "conversation_history",
          "title", "id", "source", "end_reason", "at_message_id", "choice", "request_id", "all", "pinned"]


async def test_garbage_fields_never_500(serve, upstream, sessions_db):
    record = sessions_db.create_session(source="api_server", title="Keep")
    sessions_db.append_message(record.id, NewMessage(role="user", content="kept"))
    client = await serve()
    run_id = "run_" + "1" * 32
    targets = [
        ("post", "/v1/runs"),
        ("post", f"/v1/runs/{run_id}/approval"),
        ("post", f"/v1/runs/{run_id}/stop"),
        ("post", "/api/sessions"),
        ("patch", f"/api/sessions/{record.id}"),
        ("post", f"/api/sessions/{record.id}/fork"),
        ("post", f"/api/sessions/{record.id}/chat"),
        ("post", f"/api/sessions/{record.id}/chat/stream"),
    ]
    seen_codes = set()
    for (method, path), field, value in itertools.product(targets, FIELDS, VALUES):
        turn_route = path.endswith(("/chat", "/chat/stream", "/v1/runs"))
        if turn_route and field not in ("input", "message"):
            body = {"message" if "sessions" in path else "input": 42, field: value}
        elif turn_route and isinstance(value, str) and value.strip() and "\x00" not in value and len(value) < 65_536:
            continue  # a real message: it would start a real turn
        elif path.endswith("/fork") and field not in ("title", "at_message_id", "id"):
            continue  # a fork with harmless extra fields is a real fork
        elif path == "/api/sessions" and field not in ("title", "id", "source", "model", "session_id"):
            continue  # likewise, a real create
        else:
            body = {field: value}
        resp = await getattr(client, method)(path, json=body)
        assert resp.status < 500, (method, path, body, await resp.text())
        if resp.status >= 400:
            error = (await resp.json())["error"]
            assert set(error) >= {"message", "type", "param", "code"}
            seen_codes.add(error["code"])
    for path in ("/api/sessions?limit=%00", "/api/sessions?offset=1e9", "/api/sessions?source=%0a",
                 f"/api/sessions/{record.id}/messages?limit=-0", "/v1/runs/run_x/events?after=abc",
                 f"/v1/runs/{run_id}/events?after=99999999999999999999"):
        resp = await client.get(path)
        assert 400 <= resp.status < 500, path
    assert upstream.requests == []
    assert [m.content for m in sessions_db.get_messages(record.id)] == ["kept"]
    assert "internal_error" not in seen_codes
