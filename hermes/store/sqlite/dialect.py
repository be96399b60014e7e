"""`SqliteDialect`: how state.db differs from the neutral SQL of `hermes.store.rules.sessions`.

- Content is stored as text: a string as is, a content-part list as JSON with
  `content_is_parts = 1` and its searchable text in `parts_text` (what FTS5 indexes).
- Runs belong to this process: a settled run may be written again by it. The clock is
  SQLite's; a stored response's recency is one more than the newest.
- Sessions inserted at equal times sort by `rowid`; LIMIT -1 means no limit; no row locks
  (`BEGIN IMMEDIATE` holds the database); turns belong to processes, not instances.
- Fork titles: every "<base> #…" title sorts in ["<base> #", "<base> $"), an index range scan.
- Search is FTS5 (bm25) over the newest RANK_WINDOW matches, the query made safe by
  `fts_query`; drafts are not in the index (see `schema`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from hermes.errors import StoreError
from hermes.store.records import SearchHit, SessionRecord
from hermes.store.rules.session_record import SESSION_COLUMNS_S, SNIPPET_TOKENS
from hermes.store.sql import TURN_COLUMNS, Executor, FusedWrites, Params, Row, encode_json
from hermes.store.sqlite import fts_batches

__all__ = ["RANK_WINDOW", "SqliteDialect", "fts_query"]

RANK_WINDOW = 20_000
"""search() ranks at most this many of the newest matching messages."""


def fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: plain words, AND-ed.

    Every word is quoted (embedded quotes doubled), so FTS5 operators and syntax
    (`AND`, `OR`, `NOT`, `NEAR`, `-`, `*`, `^`, parentheses, column filters) are searched
    as ordinary words and never raise. Words without a letter or digit are dropped. The
    last word is a prefix match unless the text ends with whitespace. Returns "" when
    nothing searchable is left. NUL separates words (FTS5 cannot take it inside a string).
    """
    text = text.replace("\x00", " ")
    words = [word for word in text.split() if any(ch.isalnum() for ch in word)]
    if not words:
        return ""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    if not text[-1].isspace():
        quoted[-1] += "*"
    return " AND ".join(quoted)


_UNIQUE_COLUMNS = {"runs_one_unsettled_per_session": "runs.session_id"}
"""A unique index's columns as SQLite's "UNIQUE constraint failed" message names them."""


class SqliteDialect:
    """See the module docstring. `path` is the database file (None for `:memory:`)."""

    content_columns = "content, content_is_parts, parts_text"
    content_width = 2
    session_order = "rowid"
    no_limit: int | None = -1
    for_update = ""
    tool_call_count = "json_array_length(tool_calls)"
    turn_instance = "NULL"
    fused: FusedWrites | None = None
    settled_runs_final = False
    db_now = "((julianday('now') - 2440587.5) * 86400.0)"
    response_recency = "(SELECT coalesce(max(accessed_at), 0) + 1 FROM responses)"
    skip_locked = ""
    find_output_item = (
        "SELECT item.value FROM responses, json_each("
        "CASE WHEN json_valid(responses.data) THEN responses.data ELSE '{}' END, '$.response.output') AS item "
        "WHERE CASE WHEN item.type = 'object' THEN json_extract(item.value, '$.id') END = ? LIMIT 1"
    )

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def unique_violation(self, error: StoreError, index: str) -> bool:
        """SQLite names the index's columns, not the index: `runs.session_id` for
        `runs_one_unsettled_per_session`."""
        cause = error.__cause__
        columns = _UNIQUE_COLUMNS.get(index)
        return isinstance(cause, sqlite3.IntegrityError) and columns is not None and columns in str(cause)

    def encode_content(self, role: str, content: object) -> tuple[Any, ...]:
        """(stored content, content_is_parts, parts_text); parts_text is the `text` of
        each content part that has one, joined by newlines."""
        if content is None or isinstance(content, str):
            return content, 0, None
        if isinstance(content, list):
            texts = [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
            return encode_json(content), 1, "\n".join(texts) or None
        raise TypeError(f"message content must be str, list or None, not {type(content).__name__}")

    def decode_content(self, stored: Row) -> str | list[dict[str, Any]] | None:
        content, is_parts = stored
        if is_parts and content is not None:
            parts: list[dict[str, Any]] = json.loads(content)
            return parts
        text: str | None = content
        return text

    def lineage_titles(self, base: str) -> list[tuple[str, Params]]:
        return [("SELECT title FROM sessions WHERE title >= ? AND title < ?", (base + " #", base + " $"))]

    def abandoned(self) -> tuple[str, str]:
        return (
            f"SELECT {TURN_COLUMNS}, NULL FROM turns WHERE ended_at IS NULL ORDER BY id",
            f"SELECT {TURN_COLUMNS}, NULL FROM turns WHERE id = ? AND ended_at IS NULL",
        )

    async def search(self, db: Executor, query: str, *, limit: int, source: str | None) -> list[SearchHit]:
        """Best match first (bm25) among the newest RANK_WINDOW matching messages.

        The query is plain words, all required, the last one a prefix; FTS5 syntax in it
        is searched literally (see `fts_query`). Ranking is bounded to the newest
        RANK_WINDOW matches (of `source`, when given) because bm25 costs about a
        microsecond per matching row: a word found in most of a million messages would
        otherwise take a second. Queries with fewer matches are ranked exactly.
        """
        match = fts_query(query)
        if not match or limit <= 0:
            return []
        await fts_batches.flush(db)  # what waits for the index first: a search sees every commit
        join = "JOIN messages AS m ON m.id = messages_fts.rowid JOIN sessions AS s ON s.id = m.session_id "
        where, params = ("AND s.source = ?", [source]) if source is not None else ("", [])
        # Walking the index newest first is cheap (no ranking): find the window's floor.
        if source is None:
            floor_row = await db.fetch_one(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, RANK_WINDOW - 1),
            )
        else:
            floor_row = await db.fetch_one(
                f"SELECT messages_fts.rowid FROM messages_fts {join}WHERE messages_fts MATCH ? {where} "
                "ORDER BY messages_fts.rowid DESC LIMIT 1 OFFSET ?",
                (match, *params, RANK_WINDOW - 1),
            )
        floor = 0 if floor_row is None else int(floor_row[0])
        # FTS5 is the outer loop and delivers rows in rank order, so SQLite needs no sort
        # and computes snippet() only for the rows it returns.
        rows = await db.fetch_all(
            "SELECT messages_fts.rowid, m.role, "
            f"snippet(messages_fts, 0, '>>>', '<<<', '…', {SNIPPET_TOKENS}), "
            f"{SESSION_COLUMNS_S} FROM messages_fts {join}"
            f"WHERE messages_fts MATCH ? AND messages_fts.rowid >= ? AND m.undone IS NULL {where} "
            "ORDER BY messages_fts.rank LIMIT ?",
            (match, floor, *params, limit),
        )
        return [
            SearchHit(session=SessionRecord(*row[3:]), message_id=row[0], role=row[1], snippet=row[2] or "")
            for row in rows
        ]

    async def db_bytes(self, db: Executor) -> int:
        if self.path is None:
            pages = await db.fetch_one("PRAGMA page_count")
            page_size = await db.fetch_one("PRAGMA page_size")
            assert pages is not None and page_size is not None
            return int(pages[0]) * int(page_size[0])
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self.path.with_name(self.path.name + suffix))
        return total
