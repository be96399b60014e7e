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

Chat keys: a client that names its chat (`KEY_PREFIX` + the key as the fingerprint) points
the key at a session by marking it so; the key's session is the one marked with it most
recently (`find_chat_key`), so a fork that takes over a chat is simply marked last. A key
mark is never a conversation: `find_conversation` is only ever given hex fingerprints.
A fork may take its parent's marks along (`copy_marks`), re-pointed at the copies and
claimed (they name earlier points of the conversation, never one to continue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hermes.errors import MessageNotFound
from hermes.store.records import ConversationMark
from hermes.store.sql import Executor, Row

__all__ = [
    "KEY_PREFIX",
    "MAX_FINGERPRINTS",
    "claim_conversation",
    "copy_marks",
    "find_chat_key",
    "find_conversation",
    "mark_conversation",
]

KEY_PREFIX = "key:"
"""The fingerprint prefix of a chat key's mark (see the module docstring)."""
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


async def find_conversation(
    db: Executor, fingerprints: Sequence[str], session_id: str | None = None
) -> ConversationMark | None:
    wanted = list(dict.fromkeys(fingerprints))[:MAX_FINGERPRINTS]
    if not wanted:
        return None
    places = ", ".join("?" for _ in wanted)
    where, params = f"c.fingerprint IN ({places})", tuple(wanted)
    if session_id is not None:
        where, params = f"c.session_id = ? AND {where}", (session_id, *params)
    rows = await db.fetch_all(f"SELECT {_COLUMNS} FROM hermes.conversation_marks AS c WHERE {where}", params)
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


async def find_chat_key(db: Executor, key: str) -> str | None:
    """The session the chat key points to: the one marked with it last (None: never pointed)."""
    row = await db.fetch_one(
        "SELECT session_id FROM hermes.conversation_marks WHERE fingerprint = ? ORDER BY marked_at DESC LIMIT 1",
        (KEY_PREFIX + key,),
    )
    return None if row is None else str(row[0])


# Copies get ids in the order of the originals (`forks.copy_transcript`), so the n-th
# copied message is the copy of the n-th original. (child, parent, upto, child, parent, key%)
_COPY_MARKS = (
    "WITH copies AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages WHERE session_id = ?), "
    "originals AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages "
    "WHERE session_id = ? AND id <= ? AND NOT draft AND undone IS NULL) "
    "INSERT INTO hermes.conversation_marks (session_id, fingerprint, message_id, marked_at, claimed) "
    "SELECT ?, c.fingerprint, copies.id, c.marked_at, true FROM hermes.conversation_marks AS c "
    "JOIN originals ON originals.id = c.message_id JOIN copies ON copies.n = originals.n "
    "WHERE c.session_id = ? AND c.fingerprint NOT LIKE ?"
)


async def copy_marks(db: Executor, *, child_id: str, parent_id: str, upto: int) -> None:
    """The parent's conversation marks up to `upto`, on the child's copies (claimed; key marks stay)."""
    await db.execute(_COPY_MARKS, (child_id, parent_id, upto, child_id, parent_id, KEY_PREFIX + "%"))
