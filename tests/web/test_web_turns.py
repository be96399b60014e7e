"""web_fetch in real turns: `hermes chat -q` as a subprocess against the scripted upstream,
with a scripted page served on loopback."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

REPO = Path(__file__).resolve().parents[2]


class _Page(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        type(self).hits.append(self.path)
        body = b"<html><head><title>Ship log</title></head><body><h2>Release 2.1</h2>"
        body += b"<p>Adds <em>undo</em>.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        return


@pytest.fixture
def page_port() -> Iterator[int]:
    _Page.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def _chat_q(
    prompt: str, cwd: Path, home: Path, upstream: ScriptedUpstream, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_STREAM_STALE_TIMEOUT="5",
        HERMES_SANDBOX="off",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", prompt],
        cwd=cwd, env=env, input="", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _tool_message(upstream: ScriptedUpstream) -> str:
    tool = [m for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert len(tool) == 1
    return str(tool[0]["content"])


def test_chat_q_reads_an_allowed_page_as_markdown(upstream: ScriptedUpstream, page_port: int, tmp_path: Path) -> None:
    url = f"http://localhost:{page_port}/releases"
    upstream.enqueue(tool_reply([call("web_fetch", {"url": url})]))
    upstream.enqueue(text_reply("Release 2.1 adds undo."))
    proc = _chat_q(
        "what is new?", tmp_path, tmp_path / "home", upstream,
        HERMES_WEB_ALLOW="localhost", HERMES_WEB_ALLOW_PRIVATE="true",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "web_fetch" in upstream.requests[0].tool_names
    result = _tool_message(upstream)
    assert result.startswith(f"[web content from {url} · Ship log · read as Markdown · untrusted")
    assert "## Release 2.1" in result and "*undo*" in result
    assert _Page.hits == ["/releases"]
    assert "Release 2.1 adds undo." in proc.stdout


def test_chat_q_with_nobody_to_ask_refuses_a_domain_outside_web_allow(
    upstream: ScriptedUpstream, page_port: int, tmp_path: Path
) -> None:
    url = f"http://localhost:{page_port}/releases"
    upstream.enqueue(tool_reply([call("web_fetch", {"url": url})]))
    upstream.enqueue(text_reply("I could not read it."))
    proc = _chat_q("what is new?", tmp_path, tmp_path / "home", upstream, HERMES_WEB_ALLOW_PRIVATE="true")
    assert proc.returncode == 0, proc.stderr
    result = _tool_message(upstream)
    assert result.startswith("DENIED:") and "localhost is not in web_allow" in result
    assert "hermes config set web_allow localhost" in result
    assert _Page.hits == []
