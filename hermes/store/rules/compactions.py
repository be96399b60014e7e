"""Compaction markers: the rules, written once over an `Executor` (both backends).

A marker records that a session's history was summarised: the summary and the first
message kept after it. `Sessions` exposes these rules as `add_compaction` /
`compactions`; a fork copies the markers of the range it copies (`forks`).

Invariants: a marker belongs to an existing session (SessionNotFound otherwise) and goes
with it (ON DELETE CASCADE); markers read back oldest first.
"""

from __future__ import annotations

from hermes.errors import SessionNotFound
from hermes.store.records import CompactionRecord, NewCompaction
from hermes.store.sql import Executor, Row

__all__ = ["add_compaction", "compactions", "latest_compaction"]

_COLUMNS = (
    "id, session_id, summary, first_kept_message_id, summarized_messages, before_tokens, after_tokens, created_at"
)


def _compaction(row: Row) -> CompactionRecord:
    (cid, session_id, summary, first_kept, summarized, before, after, created_at) = row
    return CompactionRecord(int(cid), session_id, summary, int(first_kept), int(summarized),
                            int(before), int(after), created_at)  # fmt: skip


async def add_compaction(db: Executor, session_id: str, marker: NewCompaction, now: float) -> CompactionRecord:
    marker_id = await db.insert(
        "INSERT INTO hermes.compactions (session_id, summary, first_kept_message_id, summarized_messages, "
        "before_tokens, after_tokens, created_at) SELECT s.id, ?, ?, ?, ?, ?, ? "
        "FROM hermes.sessions AS s WHERE s.id = ?",
        (marker.summary, marker.first_kept_message_id, marker.summarized_messages, marker.before_tokens,
         marker.after_tokens, now, session_id),
    )  # fmt: skip
    if marker_id is None:
        raise SessionNotFound(session_id)
    return CompactionRecord(marker_id, session_id, marker.summary, marker.first_kept_message_id,
                            marker.summarized_messages, marker.before_tokens, marker.after_tokens, now)  # fmt: skip


async def compactions(db: Executor, session_id: str) -> list[CompactionRecord]:
    rows = await db.fetch_all(
        f"SELECT {_COLUMNS} FROM hermes.compactions WHERE session_id = ? ORDER BY id", (session_id,)
    )
    return [_compaction(row) for row in rows]


async def latest_compaction(db: Executor, session_id: str) -> CompactionRecord | None:
    row = await db.fetch_one(
        f"SELECT {_COLUMNS} FROM hermes.compactions WHERE session_id = ? ORDER BY id DESC LIMIT 1", (session_id,)
    )
    return None if row is None else _compaction(row)
