"""Start-up repair: what a crashed hermes process left half-done becomes valid and continuable.

    report = await repair_after_crash(sessions, responses, runs)   # the rules over state.db

Called at the start of `hermes serve`, `hermes chat` (TUI and -q) and the `hermes sessions`
commands. What it repairs, touching only records whose owner process is gone (see
`owner.owner_gone`; several hermes processes share one `$HERMES_HOME`):

- open turns in `state.db` end "interrupted": the saved draft of the streaming text is kept as
  the assistant message, every tool call without a result gets
  `transcript.SERVER_STOPPED_TOOL_RESULT`, and the session ends "interrupted" (first
  reason wins, as with `end_session`);
- stored responses still `in_progress` become `incomplete` (reason "interrupted"), with
  the interrupted turn's items in `output` and its repaired transcript in
  `conversation_history`, so `previous_response_id` continues from a valid transcript;
- runs still unsettled become `interrupted`.

Cheap when there is nothing to repair: each kind answers one indexed query. Written over
the rules (sessions, responses, runs); what is SQLite's is the owner model: records belong
to processes, and a record is repaired once its process is gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import StoreError
from hermes.ids import new_item_id
from hermes.store.owner import ProcessOwner, current_owner, owner_gone, pid_exists
from hermes.store.records import MessageRecord, RepairedTurn
from hermes.store.rules.responses import PendingResponse, Responses
from hermes.store.rules.runs import Runs, UnsettledRun
from hermes.store.rules.sessions import Sessions
from hermes.store.transcript import valid_transcript

__all__ = ["RepairReport", "repair_after_crash", "repair_responses", "repair_runs"]

log = logging.getLogger(__name__)

INCOMPLETE_REASON = "interrupted"


@dataclass(frozen=True, slots=True)
class RepairReport:
    turns: list[RepairedTurn] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    """Ids of the stored responses settled as `incomplete`."""
    runs: int = 0
    """Runs marked `interrupted`."""

    @property
    def empty(self) -> bool:
        return not (self.turns or self.responses or self.runs)


async def repair_after_crash(
    sessions: Sessions,
    responses: Responses | None = None,
    runs: Runs | None = None,
    *,
    is_gone: Callable[[ProcessOwner], bool] = owner_gone,
) -> RepairReport:
    """Repair what dead processes left (see the module docstring); returns what was done.

    `sessions`, `responses` and `runs` are the rules over state.db.
    Raises StoreError when the database cannot be read or written.
    """
    turns = await sessions.repair_abandoned_turns(is_gone)
    settled = await repair_responses(responses, sessions, is_gone=is_gone) if responses is not None else []
    interrupted = await repair_runs(runs) if runs is not None else 0
    report = RepairReport(turns=turns, responses=settled, runs=interrupted)
    if not report.empty:
        log.info(
            "repaired after a crash: %d turn(s), %d response(s), %d run(s)",
            len(report.turns),
            len(report.responses),
            report.runs,
        )
    return report


async def repair_runs(runs: Runs, *, alive: frozenset[int] | None = None) -> int:
    """Settle `interrupted` every unsettled run whose owner process no longer runs; how many.

    Args:
        alive: pids known to be alive (default: `owner.owner_gone` decides, which also
            sees a pid reused by another process); this process's own pid counts as
            alive unless its recorded start identity is another process's.
    """
    orphans = [run.run_id for run in await runs.unsettled() if not _owner_alive(run, alive)]
    return len(await runs.mark_interrupted(orphans)) if orphans else 0


def _owner_alive(run: UnsettledRun, alive: frozenset[int] | None) -> bool:
    me = current_owner()
    pid, started = run.owner_pid, run.owner_started
    if pid == me.pid and (started is None or started == me.started):
        return True
    if alive is not None:
        return pid in alive
    if pid is None:
        return False
    if run.owner_host is None:  # written before identities were recorded
        return pid_exists(pid)
    return not owner_gone(ProcessOwner(run.owner_host, pid, started or ""))


async def repair_responses(
    responses: Responses,
    sessions: Sessions,
    *,
    is_gone: Callable[[ProcessOwner], bool] = owner_gone,
) -> list[str]:
    """Settle as `incomplete` every `in_progress` response whose writer is gone; their ids."""
    settled: list[str] = []
    for pending in await responses.in_progress():
        if pending.owner is not None and not is_gone(pending.owner):
            continue
        record = await _settled_record(pending, sessions, is_gone)
        if record is not None and await responses.settle(pending.response_id, record):
            settled.append(pending.response_id)
    return settled


async def _turn_transcript(
    record: dict[str, Any], sessions: Sessions, is_gone: Callable[[ProcessOwner], bool]
) -> list[MessageRecord] | None:
    """The stored messages of the response's turn; None while a live process still runs it."""
    session_id = record.get("session_id")
    response = record["response"]
    created_at = response.get("created_at")
    if not isinstance(session_id, str) or not isinstance(created_at, (int, float)):
        return []
    # The record is stored before its turn starts, and created_at is whole seconds.
    with contextlib.suppress(StoreError):
        turn = await sessions.find_turn(session_id, started_at_or_after=float(created_at))
        if turn is None:
            return []
        if turn.ended_at is None and not is_gone(turn.owner):
            return None
        return await sessions.turn_messages(turn.id)
    return []


async def _settled_record(
    pending: PendingResponse, sessions: Sessions, is_gone: Callable[[ProcessOwner], bool]
) -> dict[str, Any] | None:
    record = pending.record
    response = record.get("response")
    if not isinstance(response, dict):
        return None
    messages = await _turn_transcript(record, sessions, is_gone)
    if messages is None:
        return None
    transcript = [message.to_openai() for message in messages]
    history = list(record.get("conversation_history") or [])
    if transcript and transcript[0].get("role") == "user":
        # The record's history ends with this turn's user message; the store has it too.
        if history and history[-1].get("role") == "user":
            history = history[:-1]
        history += transcript
        items = _output_items(messages[1:])
    else:
        history += transcript
        items = _output_items(messages)
    output = [item for item in response.get("output") or [] if isinstance(item, dict)]
    settled = {
        **response,
        "status": "incomplete",
        "incomplete_details": {"reason": INCOMPLETE_REASON},
        "output": output + items,
    }
    return {**record, "response": settled, "conversation_history": valid_transcript(history)}


def _output_items(messages: list[MessageRecord]) -> list[dict[str, Any]]:
    """Responses API output items for a turn's stored messages (after its user message)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            text = message.content if isinstance(message.content, str) else ""
            if text:
                status = "incomplete" if message.finish_reason == INCOMPLETE_REASON else "completed"
                items.append(
                    {
                        "id": new_item_id("msg_"),
                        "type": "message",
                        "status": status,
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
            for call in message.tool_calls or ():
                function = call.get("function") or {}
                arguments = function.get("arguments")
                items.append(
                    {
                        "id": new_item_id("fc_"),
                        "type": "function_call",
                        "status": "completed",
                        "name": function.get("name", ""),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
                        "call_id": call.get("id", ""),
                    }
                )
        elif message.role == "tool":
            content = message.content
            items.append(
                {
                    "id": new_item_id("fco_"),
                    "type": "function_call_output",
                    "status": "completed",
                    "call_id": message.tool_call_id or "",
                    "output": content if isinstance(content, str) else json.dumps(content),
                }
            )
    return items
