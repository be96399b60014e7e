"""Fixtures for the MCP tests: real MCP servers (tests/mcp/servers/, built on the SDK's
MCPServer, which mcp 1.x called FastMCP) and the scripted upstream.

Every server is a real process: the stdio ones are started by hermes itself, the
streamable-HTTP one by the `http_mcp` fixture (it prints its port once it listens).
Helpers shared by the test modules live in mcp_harness.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcp_harness import SERVERS

from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture
def http_mcp() -> Iterator[str]:
    """A streamable-HTTP MCP server on loopback; yields its /mcp URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "http_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the server listens (or exits)
        assert line.startswith("PORT "), f"http MCP server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


