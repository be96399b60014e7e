"""`hermes mcp list [--json]` and `hermes doctor` with a working and a broken server."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_harness import http_entry, run_hermes, stdio_entry, write_config


def test_list_json_with_a_broken_server(hermes_home: Path, http_mcp: str) -> None:
    write_config(
        hermes_home,
        stdio_entry("x", "stdio_server.py"),
        stdio_entry("bad", "broken_server.py"),
        http_entry("web", http_mcp),
        http_entry("gone", "http://127.0.0.1:9/mcp", startup_timeout="3"),
    )
    proc = run_hermes("mcp", "list", "--json", home=hermes_home)
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)  # stdout is the JSON document and nothing else
    assert listing["object"] == "list"
    servers = {entry["name"]: entry for entry in listing["data"]}
    assert list(servers) == ["x", "bad", "web", "gone"]
    assert servers["x"]["status"] == "connected"
    assert [t["name"] for t in servers["x"]["tools"]] == ["mcp__x__y", "mcp__x__fail", "mcp__x__slow", "mcp__x__die"]
    assert servers["web"]["status"] == "connected" and [t["name"] for t in servers["web"]["tools"]] == [
        "mcp__web__add",
        "mcp__web__header",
    ]
    for name in ("bad", "gone"):
        assert "error" in servers[name]["status"] or "failed" in servers[name]["status"]
        assert servers[name]["message"] and servers[name]["tools"] == []
    assert "MISSING_TOKEN" in servers["bad"]["message"]


def test_list_without_servers(hermes_home: Path) -> None:
    proc = run_hermes("mcp", "list", "--json", home=hermes_home)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"object": "list", "data": []}
    human = run_hermes("mcp", "list", home=hermes_home)
    assert human.returncode == 0 and "no MCP servers configured" in human.stdout


def test_list_human_output_names_status_and_tools(hermes_home: Path) -> None:
    write_config(hermes_home, stdio_entry("x", "stdio_server.py"), stdio_entry("bad", "broken_server.py"))
    proc = run_hermes("mcp", "list", home=hermes_home)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("x  connected")
    assert any(line.strip().startswith("mcp__x__y") for line in lines)
    (bad,) = [line for line in lines if line.startswith("bad")]
    assert "failed" in bad and "MISSING_TOKEN" in bad


def test_doctor_lists_each_server_with_its_status(hermes_home: Path) -> None:
    write_config(hermes_home, stdio_entry("x", "stdio_server.py"), stdio_entry("bad", "broken_server.py"))
    # An empty model cache: doctor does not load and time the bundled model here.
    proc = run_hermes("doctor", "--json", home=hermes_home, HERMES_MODEL_CACHE=str(hermes_home / "no-models"))
    checks = {check["name"]: check for check in json.loads(proc.stdout)}
    assert checks["mcp x"]["status"] == "ok" and "4 tools" in checks["mcp x"]["detail"]
    assert checks["mcp bad"]["status"] == "failed" and "MISSING_TOKEN" in checks["mcp bad"]["detail"]
    assert proc.returncode == 1
