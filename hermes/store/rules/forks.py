"""Forks and their title lineage: the rules, written once over an `Executor` and a `Dialect`.

`Sessions.fork_session` holds the transaction and the parent's row lock, ends the parent
"branched" and inserts the child; these functions name the child and fill it.

Invariants:
- A child's default title is "<base> #N": base is the parent's title without its " #N"
  suffix ("Session <short id>" for an untitled parent), N one more than the highest
  number of the lineage in use (at least 2), chosen under the dialect's lineage lock.
- The copy takes the parent's visible non-draft messages up to the fork point, in id
  order (copies keep their timestamps), and sets the child's counters to what it holds.
- Compaction markers whose first kept message was copied (or, when that one was not
  copied, the next copied one) come along, pointing at the copies.
"""

from __future__ import annotations

from hermes.ids import short_session_id
from hermes.store.records import SessionRecord
from hermes.store.rules.session_record import NUMBERED_TITLE
from hermes.store.sql import Dialect, Executor

__all__ = ["copy_transcript", "lineage_title"]

# Copies get ids in the order of the originals, so the n-th copied message is the copy
# of the n-th original. (child, parent, upto, child, parent, upto)
_COPY_COMPACTIONS = (
    "WITH copies AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages WHERE session_id = ?), "
    "originals AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages "
    "WHERE session_id = ? AND id <= ? AND NOT draft AND undone IS NULL) "
    "INSERT INTO hermes.compactions (session_id, summary, first_kept_message_id, summarized_messages, "
    "before_tokens, after_tokens, created_at) "
    "SELECT ?, c.summary, copies.id, c.summarized_messages, c.before_tokens, c.after_tokens, c.created_at "
    "FROM hermes.compactions AS c "
    "JOIN originals ON originals.id = (SELECT min(o.id) FROM originals AS o WHERE o.id >= c.first_kept_message_id) "
    "JOIN copies ON copies.n = originals.n WHERE c.session_id = ? AND c.first_kept_message_id <= ? ORDER BY c.id"
)


async def lineage_title(db: Executor, dialect: Dialect, parent: SessionRecord) -> str:
    """The next free "<base> #N" of the parent's lineage (see the module docstring)."""
    base = parent.title or f"Session {short_session_id(parent.id)}"
    numbered = NUMBERED_TITLE.match(base)
    if numbered:
        base = numbered["base"]
    statements = dialect.lineage_titles(base)
    for sql, params in statements[:-1]:
        await db.fetch_one(sql, params)
    sql, params = statements[-1]
    highest = 1
    for (title,) in await db.fetch_all(sql, params):
        match = NUMBERED_TITLE.match(title)
        if match and match["base"] == base:
            highest = max(highest, int(match["n"]))
    return f"{base} #{highest + 1}"


async def copy_transcript(
    db: Executor, dialect: Dialect, message_data: str, *, child_id: str, parent_id: str, upto: int
) -> None:
    """Copy the parent's messages up to `upto` into the child, with its counters and markers.

    `message_data`: the message columns a copy takes (all but id and session_id)."""
    copied = await db.execute(
        f"INSERT INTO hermes.messages (session_id, {message_data}) SELECT ?, {message_data} FROM hermes.messages "
        "WHERE session_id = ? AND id <= ? AND NOT draft AND undone IS NULL ORDER BY id",
        (child_id, parent_id, upto),
    )
    row = await db.fetch_one(
        f"SELECT coalesce(sum({dialect.tool_call_count}), 0) FROM hermes.messages "
        "WHERE session_id = ? AND id <= ? AND tool_calls IS NOT NULL AND NOT draft AND undone IS NULL",
        (parent_id, upto),
    )
    tool_calls = int(row[0]) if row else 0
    await db.execute(
        "UPDATE hermes.sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", (copied, tool_calls, child_id)
    )
    await db.execute(_COPY_COMPACTIONS, (child_id, parent_id, upto, child_id, parent_id, upto))
