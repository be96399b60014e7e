"""A running turn: its task, its event queue, its stop and its close (`TurnHandle`).

    handle = agent.start(TurnRequest(input="fix the failing test"))
    async with handle:                          # leaving: aclose(CLOSE_GRACE)
        async for event in handle.events():     # ends after the final TurnCompleted
            ...                                 # any callback may call handle.stop(code, message)
    handle.result                               # the TurnResult (None: the turn never completed)

The consumer side is `events()` (or `batches()`), `stop()`, `aclose()`, `result`; the producer (the engine,
or any other driver) gets the handle too and uses `emit()`, `listen()`, `unlisten()` and
`stop_requested`. An observer (`observe(callback)`, e.g. the server's turn log) sees every
emitted event, also after the consumer left; it must not block or raise.

Invariants:
- The turn runs in a task of its own, created here; nothing ever cancels the consumer.
  Events reach the consumer through a bounded queue (QUEUE_SIZE; `_channel.Channel`):
  when the consumer is behind, the producer waits at `emit()` (backpressure). Every emitted event is delivered,
  in order, unless the consumer left (`aclose()`) or wants only the result (`wait()`);
  `events()` ends after the last one.
  `batches()` delivers the same events in the same order, several at once when they were
  already queued.
- `stop(code, message)` is delivered inside the turn's own task. While the producer
  listens and runs its own code (reading the upstream, waiting for a tool) the handle
  cancels the task once; the producer recognises that cancel with `unlisten()`, which takes
  it back (`Task.uncancel()`). While the producer waits at `emit()`, or before it listens,
  only the stop is recorded; the producer checks `stop_requested` afterwards. The first
  stop wins; later ones are ignored. A stop from inside the turn's task (e.g. a tool's
  callback) is recorded only, since a cancel of the running task would land after it.
- `wait()` is the consumer that wants only the result: from then on events skip the
  queue (observers still see them) and it awaits the task itself. An `inline` turn has
  no task of its own: `wait()` runs the producer in the task that created the handle
  (which a stop then cancels and the producer's `unlisten()` takes back, as above);
  `aclose()` after it has nothing to wait for.
- `aclose(grace)` is how a consumer leaves: events are dropped from then on, the turn is
  stopped (unless `LEAVING_STOPS` is False: a turn run elsewhere, `RemoteTurn`, goes on
  there; such a subclass relays `stop()` itself by overriding `_deliver_stop`), the
  producer gets `grace` seconds to settle (interrupted tool results written,
  session ended), then its task is cancelled — the producer's cleanup still runs, without
  events — and awaited. Idempotent; always call it (or use `async with`).
- An exception raised by the producer (e.g. the session could not be opened) is raised
  by `events()` as `TurnCrashed` (its `cause`) once the events before it are delivered;
  `result` stays None. An exception from the consumer's own code is never a TurnCrashed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Coroutine
from functools import partial
from types import TracebackType
from typing import Any, ClassVar

from hermes.agent._channel import Channel
from hermes.agent.events import AgentEvent, TurnCompleted
from hermes.agent.types import TurnResult
from hermes.error_codes import INTERRUPTED

QUEUE_SIZE = 16
"""Events a producer may run ahead of its consumer before `emit()` waits."""
CLOSE_GRACE = 5.0
"""Seconds `aclose()` lets a stopped turn wind down before cancelling its task."""
STOP_MESSAGE = "interrupted by the user"

_CANCEL_MESSAGE = "hermes: turn stopped through its handle"


class TurnCrashed(Exception):
    """The producer raised instead of ending the turn with TurnCompleted."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class _End:
    """Queue marker: the producer has finished."""


_END = _End()


def _resolve(future: asyncio.Future[None], _task: object) -> None:
    if not future.done():
        future.set_result(None)


Producer = Callable[["TurnHandle"], Coroutine[Any, Any, None]]


class TurnHandle:
    """One turn running in its own task (see the module docstring)."""

    LEAVING_STOPS: ClassVar[bool] = True
    """`aclose()` stops the turn before it leaves (see the module docstring)."""

    def __init__(self, produce: Producer, *, name: str = "hermes-turn", inline: bool = False) -> None:
        self._queue: Channel[AgentEvent | _End] = Channel(QUEUE_SIZE)
        self.result: TurnResult | None = None
        """Set when the producer emits its TurnCompleted."""
        self.stop_code: str | None = None
        self.stop_message: str | None = None
        self._failure: TurnCrashed | None = None
        self._detached = False
        """Set by `aclose()` and `wait()`: nobody reads the queue any more; events are dropped."""
        self._listening = False
        self._cancel_sent = False
        self._observers: list[Callable[[AgentEvent], None]] = []
        self._finished = False
        self.inline = inline
        """The producer runs inside `wait()`, in the task that created the handle (no
        task of its own, no queue: for a consumer that wants only the result)."""
        self._inline: Producer | None = None
        """An inline turn's producer, until `wait()` runs it."""
        self.task: asyncio.Task[Any]
        """The task the producer runs in: its own, or for an inline turn the creator's."""
        if inline:
            current = asyncio.current_task()
            if current is None:
                raise RuntimeError("an inline turn is created inside the task that waits for it")
            self.task, self._inline = current, produce
        else:
            self.task = asyncio.create_task(self._run(produce), name=name)

    async def _run(self, produce: Producer) -> None:
        try:
            await produce(self)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - raised to the consumer by events()
            self._failure = TurnCrashed(exc)
        finally:
            self._listening = False
            self._finished = True
            with contextlib.suppress(asyncio.CancelledError):
                # After aclose() the queue was drained: there is room, this never waits.
                await self._queue.put(_END)

    # ---- the consumer's side ------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._finished if self.inline else self.task.done()

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        """The turn's events, ending after the last one; TurnCrashed if the producer raised."""
        queue = self._queue
        while True:
            item = queue.get_nowait() if len(queue) else await queue.get()
            if isinstance(item, _End):
                break
            yield item
        if self._failure is not None:
            raise self._failure from self._failure.cause

    async def batches(self) -> AsyncGenerator[list[AgentEvent], None]:
        """`events()` in lists: each list is the next event and every event queued behind it.

        A consumer that keeps up gets one event per list; one that fell behind (a slow
        client) gets what piled up meanwhile (at most QUEUE_SIZE) at once, to merge.
        """
        queue = self._queue
        done = False
        while not done:
            batch: list[AgentEvent] = []
            item = await queue.get()
            while True:
                if isinstance(item, _End):
                    done = True
                    break
                batch.append(item)
                if not len(queue):
                    break
                item = queue.get_nowait()
            if batch:
                yield batch
        if self._failure is not None:
            raise self._failure from self._failure.cause

    def stop(self, code: str = INTERRUPTED, message: str = STOP_MESSAGE) -> None:
        """Ask the turn to stop: it ends with TurnCompleted(status="interrupted", error_code=code)."""
        if self.stop_code is not None:
            return
        self.stop_code = code
        self.stop_message = message
        self._deliver_stop()

    async def wait(self) -> TurnResult | None:
        """Wait for the turn to end and return the result (None if the turn never completed).

        The events are not read: they are dropped from now on (observers still see each
        one) and the producer never waits at `emit()`. TurnCrashed if the producer raised.
        """
        self._detached = True
        self._queue.clear()
        if self._inline is not None:
            produce, self._inline = self._inline, None
            await self._run(produce)
        task = self.task
        if not self.inline and not task.done():
            # What asyncio.wait((task,)) does for one task, without its sets and counters:
            # a future the task's end resolves; cancelling the waiter leaves the task alone.
            ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            task.add_done_callback(partial(_resolve, ended))
            await ended
        if self._failure is not None:
            raise self._failure from self._failure.cause
        return self.result

    async def settled(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the turn's task to finish, without stopping it."""
        if not self.inline and not self.task.done():
            await asyncio.wait({self.task}, timeout=timeout)

    async def aclose(self, grace: float = CLOSE_GRACE) -> None:
        """Leave: stop the turn, wait up to `grace` seconds for it, then cancel it (see above)."""
        self._detached = True
        if self.LEAVING_STOPS:
            self.stop()
        self._queue.clear()
        if self.inline:  # ran to its end inside `wait()`, or never ran: nothing to wait for
            self._inline = None
            return
        try:
            if not self.task.done():
                await asyncio.wait({self.task}, timeout=grace)
            if not self.task.done():
                self.task.cancel()
                await asyncio.wait({self.task})
        except asyncio.CancelledError:
            self.task.cancel()  # the consumer is cancelled while waiting: stop waiting for the engine
            raise
        finally:
            if self.task.done() and not self.task.cancelled():
                self.task.exception()  # retrieved: a failure was the consumer's to read from events()

    async def __aenter__(self) -> TurnHandle:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def observe(self, observer: Callable[[AgentEvent], None]) -> None:
        """Call `observer` with every event emitted from now on (register it before the
        turn's task first runs to see them all)."""
        self._observers.append(observer)

    # ---- the producer's side ------------------------------------------------------------

    @property
    def stop_requested(self) -> bool:
        return self.stop_code is not None

    async def emit(self, event: AgentEvent) -> None:
        """Hand `event` to the consumer; waits while the queue is full. A stop is only recorded meanwhile."""
        if isinstance(event, TurnCompleted):
            self.result = event.result
        for observer in self._observers:
            observer(event)
        if self._detached:
            return
        queue = self._queue
        if not queue.full():
            queue.put_nowait(event)  # no wait: nothing to guard (the common case)
            return
        listening, self._listening = self._listening, False
        try:
            await queue.put(event)
        finally:
            self._listening = listening

    def listen(self) -> None:
        """From now on a stop cancels the producer's task (once).

        A stop made before is not delivered: check `stop_requested` after listening.
        """
        self._listening = True

    def unlisten(self) -> bool:
        """Stop listening; True when a stop's cancel was taken back and no other cancel is pending.

        Call it first thing on catching CancelledError (or any exception a cancel may have
        turned into) in producer code.
        """
        self._listening = False
        if not self._cancel_sent:
            return False
        self._cancel_sent = False
        return self.task.uncancel() == 0

    def _deliver_stop(self) -> None:
        """Deliver a recorded stop to the producer (a subclass whose producer runs elsewhere relays it there)."""
        task = self.task
        if not self._listening or self._cancel_sent or task.done() or task.cancelling():
            return
        try:
            current = asyncio.current_task()
        except RuntimeError:  # outside the event loop: the producer sees stop_requested later
            return
        if task is current:
            return
        self._cancel_sent = True
        task.cancel(_CANCEL_MESSAGE)
