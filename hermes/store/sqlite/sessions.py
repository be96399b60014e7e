"""`SqliteSessionStore`: the SQLite implementation of `SessionStore` (`state.db`).

Invariants:

- The file is opened by `sqlite_file.open_sqlite_file` (created 0600, folder 0700, WAL,
  `synchronous=NORMAL`, foreign keys, busy timeout, migrations from `session_schema`).
- One connection per store, in autocommit mode. Every write method is one
  `BEGIN IMMEDIATE … COMMIT` transaction (or a savepoint of the caller's
  `transaction()` block, committed with it): when it returns the write is in the WAL and
  survives a crash of the process (the OS holds it); only a power loss can drop the
  newest commits. FULL would fsync every message and costs ~4 ms per write here, on the
  event loop.
- Every call holds one re-entrant lock for its whole duration, so the store may be used
  from the asyncio loop thread and from `asyncio.to_thread` workers alike.
- `sessions.message_count` equals the number of the session's rows in `messages`, and
  `tool_call_count` the total length of their `tool_calls` lists.
- `updated_at` ("newest activity") moves on create, append, rename, end and fork. The
  store's clock never repeats or goes back, so through one store later activity always
  sorts first; equal times (other writers) fall back to insertion order.
- Session ids default to `hermes.ids.new_session_id()` (`YYYYMMDD_HHMMSS_<6 hex>`): unique
  in practice (a collision is retried), and they sort by creation time.
- Turns (crash safety): a turn row is open from `begin_turn` to `end_turn`. Its draft is
  an assistant row with `draft = 1`, counted in `message_count` like any row, that
  `save_draft` overwrites and `append_message(..., turn_id=)` / `end_turn` / repair turn
  into a real message in place. `history()`, `fork_session` and `search` leave drafts
  out.
  `repair_abandoned_turns` ends only turns whose owner process is gone, each in one
  transaction that re-checks the turn is still open (two repairers never both act).
- `sqlite3` exceptions never leave this module: they become `StoreError` with a one-line
  message naming the database file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

from hermes.errors import MessageNotFound, SessionNotFound, StoreError
from hermes.ids import new_session_id, short_session_id
from hermes.messages import ChatMessage
from hermes.store.owner import ProcessOwner, current_owner, owner_gone
from hermes.store.records import (
    CompactionRecord,
    MessageRecord,
    NewCompaction,
    NewMessage,
    RepairedTurn,
    SearchHit,
    SessionRecord,
    StoreStats,
    TurnRecord,
)
from hermes.store.session_rules import (
    NUMBERED_TITLE,
    SESSION_COLUMNS,
    SESSION_COLUMNS_S,
    SESSION_FIELDS,
    SNIPPET_TOKENS,
    Clock,
    clean_title,
    fresh_session,
)
from hermes.store.sqlite.file import MEMORY, describe_sqlite_error, open_sqlite_file
from hermes.store.sqlite.session_schema import SESSION_MIGRATIONS
from hermes.store.transcript import (
    SERVER_STOPPED_TOOL_RESULT,
    call_ids_and_names,
    valid_transcript,
)

RANK_WINDOW = 20_000
"""search() ranks at most this many of the newest matching messages."""

_SESSION_PLACEHOLDERS = ", ".join("?" for _ in SESSION_FIELDS)

# Stored message columns other than id/session_id, as copied by fork_session.
_MESSAGE_DATA = (
    "role, content, content_is_parts, parts_text, tool_calls, tool_call_id, tool_name, "
    "reasoning, finish_reason, timestamp, token_count"
)
_MESSAGE_COLUMNS = (
    "id, session_id, role, content, content_is_parts, tool_calls, tool_call_id, tool_name, "
    "reasoning, finish_reason, timestamp, token_count"
)
_TURN_COLUMNS = (
    "id, session_id, after_message_id, draft_message_id, started_at, ended_at, end_reason, "
    "owner_host, owner_pid, owner_started"
)
INTERRUPTED = "interrupted"
"""end_reason (and a kept draft's finish_reason) of a turn whose owner process died."""
# A fork copies the markers whose first kept message it copies (or, when that one was
# not copied, the next copied one), pointing them at the copy. Copies get ids in the
# order of the originals, so the n-th copied message is the copy of the n-th original.
_COPY_COMPACTIONS = (
    "WITH copies AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM messages WHERE session_id = ?), "
    "originals AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM messages "
    "WHERE session_id = ? AND id <= ? AND draft = 0) "
    "INSERT INTO compactions (session_id, summary, first_kept_message_id, summarized_messages, "
    "before_tokens, after_tokens, created_at) "
    "SELECT ?, c.summary, copies.id, c.summarized_messages, c.before_tokens, c.after_tokens, c.created_at "
    "FROM compactions AS c "
    "JOIN originals ON originals.id = (SELECT min(o.id) FROM originals AS o WHERE o.id >= c.first_kept_message_id) "
    "JOIN copies ON copies.n = originals.n WHERE c.session_id = ? AND c.first_kept_message_id <= ? ORDER BY c.id"
)



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


def _encode_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _encode_content(content: object) -> tuple[str | None, int, str | None]:
    """(stored content, content_is_parts, parts_text) for a message content.

    parts_text is the searchable text of a content-part list: the string `text` of each
    part that has one, joined by newlines.
    """
    if content is None or isinstance(content, str):
        return content, 0, None
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return _encode_json(content), 1, "\n".join(texts) or None
    raise TypeError(f"message content must be str, list or None, not {type(content).__name__}")


def _message_from_row(row: tuple[Any, ...]) -> MessageRecord:
    (mid, session_id, role, content, is_parts, tool_calls, tool_call_id, tool_name,
     reasoning, finish_reason, timestamp, token_count) = row  # fmt: skip
    return MessageRecord(
        id=mid,
        session_id=session_id,
        role=role,
        content=json.loads(content) if is_parts and content is not None else content,
        tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        reasoning=reasoning,
        finish_reason=finish_reason,
        timestamp=timestamp,
        token_count=token_count,
    )


def _turn_from_row(row: tuple[Any, ...]) -> TurnRecord:
    (tid, session_id, after, draft, started_at, ended_at, end_reason,
     host, pid, started) = row  # fmt: skip
    return TurnRecord(
        id=tid,
        session_id=session_id,
        after_message_id=after,
        draft_message_id=draft,
        started_at=started_at,
        ended_at=ended_at,
        end_reason=end_reason,
        owner=ProcessOwner(host=host, pid=pid, started=started),
    )


class SqliteSessionStore:
    """Sessions and messages in one SQLite file (or `:memory:`), searchable with FTS5.

    Args:
        path: the database file (created 0600, with its folder 0700, when missing), or
            ":memory:" for a private in-memory database.

    Raises:
        StoreError: the file cannot be created, is not a database, or is damaged.
    """

    def __init__(self, path: str | os.PathLike[str] = MEMORY) -> None:
        # Used from the loop thread and worker threads alike; `_lock` serialises every call.
        opened = open_sqlite_file(
            path, SESSION_MIGRATIONS, what="session database", check_same_thread=False
        )
        self._path = opened.path
        self._label = opened.label
        self._lock = threading.RLock()
        self._clock = Clock()
        self.applied_migrations: list[str] = opened.applied_migrations
        """Migrations this open applied (empty when the schema was already current)."""
        self._db: sqlite3.Connection | None = opened.connection

    # -- connection ------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The database file, or None for `:memory:`."""
        return self._path

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translate_errors():
            yield self._connection()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Make the writes inside the block one transaction, committed when the block exits.

        For writes that follow one another with nothing to wait for in between: the block
        holds the store's lock, so it must not await. A write that fails inside the block
        is undone alone (a savepoint); an exception leaving the block undoes all of it.
        """
        with self._write():
            yield

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; committed (and durable) when the block exits cleanly.

        Inside `transaction()` it is a savepoint of that transaction instead.
        """
        with self._lock, self._translate_errors():
            db = self._connection()
            # Autocommit, and this lock held: a transaction open here is our own `transaction()`.
            inside_transaction = db.in_transaction
            if inside_transaction:
                db.execute("SAVEPOINT write")
                try:
                    yield db
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK TO write")
                        db.execute("RELEASE write")
                    raise
                db.execute("RELEASE write")
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # Never leave a transaction open, even when COMMIT itself failed.
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"session database {self._label}: {describe_sqlite_error(exc)}") from exc

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"session database {self._label} is closed")
        return self._db

    def close(self) -> None:
        """Close the connection; later calls raise StoreError. Closing twice is fine."""
        with self._lock:
            if self._db is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("PRAGMA optimize")
            self._db.close()
            self._db = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- sessions --------------------------------------------------------------------

    @staticmethod
    def _fetch_session(db: sqlite3.Connection, session_id: str) -> SessionRecord | None:
        row = db.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return None if row is None else SessionRecord(*row)

    def _require_session(self, db: sqlite3.Connection, session_id: str) -> SessionRecord:
        record = self._fetch_session(db, session_id)
        if record is None:
            raise SessionNotFound(session_id)
        return record

    @staticmethod
    def _insert_session(db: sqlite3.Connection, record: SessionRecord) -> None:
        db.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES ({_SESSION_PLACEHOLDERS})",
            tuple(getattr(record, name) for name in SESSION_FIELDS),
        )

    def _insert_new_session(
        self, db: sqlite3.Connection, record: SessionRecord, *, id_given: bool
    ) -> SessionRecord:
        """Insert `record`; a generated id that collides is replaced by a fresh one."""
        for _ in range(8):
            try:
                self._insert_session(db, record)
                return record
            except sqlite3.IntegrityError as exc:
                if self._fetch_session(db, record.id) is None:
                    raise
                if id_given:
                    raise StoreError(f"a session with id {record.id!r} already exists") from exc
                record = replace(record, id=new_session_id(record.started_at))
        raise StoreError("could not generate a unique session id")

    def create_session(
        self,
        *,
        source: str,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> SessionRecord:
        with self._write() as db:
            if parent_session_id is not None:
                self._require_session(db, parent_session_id)
            now = self._clock()
            record = fresh_session(
                session_id or new_session_id(now),
                now,
                source=source,
                title=clean_title(title),
                model=model,
                parent_session_id=parent_session_id,
                system_prompt=system_prompt,
            )
            return self._insert_new_session(db, record, id_given=bool(session_id))

    def get_session(self, session_id: str) -> SessionRecord:
        with self._read() as db:
            return self._require_session(db, session_id)

    def find_session(self, session_id: str) -> SessionRecord | None:
        with self._read() as db:
            return self._fetch_session(db, session_id)

    def latest_session(self, *, source: str | None = None) -> SessionRecord | None:
        sessions = self.list_sessions(limit=1, source=source)
        return sessions[0] if sessions else None

    def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        """Newest activity first (index scan on updated_at, ties newest insert first)."""
        where, params = ("WHERE source = ?", [source]) if source is not None else ("", [])
        with self._read() as db:
            rows = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions {where} "
                "ORDER BY updated_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (*params, max(limit, 0), max(offset, 0)),
            ).fetchall()
        return [SessionRecord(*row) for row in rows]

    def count_sessions(self, *, source: str | None = None) -> int:
        with self._read() as db:
            if source is None:
                row = db.execute("SELECT count(*) FROM sessions").fetchone()
            else:
                row = db.execute(
                    "SELECT count(*) FROM sessions WHERE source = ?", (source,)
                ).fetchone()
        return int(row[0])

    def rename_session(self, session_id: str, title: str) -> SessionRecord:
        """Set the title (whitespace collapsed; blank clears it) and mark activity."""
        with self._write() as db:
            cursor = db.execute(
                "UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?",
                (clean_title(title), self._clock(), session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)
            return self._require_session(db, session_id)

    def update_session(
        self,
        session_id: str,
        *,
        model: str | None = None,
        system_prompt: str | None = None,
    ) -> SessionRecord:
        """Change the given fields; None leaves a field as it is."""
        with self._write() as db:
            cursor = db.execute(
                "UPDATE sessions SET model = coalesce(?, model), "
                "system_prompt = coalesce(?, system_prompt) WHERE id = ?",
                (model, system_prompt, session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)
            return self._require_session(db, session_id)

    def end_session(self, session_id: str, reason: str) -> None:
        """Record the end; the first reason wins (later calls leave it unchanged).

        `fork_session` is the exception: branching always marks the parent "branched".
        """
        with self._write() as db:
            now = self._clock()
            cursor = db.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ?, updated_at = ? "
                "WHERE id = ? AND end_reason IS NULL",
                (now, reason, now, session_id),
            )
            if cursor.rowcount == 0:
                self._require_session(db, session_id)

    def add_usage(self, session_id: str, *, input_tokens: int, output_tokens: int) -> None:
        with self._write() as db:
            cursor = db.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ? WHERE id = ?",
                (input_tokens, output_tokens, session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

    def delete_session(self, session_id: str) -> None:
        """Delete the session, its messages and their search rows; children are kept
        with parent_session_id cleared."""
        with self._write() as db:
            self._require_session(db, session_id)
            db.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?",
                (session_id,),
            )
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # -- messages --------------------------------------------------------------------

    def append_message(
        self, session_id: str, message: NewMessage, *, turn_id: int | None = None
    ) -> MessageRecord:
        content, is_parts, parts_text = _encode_content(message.content)
        tool_calls = None if message.tool_calls is None else _encode_json(message.tool_calls)
        with self._write() as db:
            now = self._clock()
            if turn_id is not None and message.role == "assistant":
                draft = self._open_draft(db, turn_id, session_id)
                if draft is not None:
                    db.execute(
                        "UPDATE messages SET content = ?, content_is_parts = ?, parts_text = ?, "
                        "tool_calls = ?, reasoning = ?, finish_reason = ?, token_count = ?, "
                        "timestamp = ?, draft = 0 WHERE id = ?",
                        (content, is_parts, parts_text, tool_calls, message.reasoning,
                         message.finish_reason, message.token_count, now, draft),
                    )  # fmt: skip
                    db.execute(
                        "UPDATE sessions SET tool_call_count = tool_call_count + ?, updated_at = ? "
                        "WHERE id = ?",
                        (len(message.tool_calls or ()), now, session_id),
                    )
                    db.execute("UPDATE turns SET draft_message_id = NULL WHERE id = ?", (turn_id,))
                    return _message_from_row(
                        (draft, session_id, message.role, content, is_parts, tool_calls,
                         None, None, message.reasoning, message.finish_reason, now,
                         message.token_count)
                    )  # fmt: skip
            cursor = db.execute(
                "UPDATE sessions SET message_count = message_count + 1, "
                "tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?",
                (len(message.tool_calls or ()), now, session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)
            cursor = db.execute(
                f"INSERT INTO messages (session_id, {_MESSAGE_DATA}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    message.role,
                    content,
                    is_parts,
                    parts_text,
                    tool_calls,
                    message.tool_call_id,
                    message.tool_name,
                    message.reasoning,
                    message.finish_reason,
                    now,
                    message.token_count,
                ),
            )
            message_id = cursor.lastrowid
        assert message_id is not None
        # Decode what was stored so the record never aliases the caller's lists.
        return _message_from_row(
            (message_id, session_id, message.role, content, is_parts, tool_calls,
             message.tool_call_id, message.tool_name, message.reasoning,
             message.finish_reason, now, message.token_count)
        )  # fmt: skip

    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Oldest first."""
        with self._read() as db:
            self._require_session(db, session_id)
            rows = db.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? "
                "ORDER BY id LIMIT ? OFFSET ?",
                (session_id, -1 if limit is None else max(limit, 0), max(offset, 0)),
            ).fetchall()
        return [_message_from_row(row) for row in rows]

    def history(self, session_id: str) -> list[ChatMessage]:
        with self._read() as db:
            self._require_session(db, session_id)
            rows = db.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND draft = 0 "
                "ORDER BY id",
                (session_id,),
            ).fetchall()
        return valid_transcript([_message_from_row(row).to_openai() for row in rows])

    # -- turns and checkpoints -------------------------------------------------------

    @staticmethod
    def _fetch_turn(db: sqlite3.Connection, turn_id: int) -> TurnRecord | None:
        row = db.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,)).fetchone()
        return None if row is None else _turn_from_row(row)

    def _require_turn(self, db: sqlite3.Connection, turn_id: int) -> TurnRecord:
        turn = self._fetch_turn(db, turn_id)
        if turn is None:
            raise StoreError(f"session database {self._label}: no turn with id {turn_id}")
        return turn

    def _open_draft(self, db: sqlite3.Connection, turn_id: int, session_id: str) -> int | None:
        turn = self._require_turn(db, turn_id)
        if turn.session_id != session_id:
            raise StoreError(f"turn {turn_id} belongs to session {turn.session_id}, not {session_id}")
        return turn.draft_message_id if turn.ended_at is None else None

    def begin_turn(self, session_id: str, *, owner: ProcessOwner | None = None) -> TurnRecord:
        owner = owner or current_owner()
        with self._write() as db:
            self._require_session(db, session_id)
            (after,) = db.execute(
                "SELECT coalesce(max(id), 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            cursor = db.execute(
                "INSERT INTO turns (session_id, after_message_id, started_at, owner_host, "
                "owner_pid, owner_started) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, after, self._clock(), owner.host, owner.pid, owner.started),
            )
            assert cursor.lastrowid is not None
            return self._require_turn(db, cursor.lastrowid)

    def save_draft(self, turn_id: int, content: str) -> None:
        with self._write() as db:
            turn = self._require_turn(db, turn_id)
            if turn.ended_at is not None:
                return
            if turn.draft_message_id is not None:
                db.execute(
                    "UPDATE messages SET content = ? WHERE id = ?", (content, turn.draft_message_id)
                )
                return
            now = self._clock()
            db.execute(
                "UPDATE sessions SET message_count = message_count + 1, updated_at = ? WHERE id = ?",
                (now, turn.session_id),
            )
            cursor = db.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, draft) "
                "VALUES (?, 'assistant', ?, ?, 1)",
                (turn.session_id, content, now),
            )
            db.execute(
                "UPDATE turns SET draft_message_id = ? WHERE id = ?", (cursor.lastrowid, turn_id)
            )

    def _close_turn(self, db: sqlite3.Connection, turn: TurnRecord, reason: str) -> bool:
        """Keep the draft as a message and end the turn; False when it had already ended."""
        now = self._clock()
        cursor = db.execute(
            "UPDATE turns SET ended_at = ?, end_reason = ?, draft_message_id = NULL "
            "WHERE id = ? AND ended_at IS NULL",
            (now, reason, turn.id),
        )
        if cursor.rowcount == 0:
            return False
        if turn.draft_message_id is not None:
            db.execute(
                "UPDATE messages SET draft = 0, finish_reason = coalesce(finish_reason, ?) "
                "WHERE id = ?",
                (reason, turn.draft_message_id),
            )
        return True

    def end_turn(self, turn_id: int, reason: str) -> None:
        with self._write() as db:
            self._close_turn(db, self._require_turn(db, turn_id), reason)

    def get_turn(self, turn_id: int) -> TurnRecord | None:
        with self._read() as db:
            return self._fetch_turn(db, turn_id)

    def find_turn(self, session_id: str, *, started_at_or_after: float) -> TurnRecord | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ? AND started_at >= ? "
                "ORDER BY started_at LIMIT 1",
                (session_id, started_at_or_after),
            ).fetchone()
        return None if row is None else _turn_from_row(row)

    def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        with self._read() as db:
            turn = self._require_turn(db, turn_id)
            (upto,) = db.execute(
                "SELECT coalesce(min(after_message_id), ?) FROM turns "
                "WHERE session_id = ? AND id > ? AND after_message_id > ?",
                (2**63 - 1, turn.session_id, turn.id, turn.after_message_id),
            ).fetchone()
            rows = db.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages "
                "WHERE session_id = ? AND id > ? AND id <= ? ORDER BY id",
                (turn.session_id, turn.after_message_id, upto),
            ).fetchall()
        return [_message_from_row(row) for row in rows]

    def open_turns(self) -> list[TurnRecord]:
        """Every turn not ended yet (running somewhere, or abandoned by a dead process)."""
        with self._read() as db:
            rows = db.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL ORDER BY id"
            ).fetchall()
        return [_turn_from_row(row) for row in rows]

    def repair_abandoned_turns(
        self, is_gone: Callable[[ProcessOwner], bool] | None = None
    ) -> list[RepairedTurn]:
        gone = is_gone or owner_gone
        repaired: list[RepairedTurn] = []
        for turn in self.open_turns():
            if not gone(turn.owner):
                continue
            with self._write() as db:
                current = self._fetch_turn(db, turn.id)
                if current is None or current.ended_at is not None:
                    continue  # another process repaired it meanwhile
                repaired.append(self._repair_turn(db, current))
        return repaired

    def _repair_turn(self, db: sqlite3.Connection, turn: TurnRecord) -> RepairedTurn:
        """Inside a write transaction: see `AsyncSessionStore.repair_abandoned_turns`."""
        rows = db.execute(
            "SELECT role, tool_calls, tool_call_id FROM messages "
            "WHERE session_id = ? AND id > ? ORDER BY id",
            (turn.session_id, turn.after_message_id),
        ).fetchall()
        unanswered: list[tuple[str, str]] = []
        for role, tool_calls, tool_call_id in rows:
            if role == "assistant" and tool_calls is not None:
                unanswered.extend(call_ids_and_names(json.loads(tool_calls)))
            elif role == "tool":
                unanswered = [pair for pair in unanswered if pair[0] != tool_call_id]
        kept_text = turn.draft_message_id is not None
        self._close_turn(db, turn, INTERRUPTED)
        now = self._clock()
        for call_id, name in unanswered:
            db.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) "
                "VALUES (?, 'tool', ?, ?, ?, ?)",
                (turn.session_id, SERVER_STOPPED_TOOL_RESULT, call_id, name or None, now),
            )
        db.execute(
            "UPDATE sessions SET message_count = message_count + ?, updated_at = ?, "
            "ended_at = coalesce(ended_at, ?), end_reason = coalesce(end_reason, ?) WHERE id = ?",
            (len(unanswered), now, now, INTERRUPTED, turn.session_id),
        )
        return RepairedTurn(
            turn_id=turn.id, session_id=turn.session_id, kept_text=kept_text, placeholders=len(unanswered)
        )

    # -- compaction markers ----------------------------------------------------------

    def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        with self._write() as db:
            self._require_session(db, session_id)
            now = self._clock()
            cursor = db.execute(
                "INSERT INTO compactions (session_id, summary, first_kept_message_id, "
                "summarized_messages, before_tokens, after_tokens, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, marker.summary, marker.first_kept_message_id, marker.summarized_messages,
                 marker.before_tokens, marker.after_tokens, now),
            )  # fmt: skip
            marker_id = cursor.lastrowid
        assert marker_id is not None
        return CompactionRecord(marker_id, session_id, marker.summary, marker.first_kept_message_id,
                                marker.summarized_messages, marker.before_tokens, marker.after_tokens, now)  # fmt: skip

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        with self._read() as db:
            rows = db.execute(
                "SELECT id, session_id, summary, first_kept_message_id, summarized_messages, "
                "before_tokens, after_tokens, created_at FROM compactions WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        return [CompactionRecord(*row) for row in rows]

    # -- forks -----------------------------------------------------------------------

    @staticmethod
    def _next_lineage_title(db: sqlite3.Connection, base: str) -> str:
        """`"<base> #N"` with N one more than the highest number in use (at least 2)."""
        highest = 1
        # Every "<base> #…" title sorts in ["<base> #", "<base> $"): an index range scan.
        rows = db.execute(
            "SELECT title FROM sessions WHERE title >= ? AND title < ?",
            (base + " #", base + " $"),
        )
        for (title,) in rows:
            match = NUMBERED_TITLE.match(title)
            if match and match["base"] == base:
                highest = max(highest, int(match["n"]))
        return f"{base} #{highest + 1}"

    def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
    ) -> SessionRecord:
        """Copy the messages (all, or up to and including at_message_id) into a new session.

        The child inherits source (unless given), model and system prompt; its title is
        the given one, else the next free "<base> #N" where base is the parent title
        without its " #N" suffix ("Session <short id>" for an untitled parent). The
        parent is ended with reason "branched". Copied messages keep their timestamps;
        the child's token counters start at zero. Compaction markers whose first kept
        message lies in the copied range come along, pointing at the copies. One transaction.
        """
        with self._write() as db:
            parent = self._require_session(db, session_id)
            upto = 2**63 - 1
            if at_message_id is not None:
                found = db.execute(
                    "SELECT 1 FROM messages WHERE id = ? AND session_id = ?",
                    (at_message_id, session_id),
                ).fetchone()
                if found is None:
                    raise MessageNotFound(at_message_id, session_id)
                upto = at_message_id
            child_title = clean_title(title)
            if child_title is None:
                base = parent.title or f"Session {short_session_id(parent.id)}"
                match = NUMBERED_TITLE.match(base)
                child_title = self._next_lineage_title(db, match["base"] if match else base)

            parent_now = self._clock()
            db.execute(
                "UPDATE sessions SET end_reason = 'branched', ended_at = ?, updated_at = ? "
                "WHERE id = ?",
                (parent_now, parent_now, session_id),
            )
            now = self._clock()
            child = self._insert_new_session(
                db,
                fresh_session(
                    new_session_id(now),
                    now,
                    source=source or parent.source,
                    title=child_title,
                    model=parent.model,
                    parent_session_id=parent.id,
                    system_prompt=parent.system_prompt,
                ),
                id_given=False,
            )
            copied = db.execute(
                f"INSERT INTO messages (session_id, {_MESSAGE_DATA}) "
                f"SELECT ?, {_MESSAGE_DATA} FROM messages "
                "WHERE session_id = ? AND id <= ? AND draft = 0 ORDER BY id",
                (child.id, session_id, upto),
            ).rowcount
            (tool_calls,) = db.execute(
                "SELECT coalesce(sum(json_array_length(tool_calls)), 0) FROM messages "
                "WHERE session_id = ? AND id <= ? AND tool_calls IS NOT NULL AND draft = 0",
                (session_id, upto),
            ).fetchone()
            db.execute(
                "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                (copied, tool_calls, child.id),
            )
            db.execute(_COPY_COMPACTIONS, (child.id, session_id, upto, child.id, session_id, upto))
            return self._require_session(db, child.id)

    # -- search and stats ------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 20, source: str | None = None
    ) -> list[SearchHit]:
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
        join = (
            "JOIN messages AS m ON m.id = messages_fts.rowid "
            "JOIN sessions AS s ON s.id = m.session_id "
        )
        where, params = ("AND s.source = ?", [source]) if source is not None else ("", [])
        # FTS5 is the outer loop and delivers rows in rank order, so SQLite needs no sort
        # and computes snippet() only for the rows it returns.
        sql = (
            "SELECT messages_fts.rowid, m.role, "
            f"snippet(messages_fts, 0, '>>>', '<<<', '…', {SNIPPET_TOKENS}), "
            f"{SESSION_COLUMNS_S} FROM messages_fts {join}"
            f"WHERE messages_fts MATCH ? AND messages_fts.rowid >= ? {where} "
            "ORDER BY messages_fts.rank LIMIT ?"
        )
        with self._read() as db:
            # Walking the index newest first is cheap (no ranking): find the window's floor.
            if source is None:
                floor_row = db.execute(
                    "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? "
                    "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                    (match, RANK_WINDOW - 1),
                ).fetchone()
            else:
                floor_row = db.execute(
                    f"SELECT messages_fts.rowid FROM messages_fts {join}"
                    f"WHERE messages_fts MATCH ? {where} "
                    "ORDER BY messages_fts.rowid DESC LIMIT 1 OFFSET ?",
                    (match, *params, RANK_WINDOW - 1),
                ).fetchone()
            floor = 0 if floor_row is None else int(floor_row[0])
            rows = db.execute(sql, (match, floor, *params, limit)).fetchall()
        return [
            SearchHit(session=SessionRecord(*row[3:]), message_id=row[0], role=row[1],
                      snippet=row[2] or "")
            for row in rows
        ]  # fmt: skip

    def stats(self) -> StoreStats:
        with self._read() as db:
            rows = db.execute(
                "SELECT source, count(*), coalesce(sum(message_count), 0), "
                "coalesce(sum(tool_call_count), 0), coalesce(sum(input_tokens), 0), "
                "coalesce(sum(output_tokens), 0) FROM sessions GROUP BY source ORDER BY source"
            ).fetchall()
            db_bytes = self._db_bytes(db)
        return StoreStats(
            sessions=sum(row[1] for row in rows),
            messages=sum(row[2] for row in rows),
            tool_calls=sum(row[3] for row in rows),
            input_tokens=sum(row[4] for row in rows),
            output_tokens=sum(row[5] for row in rows),
            by_source={row[0]: row[1] for row in rows},
            db_bytes=db_bytes,
        )

    def _db_bytes(self, db: sqlite3.Connection) -> int:
        if self._path is None:
            (pages,) = db.execute("PRAGMA page_count").fetchone()
            (page_size,) = db.execute("PRAGMA page_size").fetchone()
            return int(pages) * int(page_size)
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self._path.with_name(self._path.name + suffix))
        return total

    # -- maintenance (SQLite only, for `hermes doctor` and `hermes sessions optimize`) --

    def integrity_check(self) -> str:
        """"ok", or a one-line description of what is wrong.

        Checks SQLite's own structures, the search index against the messages, and the
        session counters against the messages.
        """
        with self._lock:
            db = self._connection()
            try:
                rows = [str(row[0]) for row in db.execute("PRAGMA integrity_check(20)")]
                if rows != ["ok"]:
                    problems = [
                        line.strip()
                        for row in rows
                        for line in row.splitlines()
                        if line.strip() and not line.startswith("***")
                    ]
                    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
                    return "database: " + "; ".join(problems[:3]) + more
                try:
                    db.execute(
                        "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"
                    )
                except sqlite3.DatabaseError as exc:
                    return f"search index: {describe_sqlite_error(exc)}"
                (bad,) = db.execute(
                    "SELECT count(*) FROM sessions AS s WHERE s.message_count != "
                    "(SELECT count(*) FROM messages AS m WHERE m.session_id = s.id)"
                ).fetchone()
                if bad:
                    return f"counters: {bad} session(s) have a message_count that does not match"
            except sqlite3.Error as exc:
                return f"database: {describe_sqlite_error(exc)}"
        return "ok"

    def optimize(self) -> None:
        """Merge the search index's segments and refresh the query planner's statistics."""
        with self._write() as db:
            db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
        with self._read() as db:
            db.execute("PRAGMA optimize")

