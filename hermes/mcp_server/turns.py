"""One hermes turn per MCP `chat` call (`McpTurns`).

Invariants:
- a turn runs through the backend's agent (hermes/backend.py: local, in the folder the
  server was started in; or a `hermes serve`, under its own policy), with no approver:
  a command or write that needs approval is refused, as in `hermes serve` (unless
  --yolo);
- a `session_id` must name a stored session (else `ChatRefused`, before anything runs);
  a call without one starts a new session, whose id the answer carries;
- one turn per session at a time: a second call on a session whose turn is running is
  refused (`ChatRefused`), never queued;
- a turn longer than `timeout` seconds is stopped and answered as timed out; a call that
  is cancelled (the MCP client's `notifications/cancelled`, or the server closing) stops
  its turn, which gets `STOP_GRACE` seconds to store what it did, and the cancel goes on;
- each tool the turn starts is reported to `progress` (one line: the tool and its
  summary); a report that fails is logged and never fails the turn.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import TurnRequest
from hermes.backend import ChatAgent, ChatSessions, resolve_session
from hermes.errors import SessionNotFound

log = logging.getLogger(__name__)

Progress = Callable[[float, str], Awaitable[None]]
"""Reports the turn's activity: (how many tools it started so far, what it is doing)."""

SOURCE = "mcp"
"""The source of the sessions this server creates (`hermes sessions list --source mcp`)."""
STOP_GRACE = 5.0
"""Seconds a stopped turn gets to store its interrupted state before its task is cancelled."""
TURN_TIMEOUT_CODE = "turn_timeout"
"""The error code of a turn stopped for running past the server's turn timeout."""


class ChatRefused(Exception):
    """The call was refused before a turn started (unknown session, session busy, bad input)."""


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """How one `chat` call's turn ended."""

    session_id: str
    text: str
    """The answer (what was delivered, for a partial or stopped turn)."""
    status: str
    """completed, partial, failed or interrupted (TurnResult.status)."""
    error: str | None = None


@dataclass(eq=False)
class McpTurns:
    """Runs `chat` calls as hermes turns (see the module docstring)."""

    agent: ChatAgent
    sessions: ChatSessions
    cwd: Path
    timeout: float
    yolo: bool = False
    _running: set[str] = field(default_factory=set)

    async def chat(self, prompt: str, session_id: str | None = None, progress: Progress | None = None) -> ChatAnswer:
        if not prompt.strip():
            raise ChatRefused("prompt must not be empty")
        if session_id is not None:
            try:
                found = await resolve_session(self.sessions, resume=session_id)
            except SessionNotFound:
                raise ChatRefused(f"no hermes session {session_id!r}: leave session_id out to start one") from None
            assert found is not None
            # No await between this check and the add: two calls cannot both pass it.
            if found in self._running:
                raise ChatRefused(f"session {found} is already running a turn: wait for it to finish")
            self._running.add(found)
            try:
                return await self._run(prompt, found, progress)
            finally:
                self._running.discard(found)
        return await self._run(prompt, None, progress)  # a new session: nothing else can hold it

    async def _run(self, prompt: str, session_id: str | None, progress: Progress | None) -> ChatAnswer:
        request = TurnRequest(
            input=prompt,
            session_id=session_id,
            source=SOURCE,
            approve=None,  # nobody can answer an approval here: refused
            yolo=self.yolo,
            cwd=str(self.cwd),
        )
        handle = self.agent.start(request)
        try:
            try:
                with anyio.fail_after(self.timeout):
                    await _follow(handle, progress)
                result = handle.result
            except TimeoutError:
                reason = f"the turn ran longer than {self.timeout:g} s and was stopped"
                handle.stop(TURN_TIMEOUT_CODE, reason)
                with anyio.CancelScope(shield=True):
                    await handle.aclose(STOP_GRACE)
                result = handle.result
                if result is None:  # it did not settle within the grace
                    return ChatAnswer(session_id or "", "", "interrupted", reason)
        except TurnCrashed as crash:
            return ChatAnswer(session_id or "", "", "failed", f"{type(crash.cause).__name__}: {crash.cause}")
        finally:
            # Also when this call is cancelled: the stop and its grace run shielded. The stop
            # is explicit because leaving a remote turn alone would let the server's run go on.
            if handle.result is None:
                handle.stop()
            with anyio.CancelScope(shield=True):
                await handle.aclose(STOP_GRACE)
        if result is None:
            return ChatAnswer(session_id or "", "", "failed", "the turn ended without a result")
        return ChatAnswer(result.session_id, result.final_text, result.status, result.error)


async def _follow(handle: TurnHandle, progress: Progress | None) -> None:
    """Read the turn's events to its end, reporting each tool it starts."""
    tools = 0
    async with contextlib.aclosing(handle.events()) as events:
        async for event in events:
            if event.type != "tool.started" or progress is None:
                continue
            tools += 1
            try:
                await progress(tools, f"{event.name}: {event.preview}"[:200])
            except Exception as exc:  # noqa: BLE001 - a client that stopped listening does not fail the turn
                log.debug("progress report failed: %s", exc)
