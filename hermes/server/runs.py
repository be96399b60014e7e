"""The run registry: turns the server runs in the background, and their event logs.

A *run* is one agent turn started by `POST /v1/runs` or a session chat endpoint. It is
owned by this registry, never by the HTTP request that started it: the turn runs in
its own task, so a client that disconnects from the event stream leaves the run going,
and only `RunRegistry.stop()` (POST /v1/runs/{id}/stop) or server shutdown ends it early.

Each run keeps an append-only log of `RunEvent`s numbered 1, 2, 3… (`seq`). Any number of
subscribers read it with `Run.follow(after=seq)`: first the events they missed, then the
live ones, until the run's log is closed. That is what makes `Last-Event-ID` / `?after=`
resumption work. The log is kept while the run lives and `retention` seconds (5 min)
after it settles; the run's status is written to the durable `RunStore` at every status
change, so `GET /v1/runs/{id}` still answers after the log is gone.

Approvals: while a turn waits for a command approval, the run holds a `PendingApproval`
with a future; `Run.resolve_approval()` completes it, and `approval_timeout` seconds
without an answer deny the command.

Lifecycle of `Run.status`:

    queued -> running <-> waiting_for_approval -> (stopping) -> completed | failed
                                                                | cancelled | interrupted
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hermes.agent.events import AgentEvent, ApprovalRequested, TurnCompleted, TurnStarted
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest, TurnResult
from hermes.error_codes import SERVER_SHUTDOWN
from hermes.errors import HermesError
from hermes.ids import new_run_id
from hermes.store.run_store import TERMINAL_STATES, RunRecord, RunStore

logger = logging.getLogger(__name__)

RunKind = Literal["run", "session_chat"]
"""`run`: POST /v1/runs (unnamed frames). `session_chat`: /api/sessions/{id}/chat[/stream]."""

EVENT_RETENTION_SECONDS = 300.0
APPROVAL_TIMEOUT_SECONDS = 300.0
PRUNE_INTERVAL_SECONDS = 3600.0
"""How often (at most) settling a run also prunes expired rows from the run store."""
APPROVAL_CHOICES: tuple[str, ...] = ("once", "session", "deny")


@dataclass(frozen=True, slots=True)
class RunEvent:
    seq: int
    """1-based position in the run's log (the SSE `id:`)."""
    name: str
    data: dict[str, Any]
    ts: float
    """Unix seconds when it was emitted."""


@dataclass(slots=True)
class PendingApproval:
    request_id: str
    """The tool call id the approval is for."""
    tool_name: str
    command: str
    reason: str
    future: asyncio.Future[ApprovalDecision]

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "tool_name": self.tool_name,
            "command": self.command,
            "reason": self.reason,
            "choices": list(APPROVAL_CHOICES),
        }


class ApprovalNotPending(Exception):
    """No approval is waiting (or none with the given request id)."""

    def __init__(self, message: str, *, active: bool) -> None:
        super().__init__(message)
        self.active = active


@dataclass(eq=False)
class Run:
    """One background turn and its event log. Created by `RunRegistry.create()`."""

    run_id: str
    kind: RunKind
    session_id: str | None
    model: str | None
    created_at: float
    status: str = "queued"
    updated_at: float = 0.0
    last_event: str | None = None
    output: str | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    error_code: str | None = None
    events: list[RunEvent] = field(default_factory=list)
    closed: bool = False
    """True once the log is complete (the terminal events are in it)."""
    task: asyncio.Task[None] | None = None
    interrupt: TurnInterrupt = field(default_factory=TurnInterrupt)
    """Stops the run's turn; it still settles through the engine's final TurnCompleted."""
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    settled_at: float | None = None
    stop_requested: bool = False
    result: TurnResult | None = None
    """The engine's result, once the turn has settled through `drive_turn`."""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _on_status: Callable[[Run], None] | None = None

    # ---- events -------------------------------------------------------------------

    def emit(self, name: str, data: dict[str, Any] | None = None) -> RunEvent:
        """Append an event to the log and wake every follower."""
        if self.closed:
            raise RuntimeError(f"run {self.run_id}: event log already closed")
        event = RunEvent(seq=len(self.events) + 1, name=name, data=dict(data or {}), ts=time.time())
        self.events.append(event)
        self.last_event = name
        self._wake()
        return event

    def close_log(self) -> None:
        self.closed = True
        self._wake()

    async def follow(self, after: int = 0) -> AsyncIterator[RunEvent]:
        """Every event with seq > after: the logged ones, then live ones until the log closes."""
        index = max(0, after)
        while True:
            changed = self._changed
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.closed:
                return
            await changed.wait()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ---- status -------------------------------------------------------------------

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATES

    @property
    def active(self) -> bool:
        return not self.terminal

    def set_status(self, status: str, **fields: Any) -> None:
        """Change status (and outcome fields) and persist the new record."""
        self.status = status
        for name, value in fields.items():
            setattr(self, name, value)
        self.updated_at = time.time()
        if self._on_status is not None:
            self._on_status(self)

    def record(self) -> RunRecord:
        return RunRecord(
            run_id=self.run_id,
            status=self.status,
            created_at=self.created_at,
            updated_at=self.updated_at or self.created_at,
            session_id=self.session_id,
            model=self.model,
            last_event=self.last_event,
            output=self.output,
            usage=self.usage,
            error=self.error,
            error_code=self.error_code,
            owner_pid=os.getpid(),
        )

    def to_json(self) -> dict[str, Any]:
        data = self.record().to_json()
        pending = self.pending_approval()
        if pending is not None:
            data["approval"] = pending.to_json()
        return data

    # ---- approvals ----------------------------------------------------------------

    def pending_approval(self) -> PendingApproval | None:
        for pending in self.approvals.values():
            if not pending.future.done():
                return pending
        return None

    def open_approval(self, request_id: str, tool_name: str, command: str, reason: str) -> PendingApproval:
        """The pending approval for `request_id`, created (status waiting_for_approval) if new."""
        pending = self.approvals.get(request_id)
        if pending is None or pending.future.done():
            future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
            pending = PendingApproval(request_id, tool_name, command, reason, future)
            self.approvals[request_id] = pending
            if self.status == "running":
                self.set_status("waiting_for_approval")
        return pending

    def resolve_approval(
        self, decision: ApprovalDecision, request_id: str | None = None, *, resolve_all: bool = False
    ) -> int:
        """Answer the oldest waiting approval (or the one for `request_id`, or all of them).

        Returns how many were resolved.

        Raises:
            ApprovalNotPending: the run waits for no approval (or not for `request_id`).
        """
        waiting = [p for p in self.approvals.values() if not p.future.done()]
        if request_id is not None:
            waiting = [p for p in waiting if p.request_id == request_id]
            if not waiting:
                raise ApprovalNotPending(f"No pending approval with request_id {request_id!r}", active=True)
        if not waiting:
            raise ApprovalNotPending("Run has no pending approval", active=False)
        if not resolve_all:
            waiting = waiting[:1]
        for pending in waiting:
            pending.future.set_result(decision)
        return len(waiting)

    async def wait_approval(self, request: ApprovalRequest, timeout: float) -> ApprovalDecision:
        """Park until the client answers, or deny after `timeout` seconds."""
        pending = self.open_approval(request.call_id, request.tool_name, request.command, request.reason)
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout)
        except TimeoutError:
            if not pending.future.done():
                pending.future.set_result(ApprovalDecision.DENY)
            return ApprovalDecision.DENY
        finally:
            if self.status == "waiting_for_approval" and self.pending_approval() is None:
                self.set_status("running")


class RunRegistry:
    """Every live run of this server process, plus retention of settled ones.

    Args:
        store: durable status rows (None keeps status in memory only).
        max_concurrent: active runs allowed at once (0 = unlimited).
        retention: seconds a settled run's event log stays available.
        approval_timeout: seconds an approval waits before the command is denied.
    """

    def __init__(
        self,
        store: RunStore | None = None,
        *,
        max_concurrent: int = 64,
        retention: float = EVENT_RETENTION_SECONDS,
        approval_timeout: float = APPROVAL_TIMEOUT_SECONDS,
    ) -> None:
        self.store = store
        self.max_concurrent = max(0, max_concurrent)
        self.retention = retention
        self.approval_timeout = approval_timeout
        self._runs: dict[str, Run] = {}
        self._evictions: dict[str, asyncio.TimerHandle] = {}
        self._closing = False
        self._last_prune = time.time()

    # ---- lookup -------------------------------------------------------------------

    def get(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def status(self, run_id: str) -> dict[str, Any] | None:
        """The run's status object: live when in memory, else the durable row's."""
        run = self._runs.get(run_id)
        if run is not None:
            return run.to_json()
        record = self.store.get(run_id) if self.store is not None else None
        return record.to_json() if record is not None else None

    @property
    def active_count(self) -> int:
        return sum(1 for run in self._runs.values() if run.active)

    @property
    def at_capacity(self) -> bool:
        return self.max_concurrent > 0 and self.active_count >= self.max_concurrent

    @property
    def closing(self) -> bool:
        return self._closing

    def active_for_session(self, session_id: str) -> Run | None:
        for run in self._runs.values():
            if run.session_id == session_id and run.active:
                return run
        return None

    def latest_for_session(self, session_id: str) -> Run | None:
        found = [run for run in self._runs.values() if run.session_id == session_id]
        return max(found, key=lambda run: run.created_at) if found else None

    # ---- lifecycle ----------------------------------------------------------------

    def create(
        self,
        *,
        kind: RunKind,
        session_id: str | None,
        model: str | None,
        run_id: str | None = None,
    ) -> Run:
        """Register a new queued run (persisted at once). Capacity is the caller's check."""
        now = time.time()
        run = Run(
            run_id=run_id or new_run_id(),
            kind=kind,
            session_id=session_id,
            model=model,
            created_at=now,
            updated_at=now,
            _on_status=self._persist,
        )
        self._runs[run.run_id] = run
        self._persist(run)
        return run

    def start(self, run: Run, turn: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `turn` in a task owned by the registry (not by any HTTP request).

        `turn` is expected to settle the run itself (see `drive_turn`); if it cannot
        (cancelled before it began, or crashed), the registry settles it here.
        """
        task = asyncio.get_running_loop().create_task(turn, name=f"hermes-{run.run_id}")
        run.task = task
        task.add_done_callback(lambda done: self._on_done(run, done))
        return task

    def _on_done(self, run: Run, task: asyncio.Task[None]) -> None:
        if not run.closed:
            if task.cancelled():
                status = "interrupted" if self._closing else "cancelled"
                run.set_status(status, error_code=status)
                _emit_final(run, f"run.{status}", {"status": status})
            else:
                exc = task.exception()
                message = (str(exc) or type(exc).__name__) if exc is not None else "The turn ended without a result."
                if exc is not None:
                    logger.error("run %s failed", run.run_id, exc_info=exc)
                run.set_status("failed", error=message, error_code="internal_error")
                _emit_final(run, "error", {"message": message})
        elif not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it again
        self.settled(run)

    def settled(self, run: Run) -> None:
        """Schedule removal of a settled run's log after `retention` seconds."""
        if run.settled_at is not None:
            return
        run.settled_at = time.time()
        for pending in run.approvals.values():
            if not pending.future.done():
                pending.future.set_result(ApprovalDecision.DENY)
        if self.store is not None:
            self.store.touch_receipts(run.run_id)
            if run.settled_at - self._last_prune > PRUNE_INTERVAL_SECONDS:
                self._last_prune = run.settled_at
                self.store.prune()
        loop = asyncio.get_running_loop()
        self._evictions[run.run_id] = loop.call_later(self.retention, self._evict, run.run_id)

    def _evict(self, run_id: str) -> None:
        self._evictions.pop(run_id, None)
        self._runs.pop(run_id, None)

    def _persist(self, run: Run) -> None:
        if self.store is not None:
            self.store.put(run.record())

    async def stop(self, run: Run) -> None:
        """Ask a live run to stop: it settles `cancelled` once the engine has cleaned up."""
        if run.terminal or run.stop_requested:
            return
        run.stop_requested = True
        run.set_status("stopping")
        run.interrupt.interrupt()
        if not run.interrupt.listened and run.task is not None and not run.task.done():
            run.task.cancel()  # no turn is listening (not started yet): stop the task itself

    async def wait(self, run: Run) -> None:
        """Wait until the run has settled (does not cancel it if the waiter is cancelled)."""
        if run.task is not None and not run.task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(run.task)
            if run.task.cancelled():
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise asyncio.CancelledError

    async def shutdown(self, timeout: float = 3.0) -> list[str]:
        """Cancel every live run and settle them `interrupted`. Returns their ids."""
        self._closing = True
        live = [run for run in self._runs.values() if run.active]
        for run in live:
            run.status = "stopping"
            run.interrupt.interrupt(SERVER_SHUTDOWN, "the server is shutting down")
            if not run.interrupt.listened and run.task is not None and not run.task.done():
                run.task.cancel()
        tasks = [run.task for run in live if run.task is not None]
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=timeout)
            for task in stuck:  # the engine did not wind down in time: cancel outright
                task.cancel()
        ids = []
        for run in live:
            if not run.closed:
                _emit_final(run, "run.interrupted", {"status": "interrupted"})
            if run.status != "interrupted":
                run.set_status("interrupted", error="The server shut down before this run settled.",
                               error_code="interrupted")
            ids.append(run.run_id)
        for handle in self._evictions.values():
            handle.cancel()
        self._evictions.clear()
        return ids


def _emit_final(run: Run, name: str, data: dict[str, Any]) -> None:
    """Close a run's log with a generic terminal event (session streams also get `done`)."""
    run.emit(name, data)
    if run.kind == "session_chat":
        run.emit("done", {})
    run.close_log()


# ---- driving a turn ----------------------------------------------------------------------


class EventTranslator(Protocol):
    """Turns engine events into one endpoint family's run events (its vocabulary)."""

    def on_start(self, run: Run) -> None: ...

    def on_event(self, run: Run, event: AgentEvent) -> None: ...

    def on_result(self, run: Run, result: TurnResult, status: str) -> None:
        """Emit the terminal events for a settled turn (`status` is the run's new status)."""
        ...

    def on_error(self, run: Run, message: str) -> None: ...


class TurnRunner(Protocol):
    """What a run needs from the engine (`hermes.agent.engine.Agent` satisfies it)."""

    def run_turn(self, request: TurnRequest, *, interrupt: TurnInterrupt | None = None) -> AsyncIterator[AgentEvent]: ...


def run_status_for(result: TurnResult, *, shutting_down: bool) -> str:
    """The run status a settled turn maps to."""
    if result.status == "completed":
        return "completed"
    if result.status == "interrupted":
        return "interrupted" if shutting_down else "cancelled"
    return "failed"  # partial answers and failures alike: never reported as completed


async def drive_turn(
    registry: RunRegistry,
    run: Run,
    agent: TurnRunner,
    request: TurnRequest,
    translator: EventTranslator,
) -> None:
    """Iterate one turn, logging its events on `run`, and settle the run.

    Start it with `registry.start(run, drive_turn(...))`. Approvals the engine asks for
    park on the run until `POST /v1/runs/{id}/approval` or the registry's timeout.
    """

    async def approve(approval: ApprovalRequest) -> ApprovalDecision:
        return await run.wait_approval(approval, registry.approval_timeout)

    request.approve = approve
    run.set_status("running")
    translator.on_start(run)
    result: TurnResult | None = None
    try:
        async for event in agent.run_turn(request, interrupt=run.interrupt):
            if isinstance(event, TurnCompleted):
                result = event.result
                continue
            if isinstance(event, TurnStarted) and run.session_id is None:
                run.session_id = event.session_id
            elif isinstance(event, ApprovalRequested):
                run.open_approval(event.call_id, event.tool_name, event.command, event.reason)
            translator.on_event(run, event)
    except asyncio.CancelledError:
        # Cancelled before the engine could settle the turn itself: settle it here.
        _settle(registry, run, translator, TurnResult(run.session_id or "", "interrupted", ""))
        raise
    except HermesError as exc:
        _fail(run, translator, exc.message, exc.code)
        return
    except Exception as exc:  # a background task must settle its run, whatever happened
        logger.exception("run %s: the turn failed", run.run_id)
        _fail(run, translator, str(exc) or type(exc).__name__, "internal_error")
        return
    if result is None:
        _fail(run, translator, "The turn ended without a result.", "internal_error")
        return
    _settle(registry, run, translator, result)


def _settle(registry: RunRegistry, run: Run, translator: EventTranslator, result: TurnResult) -> None:
    status = run_status_for(result, shutting_down=registry.closing)
    run.result = result
    if run.session_id is None and result.session_id:
        run.session_id = result.session_id
    usage = {
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "total_tokens": result.usage.total_tokens,
    }
    run.set_status(
        status,
        output=result.final_text,
        usage=usage,
        error=result.error if status != "cancelled" else result.error or "Stopped by request.",
        error_code=result.error_code if status == "failed" else (None if status == "completed" else status),
    )
    translator.on_result(run, result, status)
    run.close_log()


def _fail(run: Run, translator: EventTranslator, message: str, code: str) -> None:
    run.set_status("failed", error=message, error_code=code)
    translator.on_error(run, message)
    run.close_log()
