"""Fixtures for the TUI tests: a real SQLite store, the scripted upstream, the real engine.

`make_tui` builds the app with `hermes.tui.app.make_app` — the same factory `hermes chat`
uses — around an agent from `build_agent` that talks to a `ScriptedUpstream` on loopback.
The test tools are small and deterministic (no model, no remote anything): `shell` sleeps
as long as asked and asks for approval when told the command is risky.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.errors import ToolError
from hermes.store import open_session_store
from hermes.store.base import NewMessage, SessionStore
from hermes.testing.upstream import ScriptedUpstream
from hermes.tui.app import HermesApp, make_app


async def _shell(args: dict[str, Any], ctx: ToolContext) -> str:
    command = str(args.get("command", ""))
    if args.get("risky"):
        if not await ctx.request_approval("shell", command, "deletes files", "recursive_delete"):
            raise ToolError("the user denied this command")
    await asyncio.sleep(float(args.get("sleep", 0)))
    return f"ran: {command}\nline 2"


async def _write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"wrote {len(str(args.get('content', '')))} bytes to {args.get('path')}"


def test_tools() -> ToolRegistry:
    obj = {"type": "object", "properties": {}}
    return ToolRegistry(
        [
            Tool("shell", "Run a command.", obj, _shell, preview_key="command"),
            Tool("write_file", "Write a file.", obj, _write_file, preview_key="path"),
        ]
    )


test_tools.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = open_session_store(tmp_path / "state.db")
    yield opened
    opened.close()


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, upstream: ScriptedUpstream) -> Settings:
    return Settings(
        home=tmp_path,
        base_url=upstream.base_url,
        model="scripted-model",
        api_key="x",
        stream_retries=2,
        stream_stale_timeout=2.0,
        tool_stall_warning=0.3,
    )


@pytest.fixture
async def make_tui(
    settings: Settings, store: SessionStore, tmp_path: Path
) -> AsyncIterator[Callable[..., HermesApp]]:
    from hermes.agent.factory import build_agent

    agents = []

    def build(**kwargs: Any) -> HermesApp:
        agent = build_agent(kwargs.pop("settings", settings), store, tools=test_tools())
        agents.append(agent)
        kwargs.setdefault("cwd", str(tmp_path))
        return make_app(agent, store, kwargs.pop("app_settings", settings), **kwargs)

    yield build
    for agent in agents:
        await agent.aclose()


def seed_session(store: SessionStore, title: str, exchanges: list[tuple[str, str]], *, source: str = "tui") -> str:
    """A stored session with the given (prompt, answer) pairs."""
    record = store.create_session(source=source, model="scripted-model", title=title)
    for prompt, answer in exchanges:
        store.append_message(record.id, NewMessage(role="user", content=prompt))
        store.append_message(record.id, NewMessage(role="assistant", content=answer))
    return record.id


async def until(pilot: Any, predicate: Callable[[], object], timeout: float = 5.0) -> None:
    """Let the app run until `predicate()` is true (fails the test after `timeout` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached within {timeout}s")
        await pilot.pause(0.02)
