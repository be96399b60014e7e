"""New messages reach the search index in batches, not inside the turn's commit.

state.db's FTS5 index (`messages_fts`) has seen every message up to `fts_indexed.upto`
(m010); a message written later is indexed by the next batch (`INDEX_PENDING`: the rows
above `upto`, then `upto` moved to the newest id, in one write transaction). A batch runs:
- before every search and before the index's integrity check (`flush`,
  `flush_connection`), so a search always sees every message written before it;
- about once a second in a long-lived process (`fts_indexer.FtsIndexer`, a thread with a
  connection of its own, started beside the background WAL flushes), so pending work
  stays small and another process reading the file directly lags by at most about a second.

Invariants: ids only grow (AUTOINCREMENT), so "above `upto`" is exactly "not yet seen";
a draft above `upto` when a batch runs is skipped by `messages_fts_source` and indexed by
the update trigger when it becomes a real message (its id is then at or below `upto`);
a batch and a commit never interleave (both hold SQLite's write lock). This module
imports no logging (the CLI's fast commands load it).
"""

from __future__ import annotations

import sqlite3

from hermes.store.sql import Executor

__all__ = ["INDEX_PENDING", "PENDING", "flush", "flush_connection"]

PENDING = "SELECT (SELECT coalesce(max(id), 0) FROM messages) > (SELECT upto FROM fts_indexed)"
"""One row: whether any message waits for the index."""
INDEX_PENDING = (
    "INSERT INTO messages_fts(rowid, body) "
    "SELECT id, body FROM messages_fts_source WHERE id > (SELECT upto FROM fts_indexed) ORDER BY id",
    "UPDATE fts_indexed SET upto = (SELECT coalesce(max(id), 0) FROM messages)",
)
"""A batch: its statements run in one write transaction."""


async def flush(db: Executor) -> None:
    """Index what waits, through the store's own executor (cheap when nothing does)."""
    row = await db.fetch_one(PENDING)
    if row is None or not row[0]:
        return
    async with db.transaction():
        for sql in INDEX_PENDING:
            await db.execute(sql)


def flush_connection(db: sqlite3.Connection) -> bool:
    """`flush` on a plain connection in autocommit mode; whether anything was indexed."""
    if not db.execute(PENDING).fetchone()[0]:
        return False
    db.execute("BEGIN IMMEDIATE")
    try:
        for sql in INDEX_PENDING:
            db.execute(sql)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return True
