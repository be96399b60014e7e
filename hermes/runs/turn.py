"""The one way the server runs an agent turn: `TurnRun`.

Every endpoint — chat completions and responses (JSON and SSE), background runs and
session chat — starts its turn as a `TurnRun`:

    turn = TurnRun(agent, request)          # the turn runs in a task of its own
    stream.on_disconnect(turn.stop)         # any callback may stop it
    async for event in turn.events():       # ... and the consumer still gets the
        ...                                 # final TurnCompleted (status interrupted)
    await turn.aclose()                     # always: waits for the engine's cleanup

Stopping goes through the turn's `TurnInterrupt` handle (`turn.stop(code, message)`),
which `agent.run_turn(request, interrupt=...)` listens to: the engine stops the upstream
request and the tools, persists the partial turn and ends with `TurnCompleted(status=
"interrupted", error_code=code)`. A consumer that leaves (or is itself cancelled) calls
`aclose()`: it interrupts the turn, drops the events nobody reads, and waits up to
`CLOSE_GRACE` seconds for the engine to wind down before cancelling the task outright
(cancellation propagates through the engine's cleanup, without a final event).

Events reach the consumer through a bounded queue: when the upstream's bytes are
already buffered nothing in the engine suspends, so an unbounded queue would let one
turn run to its end before its writer (or any other stream) is scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Protocol

from hermes.agent.events import AgentEvent, TurnCompleted
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.types import TurnRequest, TurnResult
from hermes.error_codes import INTERRUPTED

QUEUE_SIZE = 16
CLOSE_GRACE = 5.0
"""Seconds `aclose()` lets an interrupted turn wind down before cancelling its task."""


class TurnEngine(Protocol):
    """What the server needs from the engine (`hermes.agent.engine.Agent` satisfies it)."""

    def run_turn(
        self, request: TurnRequest, *, interrupt: TurnInterrupt | None = None
    ) -> AsyncIterator[AgentEvent]: ...


class TurnCrashed(Exception):
    """The engine raised instead of ending with TurnCompleted."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class _End:
    """Queue marker: the pump has finished."""


_END = _End()


class TurnRun:
    """One turn running in its own task; iterate `events()` to consume it."""

    def __init__(self, agent: TurnEngine, request: TurnRequest) -> None:
        self._agent = agent
        self._request = request
        self._queue: asyncio.Queue[AgentEvent | _End] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self.interrupt = TurnInterrupt()
        self.result: TurnResult | None = None
        self._failure: TurnCrashed | None = None
        self._detached = False
        """Set by `aclose()`: nobody reads the queue any more; events are dropped."""
        self.task = asyncio.create_task(self._pump(), name="hermes-turn")

    async def _pump(self) -> None:
        agen = self._agent.run_turn(self._request, interrupt=self.interrupt)
        try:
            async for event in agen:
                if isinstance(event, TurnCompleted):
                    self.result = event.result
                if not self._detached:
                    await self._queue.put(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - handed to the consumer as TurnCrashed
            self._failure = TurnCrashed(exc)
        finally:
            # Cancelled at `put` (outside the generator): the engine's aclose() path
            # persists placeholders and ends the session; there is no final event then.
            if isinstance(agen, AsyncGenerator):
                with contextlib.suppress(Exception):
                    await agen.aclose()
            if not self._detached:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._queue.put(_END)

    @property
    def done(self) -> bool:
        return self.task.done()

    def stop(self, code: str = INTERRUPTED, message: str = "interrupted by the user") -> None:
        """Interrupt the turn (upstream request closed, tools stopped); idempotent.

        Before the engine listens (the task has not reached `run_turn` yet) the engine
        sees the handle already set when it starts and ends the turn at once.
        """
        self.interrupt.interrupt(code, message)

    async def events(self) -> AsyncIterator[AgentEvent]:
        """The turn's events, ending after TurnCompleted; raises TurnCrashed if the engine failed."""
        while True:
            item = await self._queue.get()
            if isinstance(item, _End):
                break
            yield item
        if self._failure is not None:
            raise self._failure

    async def wait(self) -> TurnResult | None:
        """Drain the events and return the result (None if the turn never completed)."""
        async for _ in self.events():
            pass
        return self.result

    async def settled(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the turn's task to finish, without cancelling it."""
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(self.task), timeout)

    async def aclose(self) -> None:
        """Stop the turn if it still runs and wait for its task to finish its cleanup.

        The consumer is gone after this: queued events are dropped, so a pump blocked on
        a full queue moves on and the engine can finish.
        """
        self._detached = True
        self.stop()
        while not self._queue.empty():
            self._queue.get_nowait()
        if not self.task.done():
            await asyncio.wait({self.task}, timeout=CLOSE_GRACE)
        if not self.task.done():
            self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
