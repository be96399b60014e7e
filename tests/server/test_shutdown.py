"""SIGTERM to a real `hermes serve` while chat, responses and run streams are open.

Every stream must get its terminal frame before the process exits, the turns must be
stored as interrupted with their partial text, and the process must exit 0 without a
traceback (in particular no write to an already closed database).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from state_db import stored_response

from hermes.error_codes import SERVER_SHUTDOWN
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, text_reply

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
PARTIAL = "alpha beta gamma"
WAIT = 30.0


def wait_until(condition: Callable[[], bool], timeout: float = WAIT, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class StreamReader:
    """Reads one SSE response on a thread; `text` grows as bytes arrive."""

    def __init__(self, base: str, method: str, path: str, body: dict[str, object] | None) -> None:
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=WAIT)
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        self.text = ""
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                line = self.response.readline()
                if not line:
                    break
                self.text += line.decode()
        except OSError:
            pass
        finally:
            self.ended.set()

    def data_frames(self) -> list[tuple[str | None, str]]:
        frames = []
        for block in self.text.split("\n\n"):
            event = None
            data = []
            for line in block.split("\n"):
                if line.startswith("event: "):
                    event = line[len("event: "):]
                elif line.startswith("data: "):
                    data.append(line[len("data: "):])
            if data:
                frames.append((event, "\n".join(data)))
        return frames

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        # Three words arrive, then the upstream goes silent: every turn is mid-stream.
        server.default = text_reply(f"{PARTIAL} delta epsilon").stall_after(3)
        yield server


def spawn(home: Path, upstream: ScriptedUpstream) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_API_KEY="test",
        HERMES_STREAM_RETRIES="0",
        HERMES_SANDBOX="off",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        env=env,
        cwd=str(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith(READY_PREFIX), line + (proc.stderr.read() if proc.poll() is not None else "")
    return proc, line[len(READY_PREFIX):].strip()


def post_json(base: str, path: str, body: dict[str, object]) -> dict[str, object]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=WAIT)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload: dict[str, object] = json.loads(response.read())
        assert response.status in (200, 202), payload
        return payload
    finally:
        conn.close()


def test_sigterm_ends_every_open_stream_and_stores_partial_turns(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    proc, base = spawn(tmp_path, upstream)
    streams: list[StreamReader] = []
    try:
        chat = StreamReader(base, "POST", "/v1/chat/completions",
                            {"model": "hermes-agent", "stream": True,
                             "messages": [{"role": "user", "content": "chat please"}]})
        streams.append(chat)
        responses = StreamReader(base, "POST", "/v1/responses",
                                 {"model": "hermes-agent", "stream": True, "input": "responses please"})
        streams.append(responses)
        run = post_json(base, "/v1/runs", {"input": "run please"})
        run_id = str(run["run_id"])
        events = StreamReader(base, "GET", f"/v1/runs/{run_id}/events", None)
        streams.append(events)

        wait_until(lambda: "gamma" in chat.text, what="chat partial text")
        wait_until(lambda: "gamma" in responses.text, what="responses partial text")
        wait_until(lambda: "gamma" in events.text, what="run partial text")

        proc.send_signal(signal.SIGTERM)
        for stream in streams:
            assert stream.ended.wait(WAIT), "a stream was left open after SIGTERM"
        _, err = proc.communicate(timeout=WAIT)
    finally:
        for stream in streams:
            stream.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "closed database" not in err, err

    # chat: a finish chunk with finish_reason "error" and code server_shutdown, then [DONE]
    chat_frames = [data for _, data in chat.data_frames()]
    assert chat_frames[-1] == "[DONE]", chat.text
    final = json.loads(chat_frames[-2])
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["error"]["code"] == SERVER_SHUTDOWN
    assert "by the user" not in final["error"]["message"]

    # responses: response.incomplete with reason server_shutdown, carrying the partial text
    event, data = responses.data_frames()[-1]
    assert event == "response.incomplete", responses.text
    body = json.loads(data)["response"]
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": SERVER_SHUTDOWN}
    texts = [part["text"] for item in body["output"] if item["type"] == "message" for part in item["content"]]
    assert any(PARTIAL in text for text in texts), body["output"]
    assert "by the user" not in responses.text

    # run events: the log ends with a terminal event
    run_frames = [json.loads(data) for _, data in events.data_frames()]
    assert run_frames[-1]["event"] in {"run.interrupted", "run.failed", "run.completed", "run.cancelled"}, events.text
    assert run_frames[-1]["event"] == "run.interrupted", events.text

    # stored state: three interrupted sessions with the partial assistant text
    store = open_sync_state(tmp_path / "state.db")
    try:
        sessions = store.list_sessions(limit=10)
        assert len(sessions) == 3
        for session in sessions:
            assert session.end_reason == "interrupted", session
            messages = store.get_messages(session.id)
            assistant = [m for m in messages if m.role == "assistant"]
            assert assistant and PARTIAL in (assistant[-1].content or ""), messages
    finally:
        store.close()

    record = stored_response(tmp_path, body["id"])
    assert record is not None
    assert record["response"]["status"] == "incomplete"
    assert record["response"]["incomplete_details"] == {"reason": SERVER_SHUTDOWN}
