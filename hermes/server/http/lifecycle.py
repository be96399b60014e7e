"""Live work of the server and its orderly wind-down at shutdown.

`LiveWork` knows every turn an OpenAI-shaped request runs (`track_turn`) and every SSE
stream that is open (`track_stream`). Shutdown (`hermes serve` on SIGTERM/SIGINT) goes:

    begin_shutdown()      every tracked turn is interrupted with SERVER_SHUTDOWN; turns
                          started from now on are interrupted as soon as they start
    (run registry)        background runs settle and close their event logs
    drained(timeout)      waits until every handler has written its terminal frame and
                          closed its stream — before aiohttp cancels handlers and the
                          stores close

Invariant: the stores are closed only after `drained()` (or its bound) has returned, so a
turn winding down never writes to a closed database within that bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Protocol

from aiohttp import web

from hermes.error_codes import SERVER_SHUTDOWN

SHUTDOWN_MESSAGE = "The server is shutting down."


class Stoppable(Protocol):
    def stop(self, code: str = ..., message: str = ...) -> None: ...


class Outcome(Protocol):
    error_code: str | None
    error: str | None


class LiveWork:
    """Counters and handles of the work in flight (also read by /health/detailed)."""

    def __init__(self, on_outcome: Callable[[Outcome], None] | None = None) -> None:
        self._on_outcome = on_outcome
        """Called with each tracked turn's result (health keeps the last upstream error)."""
        self._turns: set[Stoppable] = set()
        self._streams = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.closing = False

    @property
    def active_turns(self) -> int:
        return len(self._turns)

    @property
    def active_streams(self) -> int:
        return self._streams

    def _update(self) -> None:
        if self._turns or self._streams:
            self._idle.clear()
        else:
            self._idle.set()

    @contextlib.contextmanager
    def track_turn(self, turn: Stoppable) -> Iterator[None]:
        """Track `turn` while the block runs; during shutdown it is interrupted at once."""
        self._turns.add(turn)
        self._update()
        if self.closing:
            turn.stop(SERVER_SHUTDOWN, SHUTDOWN_MESSAGE)
        try:
            yield
        finally:
            self._turns.discard(turn)
            self._update()
            result = getattr(turn, "result", None)
            if result is not None and self._on_outcome is not None:
                self._on_outcome(result)

    def stream_opened(self) -> None:
        self._streams += 1
        self._update()

    def stream_closed(self) -> None:
        self._streams = max(0, self._streams - 1)
        self._update()

    def begin_shutdown(self) -> None:
        """Interrupt every tracked turn with SERVER_SHUTDOWN (idempotent)."""
        self.closing = True
        for turn in list(self._turns):
            turn.stop(SERVER_SHUTDOWN, SHUTDOWN_MESSAGE)

    async def drained(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds until no turn and no stream is open; True if so."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True


LIVE_WORK = web.AppKey("hermes.live_work", LiveWork)
"""The app's `LiveWork` (set by `create_app`)."""


def live_work(request: web.BaseRequest) -> LiveWork | None:
    """The request's app `LiveWork`, if the app has one (low-level requests have none)."""
    if not isinstance(request, web.Request):
        return None
    return request.config_dict.get(LIVE_WORK)
