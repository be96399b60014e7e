"""The run registry: turns this instance runs in the background, and their journals.

A *run* is one agent turn started by `POST /v1/runs` or a session chat endpoint. It is
owned by this registry, never by the HTTP request that started it: the turn runs in
its own task, so a client that disconnects from the event stream leaves the run going,
and only `RunRegistry.stop()` (POST /v1/runs/{id}/stop, received here or relayed from
another instance over the storage's control channel) or server shutdown ends it early.

Each run's log (numbered 1, 2, 3… by the store; what it holds: `hermes.runs.run_log`)
and its status rows are written to
the storage (`Storage.run_events`, `Storage.runs`) by the run's `RunJournal`, in the
order they happened; subscribers on any instance read them with
`Storage.run_events.subscribe(run_id, after)`, which is what makes `Last-Event-ID` /
`?after=` resumption work everywhere. The last event of a stream is marked `final`.
The run object stays here while the run lives and `retention` seconds (5 min) after it
settles; the status row outlives it. The storage holds at most one unsettled run per
session across every instance: `create` raises `SessionBusy` for a second one.

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
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.events import AgentEvent, ModelProgress, ToolOutput
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnResult
from hermes.error_codes import INTERRUPTED, SERVER_SHUTDOWN
from hermes.errors import SessionBusy, StoreError
from hermes.ids import new_run_id
from hermes.messages import UserContent
from hermes.runs.journal import RunJournal
from hermes.runs.run_log import ApprovalResponded, RunOpened, RunSettled, entry_data, event_data
from hermes.runs.run_log import RunKind as RunKind
from hermes.store.api import Storage
from hermes.store.records import TERMINAL_STATES, ControlMessage, ControlReply, RunRecord

logger = logging.getLogger(__name__)

EVENT_RETENTION_SECONDS = 300.0
APPROVAL_TIMEOUT_SECONDS = 300.0
CANCEL_GRACE_SECONDS = 1.0
"""Seconds shutdown waits for the turns it had to cancel to finish their cleanup."""
PRUNE_INTERVAL_SECONDS = 3600.0
"""How often (at most) settling a run also prunes expired rows from the storage."""
STATUS_RELAY_SECONDS = 1.0
"""How long a status read waits for the owner's live view (the pending approval)."""
JOURNAL_FLUSH_SECONDS = 2.0
"""How long shutdown waits for the runs' journals to reach the storage."""
APPROVAL_CHOICES: tuple[str, ...] = ("once", "session", "deny")


@dataclass(slots=True)
class PendingApproval:
    request_id: str
    """The tool call id the approval is for."""
    tool_name: str
    command: str
    reason: str
    future: asyncio.Future[ApprovalDecision]
    grant: str | None = None
    """What the "session" choice allows for the rest of the session; None: that choice is not
    offered (the action always asks) and "session" counts as "once" (hermes/agent/safety/grants.py)."""

    def to_json(self) -> dict[str, Any]:
        choices = [c for c in APPROVAL_CHOICES if c != "session" or self.grant is not None]
        return {
            "request_id": self.request_id,
            "tool_name": self.tool_name,
            "command": self.command,
            "reason": self.reason,
            "grant": self.grant,
            "choices": choices,
        }


class ApprovalNotPending(Exception):
    """No approval is waiting (or none with the given request id)."""

    def __init__(self, message: str, *, active: bool) -> None:
        super().__init__(message)
        self.active = active


class ApprovalNotActive(Exception):
    """The run has settled (or is not running here): it waits for no approval."""


@dataclass(eq=False)
class Run:
    """One background turn of this instance. Created by `RunRegistry.create()`."""

    run_id: str
    kind: RunKind
    session_id: str | None
    model: str | None
    created_at: float
    journal: RunJournal
    owner_instance: str
    status: str = "queued"
    updated_at: float = 0.0
    last_event: str | None = None
    output: str | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    error_code: str | None = None
    closed: bool = False
    """True once the final event is in the journal."""
    task: asyncio.Task[None] | None = None
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    settled_at: float | None = None
    stop_requested: bool = False
    result: TurnResult | None = None
    """The engine's result, once the turn has settled (see `hermes.runs.driver`)."""
    turn: TurnHandle | None = None
    """The engine turn this run drives, once it has started; `RunRegistry.stop` interrupts it."""

    # ---- events -------------------------------------------------------------------

    def emit(self, name: str, data: dict[str, Any] | None = None, *, final: bool = False) -> None:
        """Append an entry to the run's log; `final` closes the log after it."""
        if self.closed:
            raise RuntimeError(f"run {self.run_id}: event stream already closed")
        self.last_event = name
        if final:
            self.closed = True
        self.journal.event(name, dict(data or {}), final=final)

    def open(self, user_input: UserContent) -> None:
        """The log's first entry: how the run was started (`run.opened`)."""
        self.emit(*entry_data(RunOpened(self.kind, self.model, user_input)))

    def log(self, event: AgentEvent) -> None:
        """Journal one engine event in its own JSON form (`ModelProgress` and `ToolOutput` are live only)."""
        if not isinstance(event, (ModelProgress, ToolOutput)):
            self.emit(*event_data(event))

    # ---- status -------------------------------------------------------------------

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATES

    @property
    def active(self) -> bool:
        return not self.terminal

    def set_status(self, status: str, **fields: Any) -> None:
        """Change status (and outcome fields) and write the new record."""
        self.status = status
        for name, value in fields.items():
            setattr(self, name, value)
        self.updated_at = time.time()
        self.journal.status(self.record())

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
            owner_instance=self.owner_instance,
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

    def open_approval(
        self, request_id: str, tool_name: str, command: str, reason: str, grant: str | None = None
    ) -> PendingApproval:
        """The pending approval for `request_id`, created (status waiting_for_approval) if new."""
        pending = self.approvals.get(request_id)
        if pending is None or pending.future.done():
            future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
            pending = PendingApproval(request_id, tool_name, command, reason, future, grant)
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

    def answer_approval(self, choice: str, request_id: str | None, *, resolve_all: bool) -> dict[str, Any]:
        """Resolve approvals with `choice` and log `approval.responded`; returns its data.

        Raises:
            ApprovalNotActive: the run has settled.
            ApprovalNotPending: nothing (or nothing with `request_id`) is waiting.
        """
        if self.terminal or self.closed:
            raise ApprovalNotActive("Run has no active approval session")
        resolved = self.resolve_approval(ApprovalDecision(choice), request_id, resolve_all=resolve_all)
        name, data = entry_data(ApprovalResponded(choice, resolved, request_id))
        self.emit(name, data)
        return data

    async def wait_approval(self, request: ApprovalRequest, timeout: float) -> ApprovalDecision:
        """Park until the client answers, or deny after `timeout` seconds."""
        pending = self.open_approval(request.call_id, request.tool_name, request.command, request.reason, request.grant)
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
    """Every live run of this instance, plus retention of settled ones.

    Args:
        storage: where runs, their events and receipts live (set at app start-up when
            None here; `create` needs it).
        retention: seconds a settled run stays in this registry (its stored events are
            pruned once their final event is that old).
        approval_timeout: seconds an approval waits before the command is denied.
    """

    def __init__(
        self,
        storage: Storage | None = None,
        *,
        retention: float = EVENT_RETENTION_SECONDS,
        approval_timeout: float = APPROVAL_TIMEOUT_SECONDS,
    ) -> None:
        self.storage = storage
        self.retention = retention
        self.approval_timeout = approval_timeout
        self._runs: dict[str, Run] = {}
        self._evictions: dict[str, asyncio.TimerHandle] = {}
        self._closing = False
        self._last_prune = time.time()
        self._chores: set[asyncio.Task[Any]] = set()

    def _storage(self) -> Storage:
        if self.storage is None:
            raise StoreError("the run registry has no storage (the app has not started)")
        return self.storage

    # ---- lookup -------------------------------------------------------------------

    def get(self, run_id: str) -> Run | None:
        """The run when this instance runs (or recently ran) it."""
        return self._runs.get(run_id)

    async def record(self, run_id: str) -> RunRecord | None:
        """The run's durable status row, as any instance sees it."""
        return await self._storage().runs.get(run_id)

    async def status(self, run_id: str) -> dict[str, Any] | None:
        """The run's status object: live when it runs here, else the stored row's.

        A run of another instance that waits for an approval gets the pending approval
        from its owner (`status` control message); when the owner does not answer within
        STATUS_RELAY_SECONDS the stored row is the answer.
        """
        run = self._runs.get(run_id)
        if run is not None:
            return run.to_json()
        record = await self.record(run_id)
        if record is None:
            return None
        storage = self._storage()
        owner = record.owner_instance
        if record.status == "waiting_for_approval" and owner is not None and owner != storage.instance_id:
            try:
                reply = await storage.control.request(
                    owner, ControlMessage("status", run_id), timeout=STATUS_RELAY_SECONDS
                )
            except StoreError:
                reply = None
            if reply is not None and reply.ok and reply.data.get("run_id") == run_id:
                return reply.data
        return record.to_json()

    @property
    def active_count(self) -> int:
        return sum(1 for run in self._runs.values() if run.active)

    @property
    def closing(self) -> bool:
        return self._closing

    def active_for_session(self, session_id: str) -> Run | None:
        for run in self._runs.values():
            if run.session_id == session_id and run.active:
                return run
        return None

    async def active_elsewhere(self, session_id: str) -> RunRecord | None:
        """The session's unsettled run as the shared run store has it (PostgreSQL), which
        also knows the runs of other instances; None on SQLite, whose one serving process
        knows every live run (`active_for_session`). A dead owner's run stays unsettled
        here until the orphan sweeper settles it."""
        storage = self._storage()
        if not storage.caps.shared_runs:
            return None
        record = await storage.runs.latest_for_session(session_id)
        return record if record is not None and not record.terminal else None

    async def active_anywhere(self, session_id: str) -> RunRecord | None:
        """The session's unsettled run, on this instance or any other."""
        run = self.active_for_session(session_id)
        return run.record() if run is not None else await self.active_elsewhere(session_id)

    def latest_for_session(self, session_id: str) -> Run | None:
        found = [run for run in self._runs.values() if run.session_id == session_id]
        return max(found, key=lambda run: run.created_at) if found else None

    # ---- lifecycle ----------------------------------------------------------------

    async def create(
        self,
        *,
        kind: RunKind,
        session_id: str | None,
        model: str | None,
        run_id: str | None = None,
    ) -> Run:
        """Register a new queued run; its status row is stored before this returns."""
        storage = self._storage()
        now = time.time()
        rid = run_id or new_run_id()
        journal = RunJournal(rid, storage.run_events, storage.runs)
        run = Run(
            run_id=rid,
            kind=kind,
            session_id=session_id,
            model=model,
            created_at=now,
            updated_at=now,
            journal=journal,
            owner_instance=storage.instance_id,
        )
        journal.on_superseded = lambda: _interrupt(run, INTERRUPTED, "Settled by another instance.")
        # Registered before the first await, so a second start for the session sees it.
        self._runs[run.run_id] = run
        try:
            try:
                await storage.runs.put(run.record())
            except SessionBusy:
                # The storage holds one unsettled run per session (across instances). A run
                # of this instance that has settled may not have written its settled row
                # yet: once its journal is flushed, the start is admitted.
                if session_id is None or not await self._flush_settled(session_id, run):
                    raise
                await storage.runs.put(run.record())
        except BaseException:
            self._runs.pop(run.run_id, None)
            raise
        return run

    async def _flush_settled(self, session_id: str, starting: Run) -> bool:
        """Flush the journals of this instance's settled runs of `session_id`; False when
        there are none (the unsettled run is another one, or another instance's)."""
        settled = [
            run for run in self._runs.values()
            if run is not starting and run.session_id == session_id and run.terminal
        ]  # fmt: skip
        for run in settled:
            await run.journal.flush(JOURNAL_FLUSH_SECONDS)
        return bool(settled)

    async def unsettled_run_id(self, session_id: str) -> str | None:
        """The session's unsettled run as the storage has it (any instance), if any."""
        record = await self._storage().runs.latest_for_session(session_id)
        return record.run_id if record is not None and not record.terminal else None

    def start(self, run: Run, turn: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `turn` in a task owned by the registry (not by any HTTP request).

        `turn` is expected to settle the run itself (see `hermes.runs.driver.drive_run`); if it cannot
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
                end_stream(run, status)
            else:
                exc = task.exception()
                message = (str(exc) or type(exc).__name__) if exc is not None else "The turn ended without a result."
                if exc is not None:
                    logger.error("run %s failed", run.run_id, exc_info=exc)
                run.set_status("failed", error=message, error_code="internal_error")
                end_stream(run, "failed", error=message, error_code="internal_error", report_error=True)
        elif not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it again
        self.settled(run)

    def settled(self, run: Run) -> None:
        """Schedule removal of a settled run after `retention` seconds."""
        if run.settled_at is not None:
            return
        run.settled_at = time.time()
        for pending in run.approvals.values():
            if not pending.future.done():
                pending.future.set_result(ApprovalDecision.DENY)
        if self.storage is not None:
            self._chore(self._after_settle(run, self.storage))
        loop = asyncio.get_running_loop()
        self._evictions[run.run_id] = loop.call_later(self.retention, self._evict, run.run_id)

    async def _after_settle(self, run: Run, storage: Storage) -> None:
        await run.journal.flush()
        await storage.receipts.touch_receipts(run.run_id)
        now = time.time()
        if now - self._last_prune > PRUNE_INTERVAL_SECONDS:
            self._last_prune = now
            await storage.receipts.prune_receipts()
            await storage.runs.prune_runs()
            await storage.run_events.prune_events(before=now - self.retention)

    def _chore(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._chores.add(task)
        task.add_done_callback(self._chore_done)

    def _chore_done(self, task: asyncio.Task[Any]) -> None:
        self._chores.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("run bookkeeping failed: %s", task.exception())

    def _evict(self, run_id: str) -> None:
        self._evictions.pop(run_id, None)
        run = self._runs.pop(run_id, None)
        storage = self.storage
        if run is not None and storage is not None and not storage.caps.run_events_survive_process:
            # In-process events go with the run; PostgreSQL streams are pruned by age.
            self._chore(storage.run_events.delete_events(run_id))

    async def stop(self, run: Run) -> None:
        """Ask a live run to stop: it settles `cancelled` once the engine has cleaned up."""
        if run.terminal or run.stop_requested:
            return
        run.stop_requested = True
        run.set_status("stopping")
        _interrupt(run, INTERRUPTED, "Stopped by request.")

    async def wait(self, run: Run) -> None:
        """Wait until the run has settled (does not cancel it if the waiter is cancelled)."""
        if run.task is not None and not run.task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(run.task)
            if run.task.cancelled():
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise asyncio.CancelledError

    # ---- messages from other instances ----------------------------------------------

    async def handle_control(self, message: ControlMessage) -> ControlReply:
        """Answer a stop or approval relayed by another instance for a run owned here."""
        run = self._runs.get(message.run_id)
        if message.op == "status":
            if run is None:
                return ControlReply(ok=False, code="run_not_active", message="Run is not active on its owner")
            return ControlReply(ok=True, data=run.to_json())
        if message.op == "stop":
            if run is None:
                return ControlReply(ok=False, code="run_not_active", message="Run is not active on its owner")
            if not run.terminal:
                await self.stop(run)
            return ControlReply(ok=True, data=run.to_json())
        if message.op == "approval":
            if run is None:
                return ControlReply(ok=False, code="approval_not_active", message="Run has no active approval session")
            args = message.args
            request_id = args.get("request_id")
            try:
                data = run.answer_approval(
                    str(args.get("choice")),
                    request_id if isinstance(request_id, str) else None,
                    resolve_all=bool(args.get("all")),
                )
            except ApprovalNotActive as exc:
                return ControlReply(ok=False, code="approval_not_active", message=str(exc))
            except ApprovalNotPending as exc:
                return ControlReply(ok=False, code="approval_not_pending", message=str(exc))
            except ValueError:
                return ControlReply(ok=False, code="invalid_approval_choice", message="Unknown approval choice")
            return ControlReply(ok=True, data=data)
        return ControlReply(ok=False, code="unknown_op", message=f"Unknown control operation: {message.op[:32]}")

    # ---- shutdown ---------------------------------------------------------------------

    async def shutdown(self, timeout: float = 3.0) -> list[str]:
        """Cancel every live run and settle them `interrupted`. Returns their ids.

        Every run's journal is flushed (bounded) before this returns, so the storage,
        closed after it, has each run's final status and event.
        """
        self._closing = True
        live = [run for run in self._runs.values() if run.active]
        for run in live:
            run.status = "stopping"
            _interrupt(run, SERVER_SHUTDOWN, "The server is shutting down.")
        tasks = [run.task for run in live if run.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        stragglers = [task for task in tasks if not task.done()]
        for task in stragglers:
            task.cancel()  # a turn that did not settle in time
        if stragglers:  # their cleanup writes land before the storage closes (bounded)
            await asyncio.wait(stragglers, timeout=CANCEL_GRACE_SECONDS)
        ids = []
        for run in live:
            if run.status != "interrupted":
                run.set_status("interrupted", error="The server shut down before this run settled.",
                               error_code="interrupted")
            if not run.closed:
                end_stream(run, "interrupted")
            ids.append(run.run_id)
        for handle in self._evictions.values():
            handle.cancel()
        self._evictions.clear()
        journals = [run.journal.flush(JOURNAL_FLUSH_SECONDS) for run in self._runs.values()]
        if journals:
            await asyncio.gather(*journals)
        if self._chores:
            await asyncio.wait(list(self._chores), timeout=JOURNAL_FLUSH_SECONDS)
        for chore in list(self._chores):
            chore.cancel()
        return ids


def end_stream(
    run: Run,
    status: str,
    *,
    from_result: bool = False,
    error: str | None = None,
    error_code: str | None = None,
    report_error: bool = False,
) -> None:
    """End a run's log with its `run.settled` entry (see `hermes.runs.run_log`).

    `from_result`: the turn's `TurnCompleted` is journaled before it. `report_error`: the
    streams report `error` and `error_code` with the end.
    """
    settled = RunSettled(status, run.session_id, from_result, error, error_code, report_error)
    run.emit(*entry_data(settled), final=True)
    run.last_event = f"run.{status}"  # what the status shows, as `mark_interrupted` writes it


def _interrupt(run: Run, code: str, message: str) -> None:
    """Stop a live run: through its turn's interrupt handle, else by cancelling its task."""
    if run.turn is not None and not run.turn.done:
        run.turn.stop(code, message)
    elif run.task is not None and not run.task.done():
        run.task.cancel()
