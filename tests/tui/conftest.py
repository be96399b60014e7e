"""Fixtures for the TUI tests: a real SQLite store, the scripted upstream, the real engine.

`make_tui` builds the app with `hermes.tui.app.make_app` — the same factory `hermes chat`
uses — around an agent from `build_agent` that talks to a `ScriptedUpstream` on loopback.
App and agent share one `AsyncSessionStore` (`sessions`, the SQLite adapter over `store`);
tests seed and check through the synchronous `store` itself.
The test tools are small and deterministic (no model, no remote anything): `shell` sleeps
as long as asked (or until the test opens the named `gates` entry) and asks for approval
when told the command is risky.

Waiting: tests never sleep a fixed time and then assert. `until` polls the exact condition
the test asserts next; `settled` is the app's own "everything shown" state; `send_turn`
returns once a turn has started and finished. A fixed delay is only used where time has to
pass on purpose (a timeout), and then with a wide margin.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.css.query import QueryError

from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.checkpoints.files import LocalSessionFiles
from hermes.config import Settings
from hermes.errors import ToolError
from hermes.store.records import NewMessage
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.state_db import SyncStateDb, open_sync_state
from hermes.testing.upstream import ScriptedUpstream
from hermes.tui.app import HermesApp, make_app
from hermes.tui.widgets.assistant_message import AssistantMessage

Gates = defaultdict[str, asyncio.Event]


def test_tools(gates: Gates | None = None) -> ToolRegistry:
    """`shell` with `"gate": name` waits for `gates[name].set()` (no race against a sleep)."""
    gates = gates if gates is not None else defaultdict(asyncio.Event)

    async def shell(args: dict[str, Any], ctx: ToolContext) -> str:
        command = str(args.get("command", ""))
        if args.get("risky"):
            rule = str(args.get("rule", "recursive_delete"))
            if not await ctx.request_approval("shell", command, "deletes files", rule):
                raise ToolError("the user denied this command")
        if args.get("gate"):
            await gates[str(args["gate"])].wait()
        await asyncio.sleep(float(args.get("sleep", 0)))
        return f"ran: {command}\nline 2"

    async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"wrote {len(str(args.get('content', '')))} bytes to {args.get('path')}"

    obj = {"type": "object", "properties": {}}
    return ToolRegistry(
        [
            Tool("shell", "Run a command.", obj, shell, preview_key="command"),
            Tool("write_file", "Write a file.", obj, write_file, preview_key="path"),
        ]
    )


test_tools.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SyncStateDb]:
    opened = open_sync_state(tmp_path / "state.db")
    yield opened
    opened.close()


@pytest.fixture
def sessions(store: SyncStateDb) -> SqliteSessions:
    """The async interface over `store`, as `open_storage` gives the app and the agent."""
    return store.sessions


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
def gates() -> Gates:
    """Events the `shell` test tool waits on (`"gate": name` in its arguments)."""
    return defaultdict(asyncio.Event)


@pytest.fixture
async def make_tui(
    settings: Settings, sessions: SqliteSessions, tmp_path: Path, gates: Gates
) -> AsyncIterator[Callable[..., HermesApp]]:
    from hermes.agent.factory import build_agent

    agents = []

    def build(**kwargs: Any) -> HermesApp:
        app_store = kwargs.pop("sessions", sessions)
        tools = test_tools(gates)
        for extra in kwargs.pop("extra_tools", ()):
            tools.register(extra)
        agent = build_agent(kwargs.pop("settings", settings), app_store, tools=tools)
        agents.append(agent)
        kwargs.setdefault("cwd", str(tmp_path))
        app_settings = kwargs.pop("app_settings", settings)
        kwargs.setdefault("files", LocalSessionFiles(app_store, app_settings.home))
        return make_app(agent, app_store, app_settings, **kwargs)

    yield build
    for agent in agents:
        await agent.aclose()


def seed_session(
    store: SyncStateDb, title: str, exchanges: list[tuple[str, str]], *, source: str = "tui"
) -> str:
    """A stored session with the given (prompt, answer) pairs."""
    record = store.create_session(source=source, model="scripted-model", title=title)
    for prompt, answer in exchanges:
        store.append_message(record.id, NewMessage(role="user", content=prompt))
        store.append_message(record.id, NewMessage(role="assistant", content=answer))
    return record.id


def _describe(predicate: Callable[[], object]) -> str:
    try:
        return " ".join(inspect.getsource(predicate).split())
    except (OSError, TypeError):
        return repr(predicate)


async def until(
    pilot: Any,
    predicate: Callable[[], object],
    timeout: float = 10.0,
    step: float = 0.02,
    what: str | None = None,
) -> None:
    """Let the app run in `step`-second pauses until `predicate()` is true.

    Fails the test after `timeout` seconds, naming the condition. A predicate that queries
    a widget which is not mounted yet (a Textual `QueryError`) counts as "not yet".
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_error: QueryError | None = None
    while True:
        try:
            if predicate():
                return
            last_error = None
        except QueryError as exc:
            last_error = exc
        if loop.time() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for: {what or _describe(predicate)}"
            ) from last_error
        await pilot.pause(step)


def settled(app: HermesApp) -> bool:
    """Everything in the transcript is mounted and every answer's streamed text is on screen.

    A mounted `Markdown` chunk has finished its first render (its mount handler awaits it);
    `AssistantMessage.flushed` says no append is scheduled or running.
    """
    for child in app.chat.transcript.children:
        if not child.is_mounted:
            return False
        if isinstance(child, AssistantMessage):
            if not child.flushed or child.rendered_text != child.text:
                return False
            if not all(chunk.is_mounted for chunk in child.chunks):
                return False
    return True


async def until_settled(pilot: Any, timeout: float = 10.0) -> None:
    """Wait for `settled(app)`, then one idle pause so the screen is repainted."""
    await until(pilot, lambda: settled(pilot.app), timeout, what="the transcript to settle")
    await pilot.pause()


async def type_and_send(pilot: Any, text: str) -> None:
    """Put `text` in the prompt (as a paste would) and press Enter."""
    pilot.app.chat.chat_input.insert(text)
    await pilot.press("enter")


async def send_turn(pilot: Any, text: str, timeout: float = 10.0) -> None:
    """Send `text` as a prompt; return once its turn worker has started and finished.

    (`workers.wait_for_complete()` alone returns at once if the Enter key has not reached
    the app yet, so first wait for the new worker to exist.)
    """
    app = pilot.app
    before = app.chat.turns.turn_worker
    await type_and_send(pilot, text)
    await until(
        pilot, lambda: app.chat.turns.turn_worker is not before, timeout, what=f"the turn for {text!r} to start"
    )
    await app.workers.wait_for_complete()
    await until(pilot, lambda: not app.chat.turns.turn_running, timeout, what=f"the turn for {text!r} to finish")
