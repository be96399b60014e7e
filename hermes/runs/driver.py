"""The run driver: one admitted turn journaled in the engine's own events, then settled.

`drive_run` runs the turn (`agent.start(request)`, a `TurnHandle`), journals every engine
event in its own JSON form (`Run.log`; what a log holds: `hermes.runs.run_log`), and
settles the run whatever happens: a completed, interrupted, cancelled or failed turn, a
crash, or a cancellation. No wire format is written here: each is translated from the
log when a stream is read. Invariant: every run it drives ends with `run.settled`, and a
run settled from its turn's result has that result's `TurnCompleted` in its log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from hermes.agent.events import ApprovalRequested, TurnCompleted, TurnStarted
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest, TurnResult
from hermes.error_codes import INTERNAL_ERROR
from hermes.errors import HermesError
from hermes.runs.registry import Run, RunRegistry, end_stream
from hermes.runs.turn import TurnEngine
from hermes.runs.wire import usage_json

logger = logging.getLogger(__name__)


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
    watch: Callable[[TurnHandle], None] | None = None,
) -> None:
    """Run one turn for `run`, journaling its events, and settle the run.

    Start it with `registry.start(run, drive_run(...))`. Approvals the engine asks for
    park on the run until `POST /v1/runs/{id}/approval` or the registry's timeout.
    """

    async def approve(approval: ApprovalRequest) -> ApprovalDecision:
        return await run.wait_approval(approval, registry.approval_timeout)

    request.approve = approve
    run.set_status("running")
    run.open(request.input)
    turn = agent.start(request)
    if watch is not None:
        watch(turn)  # e.g. the server's turn log
    run.turn = turn
    journaled = False  # the turn's TurnCompleted is in the log
    try:
        async for event in turn.events():
            if isinstance(event, TurnStarted) and run.session_id is None:
                run.session_id = event.session_id
            elif isinstance(event, ApprovalRequested):
                run.open_approval(event.call_id, event.tool_name, event.command, event.reason, event.grant)
            run.log(event)
            journaled = journaled or isinstance(event, TurnCompleted)
    except asyncio.CancelledError:
        # Cancelled before the engine could settle the turn itself: settle it here.
        await turn.aclose()
        result = turn.result or TurnResult(run.session_id or "", "interrupted", "")
        _settle(registry, run, result, journaled=journaled)
        raise
    except TurnCrashed as crash:
        cause = crash.cause
        if isinstance(cause, HermesError):
            _fail(run, cause.message, cause.code)
        else:  # a background task must settle its run, whatever happened
            logger.error("run %s: the turn failed", run.run_id, exc_info=cause)
            _fail(run, str(cause) or type(cause).__name__, INTERNAL_ERROR)
        return
    finally:
        await turn.aclose()
    if turn.result is None:
        _fail(run, "The turn ended without a result.", INTERNAL_ERROR)
        return
    _settle(registry, run, turn.result, journaled=journaled)


def _settle(registry: RunRegistry, run: Run, result: TurnResult, *, journaled: bool) -> None:
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
    if run.closed:
        return  # superseded or settled already: the log has its end
    if not journaled:
        run.log(TurnCompleted(result))
    end_stream(run, status, from_result=True, error=run.error, error_code=run.error_code,
               report_error=status != "completed")  # fmt: skip


def _fail(run: Run, message: str, code: str) -> None:
    run.set_status("failed", error=message, error_code=code)
    if not run.closed:
        end_stream(run, "failed", error=message, error_code=code, report_error=True)
