"""One log line per turn that went wrong, for the operator of `hermes serve`.

    turn_log = TurnLog()                    # one per app
    turn = engine.start(request)
    turn_log.watch(turn)                    # before the turn's task first runs

Kinds, each one line on the `hermes.turns` logger:

    turn_failed       ERROR    a turn ended failed:      session, error code, message
    turn_cancelled    WARNING  a turn was interrupted:   session, stop code (client gone, shutdown…)
    tool_failed       WARNING  a tool call ended in an error (not one a stop interrupted)
    upstream_error    WARNING  a model request failed and is retried (the last failure of
                               a failed turn is its turn_failed line)

Invariants:
- Messages are short and redacted: the first line only, at most `MESSAGE_LIMIT`
  characters, URLs replaced by ``<url>`` and API-key-like tokens masked; arguments and
  tool output beyond that never reach the log.
- Rate-limited per kind: at most `burst` lines of one kind per `window` seconds; the
  first line of a later window says how many of that kind were left out.
- Watching never changes a turn: the observer only reads events (`TurnHandle.observe`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hermes.agent.events import AgentEvent, Retrying, ToolCompleted, TurnCompleted, TurnStarted
from hermes.agent.turn_handle import TurnHandle

LOGGER = "hermes.turns"
MESSAGE_LIMIT = 200

Kind = Literal["turn_failed", "turn_cancelled", "tool_failed", "upstream_error"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_KEY = re.compile(r"\b(sk|pk|rk|key|tok)-[A-Za-z0-9_*-]{6,}", re.IGNORECASE)
_BEARER = re.compile(r"(?i)\bbearer\s+\S+")


def short(text: str | None) -> str:
    """`text` as it may appear in the log (see the module docstring)."""
    first = (text or "").strip().split("\n", 1)[0]
    first = _URL.sub("<url>", first)
    first = _BEARER.sub("Bearer ****", first)
    first = _KEY.sub(lambda m: f"{m.group(1)}-****", first)
    return first if len(first) <= MESSAGE_LIMIT else first[: MESSAGE_LIMIT - 1] + "…"


@dataclass(slots=True)
class _Window:
    start: float
    passed: int = 0
    dropped: int = 0


class TurnLog:
    """See the module docstring."""

    def __init__(
        self,
        *,
        burst: int = 5,
        window: float = 60.0,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.window = window
        self.logger = logger or logging.getLogger(LOGGER)
        self._clock = clock
        self._windows: dict[Kind, _Window] = {}

    def watch(self, handle: TurnHandle) -> None:
        """Log what goes wrong in the turn behind `handle`."""
        handle.observe(_TurnWatch(self, handle).on_event)

    def line(self, kind: Kind, level: int, message: str, *args: object) -> None:
        """One line of `kind`, unless this window's `burst` of that kind is spent."""
        now = self._clock()
        window = self._windows.get(kind)
        if window is None or now - window.start >= self.window:
            dropped = window.dropped if window is not None else 0
            window = self._windows[kind] = _Window(now)
            if dropped:
                message = f"{message} ({dropped} more {kind} lines were left out)"
        if window.passed >= self.burst:
            window.dropped += 1
            return
        window.passed += 1
        self.logger.log(level, message, *args)


class _TurnWatch:
    """The log's view of one turn: its session id, then what went wrong."""

    __slots__ = ("handle", "log", "session_id")

    def __init__(self, log: TurnLog, handle: TurnHandle) -> None:
        self.log = log
        self.handle = handle
        self.session_id = "-"

    def on_event(self, event: AgentEvent) -> None:
        log = self.log
        match event:
            case TurnStarted():
                self.session_id = event.session_id or "-"
            case ToolCompleted() if event.is_error and not self.handle.stop_requested:
                log.line(
                    "tool_failed", logging.WARNING, "tool failed: session=%s tool=%s call=%s: %s",
                    self.session_id, event.name, event.call_id, short(event.result),
                )
            case Retrying():
                log.line(
                    "upstream_error", logging.WARNING, "upstream error: session=%s attempt=%d/%d: %s",
                    self.session_id, event.attempt - 1, event.max_attempts, short(event.reason),
                )
            case TurnCompleted():
                result = event.result
                session_id = result.session_id or self.session_id
                if result.status == "failed":
                    log.line(
                        "turn_failed", logging.ERROR, "turn failed: session=%s code=%s: %s",
                        session_id, result.error_code or "-", short(result.error),
                    )
                elif result.status == "interrupted":
                    log.line(
                        "turn_cancelled", logging.WARNING, "turn cancelled: session=%s code=%s",
                        session_id, result.error_code or "-",
                    )
            case _:
                pass  # nothing else is the operator's concern
