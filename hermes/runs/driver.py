"""The run driver: one admitted turn fed through its endpoint's translator, then settled.

`drive_run` runs the turn (`agent.start(request)`, a `TurnHandle`), hands every engine event to a
`RunTranslator` (one per wire format; it appends frames to the run's log), and settles
the run whatever happens: a completed, interrupted, cancelled or failed turn, a crash,
or a cancellation. Invariant: every run it drives ends with a final event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from hermes.agent.events import AgentEvent, ApprovalRequested, TurnStarted
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest, TurnResult
from hermes.error_codes import INTERNAL_ERROR
from hermes.errors import HermesError
from hermes.runs.registry import Run, RunRegistry, emit_final
from hermes.runs.turn import TurnEngine
from hermes.runs.wire import usage_json

logger = logging.getLogger(__name__)


class RunTranslator(Protocol):
    """Engine events → one endpoint family's run events (its wire format)."""

    def on_start(self, run: Run) -> None: ...

    def on_event(self, run: Run, event: AgentEvent) -> None:
        """Append this event's frames; a `match` over `AgentEvent` ending in `assert_never`."""
        ...

    def on_result(self, run: Run, result: TurnResult, status: str) -> None:
        """Emit the terminal events for a settled turn (`status` is the run's new status),
        the last one with `final=True`."""
        ...

    def on_error(self, run: Run, message: str) -> None:
        """Emit the events of a failed turn, the last one with `final=True`."""
        ...


def run_status_for(result: TurnResult, *, shutting_down: bool) -> str:
    """The run status a settled turn maps to."""
    if result.status == "completed":
        return "completed"
    if result.status == "interrupted":
        return "interrupted" if shutting_down else "cancelled"
    return "failed"  # partial answers and failures alike: never reported as completed


async def drive_run(
    registry: RunRegistry,
    run: Run,
    agent: TurnEngine,
    request: TurnRequest,
    translator: RunTranslator,
    watch: Callable[[TurnHandle], None] | None = None,
) -> None:
    """Run one turn for `run`, logging its events through `translator`, and settle the run.

    Start it with `registry.start(run, drive_run(...))`. Approvals the engine asks for
    park on the run until `POST /v1/runs/{id}/approval` or the registry's timeout.
    """

    async def approve(approval: ApprovalRequest) -> ApprovalDecision:
        return await run.wait_approval(approval, registry.approval_timeout)

    request.approve = approve
    run.set_status("running")
    translator.on_start(run)
    turn = agent.start(request)
    if watch is not None:
        watch(turn)  # e.g. the server's turn log
    run.turn = turn
    try:
        async for event in turn.events():
            if isinstance(event, TurnStarted) and run.session_id is None:
                run.session_id = event.session_id
            elif isinstance(event, ApprovalRequested):
                run.open_approval(event.call_id, event.tool_name, event.command, event.reason, event.grant)
            translator.on_event(run, event)
    except asyncio.CancelledError:
        # Cancelled before the engine could settle the turn itself: settle it here.
        await turn.aclose()
        _settle(registry, run, translator, turn.result or TurnResult(run.session_id or "", "interrupted", ""))
        raise
    except TurnCrashed as crash:
        cause = crash.cause
        if isinstance(cause, HermesError):
            _fail(run, translator, cause.message, cause.code)
        else:  # a background task must settle its run, whatever happened
            logger.error("run %s: the turn failed", run.run_id, exc_info=cause)
            _fail(run, translator, str(cause) or type(cause).__name__, INTERNAL_ERROR)
        return
    finally:
        await turn.aclose()
    if turn.result is None:
        _fail(run, translator, "The turn ended without a result.", INTERNAL_ERROR)
        return
    _settle(registry, run, translator, turn.result)


def _settle(registry: RunRegistry, run: Run, translator: RunTranslator, result: TurnResult) -> None:
    status = run_status_for(result, shutting_down=registry.closing)
    run.result = result
    if run.session_id is None and result.session_id:
        run.session_id = result.session_id
    run.set_status(
        status,
        output=result.final_text,
        usage=usage_json(result.usage),
        error=result.error if status != "cancelled" else result.error or "Stopped by request.",
        error_code=result.error_code if status == "failed" else (None if status == "completed" else status),
    )
    translator.on_result(run, result, status)
    _ensure_closed(run, status)


def _fail(run: Run, translator: RunTranslator, message: str, code: str) -> None:
    run.set_status("failed", error=message, error_code=code)
    translator.on_error(run, message)
    _ensure_closed(run, "failed")


def _ensure_closed(run: Run, status: str) -> None:
    """Every stream ends with a final event, even when a translator forgot to mark one."""
    if not run.closed:
        logger.error("run %s: the translator left the stream open; closing it", run.run_id)
        emit_final(run, f"run.{status}", {"status": status})
