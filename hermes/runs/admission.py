"""Admission: the one gate every turn of the server passes before it runs.

- `TurnLimiter` counts the turns in flight across every endpoint (OpenAI turns and
  background runs alike); beyond its limit a turn is refused with `TooManyTurns`.
- `Admission.start` admits and starts one background run of a session.

Invariants:
- Nothing is written before admission passes: the closing check, the busy check and the
  limiter come before `RunRegistry.create` writes the run.
- A session has at most one unsettled run. This instance's registry is read after the
  busy check's one await, and nothing awaits from there to `RunRegistry.create` (which
  registers the run), so of two starts on this instance the second sees the first. Two
  starts on two instances may both pass the check; the storage then admits one and
  `RunRegistry.create` raises `SessionBusy` for the other.
- A slot taken from the limiter is given back when the run's task ends, however it ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Protocol

from hermes.agent.types import TurnRequest
from hermes.errors import RunAlreadyActive, ServiceClosing, SessionBusy, TooManyTurns
from hermes.runs.driver import drive_run
from hermes.runs.registry import Run, RunKind, RunRegistry
from hermes.runs.turn import TurnEngine
from hermes.runs.turn_log import TurnLog


class TurnLimiter:
    """Counts turns in flight; beyond `limit` a turn is refused (`TooManyTurns`).

    Only in-flight work counts (not open streams whose turn has finished).
    ``limit <= 0`` disables the cap.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @contextlib.contextmanager
    def admit(self) -> Iterator[None]:
        if self.limit > 0 and self.active >= self.limit:
            raise TooManyTurns(self.limit)
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


class TurnObserver(Protocol):
    """Who counts admitted turns and remembers how they ended (the server's metrics)."""

    def turn_started(self) -> None: ...

    def note_outcome(self, error_code: str | None, error: str | None, at: float) -> None: ...


class Admission:
    """Admits background runs for one server instance (cheap: built per request)."""

    def __init__(
        self,
        registry: RunRegistry,
        limiter: TurnLimiter,
        engine: TurnEngine,
        observer: TurnObserver,
        *,
        yolo: bool = False,
        source: str = "api_server",
        turn_log: TurnLog | None = None,
    ) -> None:
        self.registry = registry
        self.limiter = limiter
        self.engine = engine
        self.observer = observer
        self.yolo = yolo
        self.source = source
        self.turn_log = turn_log
        """Logs what goes wrong in each started turn (`hermes.runs.turn_log`); None: nothing."""

    async def active_run_id(self, session_id: str) -> str | None:
        """The session's unsettled run on this instance, else (shared runs) on any instance.

        Another instance's run counts until it settles: its owner's stop, end, or (when
        the owner died) the orphan sweeper.
        """
        registry = self.registry
        elsewhere = None if registry.active_for_session(session_id) else await registry.active_elsewhere(session_id)
        busy = registry.active_for_session(session_id) or elsewhere
        return busy.run_id if busy is not None else None

    async def start(self, *, kind: RunKind, turn: TurnRequest, session_id: str) -> Run:
        """Admit and start one background turn of `session_id`.

        Raises:
            ServiceClosing: the instance is shutting down.
            RunAlreadyActive: the session has an unsettled run, here or elsewhere.
            TooManyTurns: the limiter's cap is reached.
        """
        registry = self.registry
        if registry.closing:
            raise ServiceClosing()
        busy = await self.active_run_id(session_id)
        if busy is not None:
            raise RunAlreadyActive(busy)
        slot = contextlib.ExitStack()
        slot.enter_context(self.limiter.admit())
        turn.session_id = session_id
        turn.source = self.source
        turn.yolo = turn.yolo or self.yolo
        try:
            run = await registry.create(kind=kind, session_id=session_id, model=turn.model or _model_of(self.engine))
        except SessionBusy:
            slot.close()
            raise RunAlreadyActive(await registry.unsettled_run_id(session_id)) from None
        except BaseException:
            slot.close()
            raise
        observer = self.observer
        observer.turn_started()
        watch = self.turn_log.watch if self.turn_log is not None else None
        task = registry.start(run, drive_run(registry, run, self.engine, turn, watch))
        task.add_done_callback(lambda _: slot.close())
        task.add_done_callback(lambda _: observer.note_outcome(run.error_code, run.error, time.time()))
        return run


def _model_of(engine: object) -> str | None:
    model = getattr(engine, "model", None)
    return model if isinstance(model, str) else None
