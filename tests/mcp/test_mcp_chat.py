"""MCP tools through `hermes chat -q` (a real subprocess) against the scripted upstream."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_harness import http_entry, run_hermes, stdio_entry, write_config

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


def tool_messages(upstream: ScriptedUpstream, index: int) -> list[dict[str, object]]:
    return [m for m in upstream.requests[index].messages if m.get("role") == "tool"]


def test_stdio_and_http_tools_reach_the_model(upstream: ScriptedUpstream, hermes_home: Path, http_mcp: str) -> None:
    write_config(hermes_home, stdio_entry("x", "stdio_server.py"), http_entry("web", http_mcp))
    upstream.enqueue(
        tool_reply([call("mcp__x__y", {"text": "hello"}, id="c1"), call("mcp__web__add", {"a": 20, "b": 22}, id="c2")]),
        text_reply("All done."),
    )
    proc = run_hermes("chat", "-q", "use the tools", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "All done."
    offered = {tool["function"]["name"] for tool in upstream.requests[0].body["tools"]}
    assert {"mcp__x__y", "mcp__web__add", "terminal"} <= offered
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(upstream, 1)}
    assert str(results["c1"]).startswith("echo from x: hello")
    assert results["c2"] == "sum is 42"
    assert "mcp__x__y" in proc.stderr  # the tool activity line, like built-ins


def test_a_server_that_fails_to_start_is_one_line_and_the_rest_work(upstream: ScriptedUpstream, hermes_home: Path) -> None:
    write_config(hermes_home, stdio_entry("bad", "broken_server.py"), stdio_entry("x", "stdio_server.py"))
    upstream.enqueue(tool_reply([call("mcp__x__y", {"text": "still here"}, id="c1")]), text_reply("ok"))
    proc = run_hermes("chat", "-q", "go", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    failure_lines = [line for line in proc.stderr.splitlines() if "'bad'" in line]
    assert len(failure_lines) == 1
    assert failure_lines[0].startswith("hermes: MCP server 'bad' failed:") and "MISSING_TOKEN" in failure_lines[0]
    assert str(tool_messages(upstream, 1)[0]["content"]).startswith("echo from x: still here")
    offered = {tool["function"]["name"] for tool in upstream.requests[0].body["tools"]}
    assert not any(name.startswith("mcp__bad__") for name in offered)


def test_json_mode_keeps_stdout_clean_and_reports_tool_events(upstream: ScriptedUpstream, hermes_home: Path) -> None:
    write_config(hermes_home, stdio_entry("bad", "broken_server.py"), stdio_entry("x", "stdio_server.py"))
    upstream.enqueue(tool_reply([call("mcp__x__fail", {"reason": "no disk"}, id="c1")]), text_reply("it failed"))
    proc = run_hermes("chat", "-q", "go", "--json", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    completed = [e for e in events if e["type"] == "tool.completed"]
    assert completed[0]["name"] == "mcp__x__fail" and completed[0]["is_error"] is True
    assert "MCP server 'bad' failed" in proc.stderr


def test_approval_ask_puts_calls_under_the_policy(upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    entry = stdio_entry("x", "stdio_server.py", approval='"ask"', env=f'{{ MCP_TEST_PIDFILE = "{pidfile}" }}')
    write_config(hermes_home, entry)
    upstream.enqueue(tool_reply([call("mcp__x__y", {"text": "secret"}, id="c1")]), text_reply("denied, ok"))
    proc = run_hermes("chat", "-q", "go", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_messages(upstream, 1)
    assert str(result["content"]).startswith("DENIED:") and "echo from x" not in str(result["content"])

    upstream.enqueue(tool_reply([call("mcp__x__y", {"text": "secret"}, id="c1")]), text_reply("ran"))
    proc = run_hermes("chat", "-q", "go", "--yolo", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert str(tool_messages(upstream, 3)[0]["content"]).startswith("echo from x: secret")


def test_output_is_capped_like_other_tools(upstream: ScriptedUpstream, hermes_home: Path) -> None:
    write_config(hermes_home, 'tool_output_limit = 100\n', stdio_entry("x", "stdio_server.py"))
    upstream.enqueue(tool_reply([call("mcp__x__y", {"text": "z" * 5000}, id="c1")]), text_reply("ok"))
    proc = run_hermes("chat", "-q", "go", home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    content = str(tool_messages(upstream, 1)[0]["content"])
    assert "characters cut" in content and len(content) < 400
