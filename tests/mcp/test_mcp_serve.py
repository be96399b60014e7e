"""`hermes serve` (a real process) offers the MCP tools to its chat completions."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from mcp_harness import hermes_env, http_entry, pid_alive, stdio_entry, write_config

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

READY = "hermes serve: listening on "


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_serve_runs_mcp_tools_and_stops_its_servers(
    upstream: ScriptedUpstream, hermes_home: Path, http_mcp: str, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    write_config(
        hermes_home,
        stdio_entry("x", "stdio_server.py", env=f'{{ MCP_TEST_PIDFILE = "{pidfile}" }}'),
        stdio_entry("bad", "broken_server.py"),
        http_entry("web", http_mcp),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        # The pid checks need the host's pid namespace: the sandbox's own test is test_mcp_sandbox.
        env=hermes_env(hermes_home, upstream, HERMES_SANDBOX="off"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        before: list[str] = []
        while True:  # every line before the ready line (bounded by the test timeout)
            line = proc.stderr.readline()
            assert line, "serve exited: " + "".join(before)
            if line.startswith(READY):
                base = line[len(READY) :].strip()
                break
            before.append(line)
        failures = [line for line in before if "'bad'" in line]
        assert len(failures) == 1 and "failed" in failures[0] and "MISSING_TOKEN" in failures[0]

        upstream.enqueue(
            tool_reply(
                [call("mcp__x__y", {"text": "via serve"}, id="c1"), call("mcp__web__add", {"a": 1, "b": 2}, id="c2")]
            ),
            text_reply("Served."),
        )
        answer = post(
            f"{base}/v1/chat/completions", {"model": "hermes-agent", "messages": [{"role": "user", "content": "go"}]}
        )
        assert answer["choices"][0]["message"]["content"] == "Served."  # type: ignore[index]
        offered = {tool["function"]["name"] for tool in upstream.requests[0].body["tools"]}
        assert {"mcp__x__y", "mcp__web__add"} <= offered
        results = {m["tool_call_id"]: m["content"] for m in upstream.requests[1].messages if m.get("role") == "tool"}
        assert str(results["c1"]).startswith("echo from x: via serve") and results["c2"] == "sum is 3"
        child = int(pidfile.read_text())
        assert pid_alive(child)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0
    deadline = time.monotonic() + 10
    while pid_alive(child):
        assert time.monotonic() < deadline, "the stdio MCP server outlived hermes serve"
        time.sleep(0.05)
