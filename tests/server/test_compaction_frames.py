"""A compaction reaches HTTP clients as a status frame (kind "context_compacted")."""

from __future__ import annotations

import json

from _api_harness import MakeServer, parse_sse
from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)

from hermes.agent.context import SUMMARIZER_PROMPT, SUMMARY_HEADER, estimate_tokens
from hermes.testing.upstream import text_reply

WINDOW = 4000


def long_history(pairs: int = 12) -> list[dict[str, str]]:
    messages = []
    for i in range(pairs):
        messages.append({"role": "user", "content": f"step {i}: " + "q" * 1200})
        messages.append({"role": "assistant", "content": f"did {i}: " + "a" * 1200})
    return messages


async def test_chat_stream_reports_the_compaction_and_the_request_fits(make_server: MakeServer) -> None:
    srv = await make_server(context_window=WINDOW, server_tool_progress_events="true")
    # Every request gets the same short answer: the summary request(s) (one per chunk that
    # fits the window) and then the turn's own request.
    srv.upstream.default = text_reply("SUMMARY of the steps")
    messages = [*long_history(), {"role": "user", "content": "and now?"}]
    resp = await srv.client.post("/v1/chat/completions", json={"messages": messages, "stream": True})
    assert resp.status == 200
    frames = parse_sse(await resp.text())
    statuses = [f.json() for f in frames if f.event == "hermes.status"]
    compacted = [s for s in statuses if s["kind"] == "context_compacted"]
    assert len(compacted) == 1
    assert compacted[0]["reason"] == "threshold"
    assert compacted[0]["after_tokens"] < compacted[0]["before_tokens"]
    assert "context compacted" in compacted[0]["text"]
    content = "".join(
        json.loads(f.data)["choices"][0]["delta"].get("content") or ""
        for f in frames
        if f.event is None and f.data and f.data != "[DONE]" and json.loads(f.data).get("choices")
    )
    assert content == "SUMMARY of the steps"
    *summary_requests, turn_request = srv.upstream.requests
    assert summary_requests
    assert all(r.messages[0]["content"] == SUMMARIZER_PROMPT and "tools" not in r.body for r in summary_requests)
    assert turn_request.messages[1]["content"] == SUMMARY_HEADER + "SUMMARY of the steps"
    assert turn_request.messages[-1] == {"role": "user", "content": "and now?"}
    for request in srv.upstream.requests:
        assert estimate_tokens(request.messages, request.body.get("tools")) <= WINDOW


async def test_run_events_report_a_compaction_after_a_context_length_error(serve, upstream, sessions_db) -> None:
    from _runs_fixtures import read_frames

    from hermes.store.records import NewMessage
    from hermes.testing.upstream import error_reply

    session = sessions_db.create_session(source="api_server", title="long", system_prompt="You are a test agent.")
    for i in range(3):
        sessions_db.append_message(session.id, NewMessage(role="user", content=f"question {i}"))
        sessions_db.append_message(session.id, NewMessage(role="assistant", content=f"answer {i}"))
    upstream.enqueue(
        error_reply(400, "This model's maximum context length is 100 tokens.", code="context_length_exceeded"),
        text_reply("SUMMARY: three questions"),
        text_reply("fits now"),
    )
    client = await serve()
    resp = await client.post("/v1/runs", json={"input": "next", "session_id": session.id})
    assert resp.status == 202, await resp.text()
    run_id = (await resp.json())["run_id"]
    events = await client.get(f"/v1/runs/{run_id}/events")
    frames = await read_frames(events, until=lambda f: f.data["event"] in ("run.completed", "run.failed"))
    statuses = [f.data for f in frames if f.data["event"] == "status"]
    assert [s["kind"] for s in statuses if s["kind"] == "context_compacted"] == ["context_compacted"]
    assert next(s for s in statuses if s["kind"] == "context_compacted")["reason"] == "overflow"
    compacted = next(s for s in statuses if s["kind"] == "context_compacted")
    assert compacted["after_tokens"] < compacted["before_tokens"]
    assert frames[-1].data["event"] == "run.completed" and frames[-1].data["output"] == "fits now"
    assert upstream.requests[-1].messages[1]["content"] == SUMMARY_HEADER + "SUMMARY: three questions"
    assert len(sessions_db.get_messages(session.id)) == 8  # every message is kept
    assert sessions_db.compactions(session.id)
