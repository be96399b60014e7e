"""Crash repair of an abandoned turn: the rules, written once over an `Executor` and a `Dialect`.

`Sessions.repair_abandoned_turns` finds the turns whose owner is gone and, per turn, in a
transaction that re-checked it is still open and abandoned, ends it (its draft kept as a
message) and then calls `answer_open_calls`.

Invariants: every tool call of the turn without a result gets one placeholder result
(`SERVER_STOPPED_TOOL_RESULT`), counted on the session, so the transcript stays valid
for the next model call; the session ends "interrupted" unless it had ended already.
"""

from __future__ import annotations

import json

from hermes.store.records import INTERRUPTED, TurnRecord
from hermes.store.sql import Dialect, Executor
from hermes.store.transcript import SERVER_STOPPED_TOOL_RESULT, call_ids_and_names

__all__ = ["answer_open_calls", "open_calls"]


async def open_calls(db: Executor, turn: TurnRecord) -> list[tuple[str, str]]:
    """(call id, tool name) of the turn's tool calls that have no result, in call order."""
    rows = await db.fetch_all(
        "SELECT role, tool_calls, tool_call_id FROM hermes.messages WHERE session_id = ? AND id > ? ORDER BY id",
        (turn.session_id, turn.after_message_id),
    )
    unanswered: list[tuple[str, str]] = []
    for role, tool_calls, tool_call_id in rows:
        if role == "assistant" and tool_calls is not None:
            unanswered.extend(call_ids_and_names(json.loads(tool_calls)))
        elif role == "tool":
            unanswered = [pair for pair in unanswered if pair[0] != tool_call_id]
    return unanswered


async def answer_open_calls(
    db: Executor, dialect: Dialect, turn: TurnRecord, unanswered: list[tuple[str, str]], now: float
) -> None:
    """Write the placeholder results and end the session "interrupted" (first reason wins)."""
    stored = dialect.encode_content("tool", SERVER_STOPPED_TOOL_RESULT)
    for call_id, name in unanswered:
        await db.execute(
            f"INSERT INTO hermes.messages (session_id, role, {dialect.content_columns}, tool_call_id, "
            f"tool_name, timestamp) VALUES (?, 'tool', {', '.join('?' for _ in stored)}, ?, ?, ?)",
            (turn.session_id, *stored, call_id, name or None, now),
        )
    await db.execute(
        "UPDATE hermes.sessions SET message_count = message_count + ?, updated_at = ?, "
        "ended_at = coalesce(ended_at, ?), end_reason = coalesce(end_reason, ?) WHERE id = ?",
        (len(unanswered), now, now, INTERRUPTED, turn.session_id),
    )
