"""kill -9 of a real `hermes serve` mid-stream and mid-tool, then a restart on the same home.

After the restart the store holds a valid, continuable state: the session ended
"interrupted", the text streamed more than ~1 s before the kill is stored, a tool call
that was running has the "server stopped" placeholder result, the stored response is
`incomplete`, and continuing it sends the upstream a transcript a strict endpoint accepts.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from recovery_helpers import consecutive_assistants, transcript_problems, wait_until
from serve_process import Serve, StreamRecorder, pids_with

from hermes.store.transcript import SERVER_STOPPED_TOOL_RESULT
from hermes.testing.state_db import SyncStateDb
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

STORY = " ".join(f"word{i}" for i in range(400))
SAFE_MARGIN = 1.5
"""Text that reached the client this long before the kill must be in the store (checkpoints are 1 s apart)."""


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def serves() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for serve in started:
        serve.close()


def _session_rows(home: Path, session_id: str) -> tuple[str | None, list[tuple[str, Any, str | None]]]:
    with SyncStateDb(home / "state.db") as store:
        session = store.get_session(session_id)
        rows = [(m.role, m.content, m.finish_reason) for m in store.get_messages(session_id)]
        assert store.open_turns() == []
        return session.end_reason, rows


def _continue(serve: Serve, upstream: ScriptedUpstream, response_id: str) -> list[dict[str, object]]:
    """Continue the conversation after the crashed response; the messages the upstream got."""
    upstream.enqueue(text_reply("Picking up where we left off."))
    before = len(upstream.requests)
    status, body = serve.request(
        "POST", "/v1/responses", {"model": "hermes-agent", "input": "please go on", "previous_response_id": response_id}
    )
    assert status == 200, body
    assert body["status"] == "completed"
    assert len(upstream.requests) == before + 1
    sent = upstream.requests[-1].messages
    assert transcript_problems(sent) == []
    assert consecutive_assistants(sent) == []
    assert sent[-1] == {"role": "user", "content": "please go on"}
    return sent


def test_kill_9_mid_stream_keeps_the_streamed_text(
    upstream: ScriptedUpstream, serves: list[Serve], hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply(STORY, chunk_delay=0.03))  # about 12 s of streaming
    serve = Serve(hermes_home, upstream, tmp_path)
    serves.append(serve)
    stream = StreamRecorder(
        serve.base, "/v1/responses", {"model": "hermes-agent", "input": "tell me a story", "stream": True}
    ).start()
    assert wait_until(lambda: len(stream.of_type("response.output_text.delta")) >= 100, 30), stream.events[-3:]
    killed_at = time.monotonic()
    serve.kill9()
    safe = stream.text_before(killed_at - SAFE_MARGIN)
    assert len(safe) > 100
    assert stream.ended.wait(10)
    [created] = stream.of_type("response.created")
    response_id = created["response"]["id"]
    session_id = stream.headers["X-Hermes-Session-Id"]

    restarted = Serve(hermes_home, upstream, tmp_path)
    serves.append(restarted)
    end_reason, rows = _session_rows(hermes_home, session_id)
    assert end_reason == "interrupted"
    assert [role for role, _, _ in rows] == ["user", "assistant"]
    _, partial, finish_reason = rows[1]
    assert isinstance(partial, str) and partial.startswith(safe) and STORY.startswith(partial)
    assert finish_reason == "interrupted"

    status, response = restarted.request("GET", f"/v1/responses/{response_id}")
    assert status == 200
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "interrupted"}
    texts = [part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"]]
    assert texts == [partial]

    sent = _continue(restarted, upstream, response_id)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[2]["content"] == partial


def test_kill_9_mid_tool_leaves_a_placeholder_result(
    upstream: ScriptedUpstream, serves: list[Serve], hermes_home: Path, tmp_path: Path
) -> None:
    marker = f"hermes-kill9-{uuid.uuid4().hex[:10]}"
    upstream.enqueue(
        tool_reply([call("terminal", {"command": f"sleep 1000 # {marker}"}, id="call_sleep")], text="Running it.")
    )
    serve = Serve(hermes_home, upstream, tmp_path)
    serves.append(serve)
    try:
        stream = StreamRecorder(
            serve.base, "/v1/responses", {"model": "hermes-agent", "input": "run the sleep", "stream": True}
        ).start()
        assert wait_until(lambda: pids_with(marker), 30), f"the tool did not start: {serve.log}"
        serve.kill9()
        assert stream.ended.wait(10)
        [created] = stream.of_type("response.created")
        response_id = created["response"]["id"]
        session_id = stream.headers["X-Hermes-Session-Id"]

        restarted = Serve(hermes_home, upstream, tmp_path)
        serves.append(restarted)
        end_reason, rows = _session_rows(hermes_home, session_id)
        assert end_reason == "interrupted"
        assert [(role, content) for role, content, _ in rows] == [
            ("user", "run the sleep"),
            ("assistant", "Running it."),
            ("tool", SERVER_STOPPED_TOOL_RESULT),
        ]

        status, response = restarted.request("GET", f"/v1/responses/{response_id}")
        assert status == 200
        assert response["status"] == "incomplete"
        calls = [item for item in response["output"] if item["type"] == "function_call"]
        outputs = [item for item in response["output"] if item["type"] == "function_call_output"]
        assert [c["call_id"] for c in calls] == ["call_sleep"]
        assert [(o["call_id"], o["output"]) for o in outputs] == [("call_sleep", SERVER_STOPPED_TOOL_RESULT)]

        sent = _continue(restarted, upstream, response_id)
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
        assert sent[3]["tool_call_id"] == "call_sleep" and sent[3]["content"] == SERVER_STOPPED_TOOL_RESULT
    finally:
        for pid in pids_with(marker):  # never leave the sleep behind, whoever should have killed it
            os.kill(pid, signal.SIGKILL)


def test_kill_9_mid_run_settles_the_run_and_its_turn(
    upstream: ScriptedUpstream, serves: list[Serve], hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply(STORY, chunk_delay=0.03))
    serve = Serve(hermes_home, upstream, tmp_path)
    serves.append(serve)
    status, started = serve.request("POST", "/v1/runs", {"model": "hermes-agent", "input": "tell me a story"})
    assert status == 202, started
    run_id, session_id = started["run_id"], started["session_id"]

    def streaming_checkpointed() -> bool:
        with SyncStateDb(hermes_home / "state.db") as reader:
            rows = reader.get_messages(session_id) if reader.find_session(session_id) else []
        return len(rows) == 2 and len(str(rows[1].content)) > 100

    assert wait_until(streaming_checkpointed, 30, interval=0.1), serve.log
    assert serve.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "running"
    serve.kill9()

    restarted = Serve(hermes_home, upstream, tmp_path)
    serves.append(restarted)
    status, run = restarted.request("GET", f"/v1/runs/{run_id}")
    assert status == 200
    assert run["status"] == "interrupted"
    end_reason, rows = _session_rows(hermes_home, session_id)
    assert end_reason == "interrupted"
    assert [role for role, _, _ in rows] == ["user", "assistant"]
    assert STORY.startswith(str(rows[1][1])) and len(str(rows[1][1])) > 100
