"""Conversation marks: which session a resent conversation continues.

A mark names a point of a session's transcript (its newest message when marked) by the
front end's fingerprint of the conversation a client would resend at that point. The
rules are written once here over an `Executor` (neutral SQL, both backends); `Sessions`
exposes them as `mark_conversation` / `find_conversation`.

Invariants: at most one mark per (session, fingerprint): marking again moves it and
reopens it; a mark is `latest` while its message is still the session's newest non-draft
message; `claim_conversation` succeeds once per marking, for one caller on any instance
(a conditional UPDATE: the row lock serialises racing claims); marks go with their
session (ON DELETE CASCADE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hermes.errors import MessageNotFound
from hermes.store.records import ConversationMark
from hermes.store.sql import Executor, Row

__all__ = ["MAX_FINGERPRINTS", "claim_conversation", "find_conversation", "mark_conversation"]

MAX_FINGERPRINTS = 128
"""How many fingerprints one lookup considers (the first ones: the longest conversations)."""

_NEWEST = "(SELECT max(m.id) FROM hermes.messages AS m WHERE m.session_id = c.session_id AND NOT m.draft)"
_COLUMNS = f"c.session_id, c.fingerprint, c.message_id, c.marked_at, c.message_id = {_NEWEST}, c.claimed"


def _mark(row: Row) -> ConversationMark:
    return ConversationMark(
        session_id=str(row[0]),
        fingerprint=str(row[1]),
        message_id=int(row[2]),
        marked_at=float(row[3]),
        latest=bool(row[4]),
        claimed=bool(row[5]),
    )


async def mark_conversation(
    db: Executor, session_id: str, fingerprint: str, clock: Callable[[], float]
) -> ConversationMark:
    # One statement (a mark is one write: nothing held between statements); it marks the
    # session's newest message, so the mark is `latest` and unclaimed.
    rows = await db.fetch_all(
        "INSERT INTO hermes.conversation_marks (session_id, fingerprint, message_id, marked_at) "
        "SELECT ?, ?, m.id, ? FROM hermes.messages AS m WHERE m.id = "
        "(SELECT max(n.id) FROM hermes.messages AS n WHERE n.session_id = ? AND NOT n.draft) "
        "ON CONFLICT (session_id, fingerprint) DO UPDATE SET "
        "message_id = excluded.message_id, marked_at = excluded.marked_at, claimed = false "
        "RETURNING session_id, fingerprint, message_id, marked_at, true, claimed",
        (session_id, fingerprint, clock(), session_id),
    )
    if not rows:
        raise MessageNotFound(0, session_id)
    return _mark(rows[0])


async def find_conversation(db: Executor, fingerprints: Sequence[str]) -> ConversationMark | None:
    wanted = list(dict.fromkeys(fingerprints))[:MAX_FINGERPRINTS]
    if not wanted:
        return None
    places = ", ".join("?" for _ in wanted)
    rows = await db.fetch_all(
        f"SELECT {_COLUMNS} FROM hermes.conversation_marks AS c WHERE c.fingerprint IN ({places})", tuple(wanted)
    )
    if not rows:
        return None
    rank = {fingerprint: index for index, fingerprint in enumerate(wanted)}
    marks = [_mark(row) for row in rows]
    return min(marks, key=lambda mark: (rank[mark.fingerprint], not mark.open, -mark.marked_at))


async def claim_conversation(db: Executor, session_id: str, fingerprint: str) -> bool:
    changed = await db.execute(
        "UPDATE hermes.conversation_marks SET claimed = true "
        "WHERE session_id = ? AND fingerprint = ? AND NOT claimed AND message_id = "
        "(SELECT max(m.id) FROM hermes.messages AS m WHERE m.session_id = ? AND NOT m.draft)",
        (session_id, fingerprint, session_id),
    )
    return changed == 1
