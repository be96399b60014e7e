"""`PgSessionStore`: sessions and messages on PostgreSQL (`AsyncSessionStore`).

Same semantics as `hermes.store.sqlite.SqliteSessionStore`, method for method; the
differences are only in how PostgreSQL provides them:

- Every write method is one transaction. Counters (`message_count`, `tool_call_count`)
  are updated in the same transaction as the rows they count, with the session row
  locked by its UPDATE, so concurrent writers on any instance keep them exact.
- `updated_at` comes from this store's clock, which never repeats or goes back; sessions
  with equal times sort by insertion (`created_seq`).
- Fork titles ("<base> #N") are chosen under a transaction-level advisory lock on the
  base title, so two instances forking the same lineage never pick the same number.
- Content is stored as JSON text (`content_json`), so any string round-trips; search
  uses the generated tsvector column (see `postgres.search` for the query rules),
  drafts left out,
  ranked by cover density (`ts_rank_cd`) divided by 1 + log(document length), like
  FTS5's bm25 favouring repeated terms and shorter messages, among the newest RANK_WINDOW matches,
  with `ts_headline` snippets (match wrapped in >>> <<<, "…" where text was cut).
- Turns and drafts follow state.db's rules (see `hermes.store.sqlite.sessions`), except ownership:
  a turn is owned by this storage's instance (`owner_instance`, its lease in
  `hermes.instances`), and `repair_abandoned_turns` ends only turns whose owner's lease
  expired or is missing (by the database's clock). Every write touching a turn locks
  the turn row before the session row, so the owner and a repairer never deadlock.
- `transaction()` pins one pooled connection to the current task's context (a
  ContextVar) inside BEGIN … COMMIT; every method called in the block uses it, every
  other call uses the pool. Writes in the block take no savepoint: a write that raises
  one of our own errors (SessionNotFound…) has written nothing, and a database error
  aborts the transaction, which the block's exit then reports as StoreError instead of
  committing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from hermes.errors import MessageNotFound, SessionNotFound, StoreError
from hermes.ids import new_session_id, short_session_id
from hermes.messages import ChatMessage
from hermes.store.owner import ProcessOwner, current_owner
from hermes.store.postgres.connect import Database
from hermes.store.postgres.search import search_text, ts_query
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
from hermes.store.transcript import SERVER_STOPPED_TOOL_RESULT, call_ids_and_names, valid_transcript

__all__ = ["RANK_WINDOW", "PgSessionStore"]

RANK_WINDOW = 20_000
"""search() ranks at most this many of the newest matching messages (as on SQLite)."""

_SESSION_PLACEHOLDERS = ", ".join("%s" for _ in SESSION_FIELDS)
_MESSAGE_DATA = (
    "role, content_json, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, "
    "timestamp, token_count, search_text"
)
_MESSAGE_COLUMNS = (
    "id, session_id, role, content_json, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, timestamp, token_count"
)
_TURN_COLUMNS = (
    "id, session_id, after_message_id, draft_message_id, started_at, ended_at, end_reason, "
    "owner_host, owner_pid, owner_started, owner_instance"
)
_COMPACTION_COLUMNS = (
    "id, session_id, summary, first_kept_message_id, summarized_messages, before_tokens, "
    "after_tokens, created_at"
)
INTERRUPTED = "interrupted"
"""end_reason (and a kept draft's finish_reason) of a turn whose owner is gone."""
_DB_NOW = "extract(epoch from clock_timestamp())::double precision"
_LIVE_LEASE = (
    "EXISTS (SELECT 1 FROM hermes.instances AS i WHERE i.instance_id = t.owner_instance "
    f"AND i.expires_at >= {_DB_NOW})"
)
# One statement: count the message on its session (locking the row, so counters stay
# exact) and insert it; no row comes back when the session does not exist.
_APPEND = (
    "WITH s AS (UPDATE hermes.sessions SET message_count = message_count + 1, "
    "tool_call_count = tool_call_count + %s, updated_at = %s WHERE id = %s RETURNING id) "
    f"INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) "
    "SELECT s.id, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, "
    "%s::double precision, %s::integer, %s::text FROM s RETURNING id"
)
# An assistant message of a turn with no open draft is a plain append (one statement);
# no row back means the turn has a draft to replace (or the ids are wrong): the slow path.
_APPEND_UNLESS_DRAFT = "WITH t AS (SELECT 1 FROM hermes.turns WHERE id = %s AND session_id = %s " \
    "AND (draft_message_id IS NULL OR ended_at IS NOT NULL)), " + _APPEND.removeprefix("WITH ").replace(
        "WHERE id = %s RETURNING id)", "WHERE id = %s AND EXISTS (SELECT 1 FROM t) RETURNING id)"
    )  # fmt: skip
# Ending a turn is one statement: the draft it had (read before the update) is kept as a
# message. No row in `old`: no such turn. Ended already: nothing changes.
_END_TURN = (
    "WITH old AS (SELECT id, draft_message_id FROM hermes.turns WHERE id = %(turn)s), "
    "t AS (UPDATE hermes.turns AS u SET ended_at = %(now)s, end_reason = %(reason)s, draft_message_id = NULL "
    "FROM old WHERE u.id = old.id AND u.ended_at IS NULL RETURNING old.draft_message_id AS draft), "
    "m AS (UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, %(reason)s) "
    "WHERE id = (SELECT draft FROM t)) "
    "SELECT count(*) FROM old"
)
# Opening a turn with its first message is one statement: the turn starts after the
# session's newest message (the snapshot is from before this insert). No row: no session.
_OPEN_TURN = (
    "WITH s AS (UPDATE hermes.sessions SET message_count = message_count + 1, "
    "tool_call_count = tool_call_count + %s, updated_at = %s WHERE id = %s RETURNING id), "
    "t AS (INSERT INTO hermes.turns (session_id, after_message_id, started_at, owner_host, owner_pid, "
    "owner_started, owner_instance) SELECT s.id, (SELECT coalesce(max(m.id), 0) FROM hermes.messages AS m "
    "WHERE m.session_id = s.id), %s, %s, %s, %s, %s FROM s RETURNING " + _TURN_COLUMNS + "), "
    f"msg AS (INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) "
    "SELECT s.id, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, "
    "%s::double precision, %s::integer, %s::text FROM s RETURNING id) "
    "SELECT t.*, msg.id FROM t, msg"
)
# Finishing a turn is one statement: end it (keeping its draft), add the usage, end the
# session (first reason wins); nothing when the turn is not one of the session's.
# Counts back: (the turn in this session, the session).
_FINISH_TURN = (
    "WITH old AS (SELECT id, draft_message_id FROM hermes.turns WHERE id = %(turn)s AND session_id = %(sid)s), "
    "t AS (UPDATE hermes.turns AS u SET ended_at = %(now)s, end_reason = %(reason)s, draft_message_id = NULL "
    "FROM old WHERE u.id = old.id AND u.ended_at IS NULL RETURNING old.draft_message_id AS draft), "
    "m AS (UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, %(reason)s) "
    "WHERE id = (SELECT draft FROM t)), "
    "s AS (UPDATE hermes.sessions SET input_tokens = input_tokens + %(input)s, "
    "output_tokens = output_tokens + %(output)s, "
    "ended_at = CASE WHEN end_reason IS NULL THEN %(now)s ELSE ended_at END, "
    "updated_at = CASE WHEN end_reason IS NULL THEN %(now)s ELSE updated_at END, "
    "end_reason = coalesce(end_reason, %(reason)s) WHERE id = %(sid)s AND EXISTS (SELECT 1 FROM old) RETURNING id) "
    "SELECT (SELECT count(*) FROM old), (SELECT count(*) FROM hermes.sessions WHERE id = %(sid)s)"
)
# A fork copies the markers whose first kept message it copies (or, when that one was
# not copied, the next copied one), pointing them at the copy. Copies get ids in the
# order of the originals, so the n-th copied message is the copy of the n-th original.
_COPY_COMPACTIONS = (
    "WITH copies AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages WHERE session_id = %s), "
    "originals AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM hermes.messages "
    "WHERE session_id = %s AND id <= %s AND NOT draft) "
    "INSERT INTO hermes.compactions (session_id, summary, first_kept_message_id, summarized_messages, "
    "before_tokens, after_tokens, created_at) "
    "SELECT %s, c.summary, copies.id, c.summarized_messages, c.before_tokens, c.after_tokens, c.created_at "
    "FROM hermes.compactions AS c "
    "JOIN originals ON originals.id = (SELECT min(o.id) FROM originals AS o WHERE o.id >= c.first_kept_message_id) "
    "JOIN copies ON copies.n = originals.n WHERE c.session_id = %s AND c.first_kept_message_id <= %s ORDER BY c.id"
)
_HEADLINE_OPTIONS = (
    f'StartSel=">>>", StopSel="<<<", MaxWords={SNIPPET_TOKENS}, MinWords={SNIPPET_TOKENS // 2}, '
    'ShortWord=0, MaxFragments=1, FragmentDelimiter=" … "'
)


def _encode_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _session(row: Any) -> SessionRecord:
    values = list(row)
    return SessionRecord(*values)


def _message(row: Any) -> MessageRecord:
    (mid, session_id, role, content_json, tool_calls, tool_call_id, tool_name, reasoning,
     finish_reason, timestamp, token_count) = row  # fmt: skip
    return MessageRecord(
        id=int(mid),
        session_id=session_id,
        role=role,
        content=json.loads(content_json),
        tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        reasoning=reasoning,
        finish_reason=finish_reason,
        timestamp=timestamp,
        token_count=token_count,
    )


def _turn(row: Any) -> TurnRecord:
    (tid, session_id, after, draft, started_at, ended_at, end_reason,
     host, pid, started, instance) = row  # fmt: skip
    return TurnRecord(
        id=int(tid),
        session_id=session_id,
        after_message_id=int(after),
        draft_message_id=None if draft is None else int(draft),
        started_at=started_at,
        ended_at=ended_at,
        end_reason=end_reason,
        owner=ProcessOwner(host=host, pid=pid, started=started),
        owner_instance=instance,
    )


def _compaction(row: Any) -> CompactionRecord:
    (cid, session_id, summary, first_kept, summarized, before, after, created_at) = row
    return CompactionRecord(int(cid), session_id, summary, int(first_kept), int(summarized),
                            int(before), int(after), created_at)  # fmt: skip


def _with_ellipses(headline: str, text: str) -> str:
    """Mark with "…" the ends where the headline cut the text."""
    plain = headline.replace(">>>", "").replace("<<<", "")
    where = text.find(plain)
    if where < 0:
        return headline
    head = "…" if where > 0 else ""
    tail = "…" if where + len(plain) < len(text) else ""
    return head + headline + tail


def _snippet(row: Any) -> str:
    """The headline of the text as written when it marks the match; else (the match was
    inside a word PostgreSQL's parser keeps whole, like "config.py") the headline of
    the text's words, where punctuation is spaces."""
    text, headline, words, words_headline = row[2] or "", row[3] or "", row[4] or "", row[5] or ""
    if ">>>" in headline:
        return _with_ellipses(headline, text)
    return _with_ellipses(words_headline, words)


class _Block:
    """The connection a `transaction()` block pinned, and whether the block still runs."""

    __slots__ = ("conn", "open")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.open = True


class PgSessionStore:
    """See the module docstring. Built by `open_postgres_storage`."""

    def __init__(self, db: Database, *, instance_id: str) -> None:
        self._db = db
        self._clock = Clock()
        self.instance_id = instance_id
        """The owner of the turns this store begins (`Storage.instance_id`)."""
        self._block: ContextVar[_Block | None] = ContextVar(f"hermes_pg_transaction_{id(self)}", default=None)

    # -- connections -----------------------------------------------------------------

    def _pinned(self) -> Any:
        """The connection of the enclosing `transaction()` block, while that block runs.

        A task started inside a block inherits the block's context; once the block has
        ended (its connection back in the pool) such a task uses the pool like any other."""
        block = self._block.get()
        return block.conn if block is not None and block.open else None

    @contextlib.asynccontextmanager
    async def _conn(self) -> AsyncIterator[Any]:
        """The task's pinned connection inside `transaction()`, else a pooled one.

        Outside a transaction each statement commits on its own (autocommit)."""
        pinned = self._pinned()
        if pinned is None:
            async with self._db.connection() as conn:
                yield conn
        else:
            async with self._db.errors():
                yield pinned

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[Any]:
        """A connection inside a transaction: the pinned one's, else a new one committed at exit."""
        pinned = self._pinned()
        if pinned is None:
            async with self._db.transaction() as conn:
                yield conn
        else:
            async with self._db.errors():
                yield pinned

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """See `AsyncSessionStore.transaction` and the module docstring.

        A nested `transaction()` is a savepoint of the enclosing one: an exception leaving
        it undoes only its own writes."""
        pinned = self._pinned()
        if pinned is not None:
            async with self._db.errors(), pinned.transaction():
                yield
            return
        from psycopg.pq import TransactionStatus

        async with self._db.connection() as conn, conn.transaction():
            block = _Block(conn)
            token = self._block.set(block)
            try:
                yield
            finally:
                block.open = False
                self._block.reset(token)
            if conn.info.transaction_status == TransactionStatus.INERROR:
                # COMMIT would quietly roll back: say so instead.
                raise StoreError(
                    f"database {self._db.label}: a write in the transaction failed; nothing was committed"
                )

    # -- sessions --------------------------------------------------------------------

    @staticmethod
    async def _fetch(conn: Any, session_id: str, *, lock: bool = False) -> SessionRecord | None:
        cursor = await conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions WHERE id = %s" + (" FOR UPDATE" if lock else ""),
            (session_id,),
        )
        row = await cursor.fetchone()
        return None if row is None else _session(row)

    async def _require(self, conn: Any, session_id: str, *, lock: bool = False) -> SessionRecord:
        record = await self._fetch(conn, session_id, lock=lock)
        if record is None:
            raise SessionNotFound(session_id)
        return record

    async def _insert_new(self, conn: Any, record: SessionRecord, *, id_given: bool) -> SessionRecord:
        """Insert `record`; a generated id that collides is replaced by a fresh one."""
        for _ in range(8):
            cursor = await conn.execute(
                f"INSERT INTO hermes.sessions ({SESSION_COLUMNS}) VALUES ({_SESSION_PLACEHOLDERS}) "
                "ON CONFLICT (id) DO NOTHING",
                tuple(getattr(record, name) for name in SESSION_FIELDS),
            )
            if cursor.rowcount == 1:
                return record
            if id_given:
                raise StoreError(f"a session with id {record.id!r} already exists")
            record = replace(record, id=new_session_id(record.started_at))
        raise StoreError("could not generate a unique session id")

    async def create_session(
        self,
        *,
        source: str,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> SessionRecord:
        async with self._write() as conn:
            if parent_session_id is not None:
                await self._require(conn, parent_session_id)
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
            return await self._insert_new(conn, record, id_given=bool(session_id))

    async def get_session(self, session_id: str) -> SessionRecord:
        async with self._conn() as conn:
            return await self._require(conn, session_id)

    async def find_session(self, session_id: str) -> SessionRecord | None:
        async with self._conn() as conn:
            return await self._fetch(conn, session_id)

    async def latest_session(self, *, source: str | None = None) -> SessionRecord | None:
        sessions = await self.list_sessions(limit=1, source=source)
        return sessions[0] if sessions else None

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        where, params = ("WHERE source = %s", [source]) if source is not None else ("", [])
        async with self._conn() as conn:
            cursor = await conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM hermes.sessions {where} "
                "ORDER BY updated_at DESC, created_seq DESC LIMIT %s OFFSET %s",
                (*params, max(limit, 0), max(offset, 0)),
            )
            rows = await cursor.fetchall()
        return [_session(row) for row in rows]

    async def count_sessions(self, *, source: str | None = None) -> int:
        async with self._conn() as conn:
            if source is None:
                cursor = await conn.execute("SELECT count(*) FROM hermes.sessions")
            else:
                cursor = await conn.execute("SELECT count(*) FROM hermes.sessions WHERE source = %s", (source,))
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def rename_session(self, session_id: str, title: str) -> SessionRecord:
        async with self._write() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.sessions SET title = %s, updated_at = %s WHERE id = %s",
                (clean_title(title), self._clock(), session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)
            return await self._require(conn, session_id)

    async def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord:
        async with self._write() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.sessions SET model = coalesce(%s, model), "
                "system_prompt = coalesce(%s, system_prompt) WHERE id = %s",
                (model, system_prompt, session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)
            return await self._require(conn, session_id)

    async def end_session(self, session_id: str, reason: str) -> None:
        async with self._write() as conn:
            now = self._clock()
            cursor = await conn.execute(
                "UPDATE hermes.sessions SET ended_at = %s, end_reason = %s, updated_at = %s "
                "WHERE id = %s AND end_reason IS NULL",
                (now, reason, now, session_id),
            )
            if cursor.rowcount == 0:
                await self._require(conn, session_id)

    async def add_usage(self, session_id: str, *, input_tokens: int, output_tokens: int) -> None:
        async with self._write() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.sessions SET input_tokens = input_tokens + %s, "
                "output_tokens = output_tokens + %s WHERE id = %s",
                (input_tokens, output_tokens, session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

    async def delete_session(self, session_id: str) -> None:
        async with self._write() as conn:
            await self._require(conn, session_id, lock=True)
            await conn.execute(
                "UPDATE hermes.sessions SET parent_session_id = NULL WHERE parent_session_id = %s", (session_id,)
            )
            await conn.execute("DELETE FROM hermes.messages WHERE session_id = %s", (session_id,))
            await conn.execute("DELETE FROM hermes.sessions WHERE id = %s", (session_id,))

    # -- messages --------------------------------------------------------------------

    async def append_message(
        self, session_id: str, message: NewMessage, *, turn_id: int | None = None
    ) -> MessageRecord:
        if message.content is not None and not isinstance(message.content, (str, list)):
            raise TypeError(f"message content must be str, list or None, not {type(message.content).__name__}")
        content_json = _encode_json(message.content)
        tool_calls = None if message.tool_calls is None else _encode_json(message.tool_calls)
        text = search_text(message.role, message.content)
        if turn_id is not None and message.role == "assistant":
            async with self._conn() as conn:
                now = self._clock()
                cursor = await conn.execute(
                    _APPEND_UNLESS_DRAFT,
                    (turn_id, session_id, len(message.tool_calls or ()), now, session_id, message.role, content_json,
                     tool_calls, message.tool_call_id, message.tool_name, message.reasoning, message.finish_reason,
                     now, message.token_count, text),
                )  # fmt: skip
                row = await cursor.fetchone()
            if row is not None:
                return _message(
                    (int(row[0]), session_id, message.role, content_json, tool_calls, message.tool_call_id,
                     message.tool_name, message.reasoning, message.finish_reason, now, message.token_count)
                )  # fmt: skip
            async with self._write() as conn:
                draft = await self._open_draft(conn, turn_id, session_id)
                if draft is not None:
                    now = self._clock()
                    await conn.execute(
                        "UPDATE hermes.messages SET content_json = %s, tool_calls = %s, reasoning = %s, "
                        "finish_reason = %s, token_count = %s, timestamp = %s, search_text = %s, "
                        "draft = false WHERE id = %s",
                        (content_json, tool_calls, message.reasoning, message.finish_reason,
                         message.token_count, now, text, draft),
                    )  # fmt: skip
                    await conn.execute(
                        "UPDATE hermes.sessions SET tool_call_count = tool_call_count + %s, updated_at = %s "
                        "WHERE id = %s",
                        (len(message.tool_calls or ()), now, session_id),
                    )
                    await conn.execute("UPDATE hermes.turns SET draft_message_id = NULL WHERE id = %s", (turn_id,))
                    return _message(
                        (draft, session_id, message.role, content_json, tool_calls, None, None,
                         message.reasoning, message.finish_reason, now, message.token_count)
                    )  # fmt: skip
                now, message_id = await self._insert_message(conn, session_id, message, content_json, tool_calls, text)
        else:
            async with self._conn() as conn:
                now, message_id = await self._insert_message(conn, session_id, message, content_json, tool_calls, text)
        # Decode what was stored so the record never aliases the caller's lists.
        return _message(
            (message_id, session_id, message.role, content_json, tool_calls, message.tool_call_id,
             message.tool_name, message.reasoning, message.finish_reason, now, message.token_count)
        )  # fmt: skip

    async def _insert_message(
        self,
        conn: Any,
        session_id: str,
        message: NewMessage,
        content_json: str,
        tool_calls: str | None,
        text: str | None,
    ) -> tuple[float, int]:
        """Insert and count one message (one statement); its (timestamp, id)."""
        now = self._clock()
        cursor = await conn.execute(
            _APPEND,
            (len(message.tool_calls or ()), now, session_id, message.role, content_json, tool_calls,
             message.tool_call_id, message.tool_name, message.reasoning, message.finish_reason, now,
             message.token_count, text),
        )  # fmt: skip
        row = await cursor.fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return now, int(row[0])

    async def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        async with self._conn() as conn:
            await self._require(conn, session_id)
            cursor = await conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM hermes.messages WHERE session_id = %s "
                "ORDER BY id LIMIT %s OFFSET %s",
                (session_id, None if limit is None else max(limit, 0), max(offset, 0)),
            )
            rows = await cursor.fetchall()
        return [_message(row) for row in rows]

    async def history(self, session_id: str) -> list[ChatMessage]:
        async with self._conn() as conn:
            await self._require(conn, session_id)
            cursor = await conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM hermes.messages WHERE session_id = %s AND NOT draft ORDER BY id",
                (session_id,),
            )
            rows = await cursor.fetchall()
        return valid_transcript([_message(row).to_openai() for row in rows])

    # -- turns and checkpoints -------------------------------------------------------

    @staticmethod
    async def _fetch_turn(conn: Any, turn_id: int, *, lock: bool = False) -> TurnRecord | None:
        cursor = await conn.execute(
            f"SELECT {_TURN_COLUMNS} FROM hermes.turns WHERE id = %s" + (" FOR UPDATE" if lock else ""),
            (turn_id,),
        )
        row = await cursor.fetchone()
        return None if row is None else _turn(row)

    async def _require_turn(self, conn: Any, turn_id: int, *, lock: bool = False) -> TurnRecord:
        turn = await self._fetch_turn(conn, turn_id, lock=lock)
        if turn is None:
            raise StoreError(f"database {self._db.label}: no turn with id {turn_id}")
        return turn

    async def _open_draft(self, conn: Any, turn_id: int, session_id: str) -> int | None:
        """The open turn's draft id (the turn row locked), None when it has none or ended."""
        turn = await self._require_turn(conn, turn_id, lock=True)
        if turn.session_id != session_id:
            raise StoreError(f"turn {turn_id} belongs to session {turn.session_id}, not {session_id}")
        return turn.draft_message_id if turn.ended_at is None else None

    async def begin_turn(self, session_id: str) -> TurnRecord:
        owner = current_owner()
        async with self._conn() as conn:
            cursor = await conn.execute(
                "INSERT INTO hermes.turns (session_id, after_message_id, started_at, owner_host, owner_pid, "
                "owner_started, owner_instance) "
                "SELECT s.id, (SELECT coalesce(max(m.id), 0) FROM hermes.messages AS m WHERE m.session_id = s.id), "
                "%s, %s, %s, %s, %s FROM hermes.sessions AS s WHERE s.id = %s "
                f"RETURNING {_TURN_COLUMNS}",
                (self._clock(), owner.host, owner.pid, owner.started, self.instance_id, session_id),
            )
            row = await cursor.fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return _turn(row)

    async def save_draft(self, turn_id: int, content: str) -> None:
        content_json = _encode_json(content)
        text = search_text("assistant", content)
        async with self._conn() as conn:
            # The usual case, one statement: the open turn already has its draft. The
            # draft row's own flag is re-checked under its lock, so a draft that
            # end_turn has just kept is never overwritten.
            cursor = await conn.execute(
                "UPDATE hermes.messages AS m SET content_json = %s, search_text = %s FROM hermes.turns AS t "
                "WHERE t.id = %s AND t.ended_at IS NULL AND m.id = t.draft_message_id AND m.draft",
                (content_json, text, turn_id),
            )
            if cursor.rowcount == 1:
                return
        async with self._write() as conn:
            turn = await self._require_turn(conn, turn_id, lock=True)
            if turn.ended_at is not None:
                return
            if turn.draft_message_id is not None:
                await conn.execute(
                    "UPDATE hermes.messages SET content_json = %s, search_text = %s WHERE id = %s",
                    (content_json, text, turn.draft_message_id),
                )
                return
            now = self._clock()
            await conn.execute(
                "UPDATE hermes.sessions SET message_count = message_count + 1, updated_at = %s WHERE id = %s",
                (now, turn.session_id),
            )
            cursor = await conn.execute(
                "INSERT INTO hermes.messages (session_id, role, content_json, timestamp, search_text, draft) "
                "VALUES (%s, 'assistant', %s, %s, %s, true) RETURNING id",
                (turn.session_id, content_json, now, text),
            )
            row = await cursor.fetchone()
            assert row is not None
            await conn.execute("UPDATE hermes.turns SET draft_message_id = %s WHERE id = %s", (row[0], turn_id))

    async def _close_turn(self, conn: Any, turn: TurnRecord, reason: str) -> bool:
        """Keep the draft as a message and end the turn; False when it had already ended."""
        cursor = await conn.execute(
            "UPDATE hermes.turns SET ended_at = %s, end_reason = %s, draft_message_id = NULL "
            "WHERE id = %s AND ended_at IS NULL",
            (self._clock(), reason, turn.id),
        )
        if cursor.rowcount == 0:
            return False
        if turn.draft_message_id is not None:
            await conn.execute(
                "UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, %s) WHERE id = %s",
                (reason, turn.draft_message_id),
            )
        return True

    async def open_turn(self, session_id: str, first: NewMessage) -> tuple[TurnRecord, MessageRecord]:
        if first.content is not None and not isinstance(first.content, (str, list)):
            raise TypeError(f"message content must be str, list or None, not {type(first.content).__name__}")
        content_json = _encode_json(first.content)
        tool_calls = None if first.tool_calls is None else _encode_json(first.tool_calls)
        owner = current_owner()
        now = self._clock()
        async with self._conn() as conn:
            cursor = await conn.execute(
                _OPEN_TURN,
                (len(first.tool_calls or ()), now, session_id, now, owner.host, owner.pid, owner.started,
                 self.instance_id, first.role, content_json, tool_calls, first.tool_call_id, first.tool_name,
                 first.reasoning, first.finish_reason, now, first.token_count, search_text(first.role, first.content)),
            )  # fmt: skip
            row = await cursor.fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        message = _message(
            (int(row[-1]), session_id, first.role, content_json, tool_calls, first.tool_call_id, first.tool_name,
             first.reasoning, first.finish_reason, now, first.token_count)
        )  # fmt: skip
        return _turn(row[:-1]), message

    async def finish_turn(
        self, turn_id: int, session_id: str, reason: str, *, input_tokens: int, output_tokens: int
    ) -> None:
        params = {"turn": turn_id, "sid": session_id, "now": self._clock(), "reason": reason,
                  "input": input_tokens, "output": output_tokens}  # fmt: skip
        async with self._conn() as conn:
            row = await (await conn.execute(_FINISH_TURN, params)).fetchone()
        assert row is not None
        if int(row[1]) == 0:
            raise SessionNotFound(session_id)
        if int(row[0]) == 0:
            raise StoreError(f"database {self._db.label}: turn {turn_id} is not a turn of session {session_id}")

    async def end_turn(self, turn_id: int, reason: str) -> None:
        async with self._conn() as conn:
            cursor = await conn.execute(_END_TURN, {"turn": turn_id, "now": self._clock(), "reason": reason})
            row = await cursor.fetchone()
        if row is None or int(row[0]) == 0:
            raise StoreError(f"database {self._db.label}: no turn with id {turn_id}")

    async def get_turn(self, turn_id: int) -> TurnRecord | None:
        async with self._conn() as conn:
            return await self._fetch_turn(conn, turn_id)

    async def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        async with self._conn() as conn:
            turn = await self._require_turn(conn, turn_id)
            cursor = await conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM hermes.messages WHERE session_id = %s AND id > %s "
                "AND id <= (SELECT coalesce(min(after_message_id), %s) FROM hermes.turns "
                "WHERE session_id = %s AND id > %s AND after_message_id > %s) ORDER BY id",
                (turn.session_id, turn.after_message_id, 2**63 - 1, turn.session_id, turn.id,
                 turn.after_message_id),
            )  # fmt: skip
            rows = await cursor.fetchall()
        return [_message(row) for row in rows]

    async def repair_abandoned_turns(self) -> list[RepairedTurn]:
        """End every open turn whose owner instance's lease expired or is missing.

        Each turn is repaired in its own transaction that locks it and re-checks that it
        is still open and still has no live lease, so two repairers never both act and a
        lease renewed meanwhile saves its turn.
        """
        async with self._conn() as conn:
            cursor = await conn.execute(
                f"SELECT t.id FROM hermes.turns AS t WHERE t.ended_at IS NULL AND NOT {_LIVE_LEASE} ORDER BY t.id"
            )
            candidates = [int(turn_id) for (turn_id,) in await cursor.fetchall()]
        repaired: list[RepairedTurn] = []
        for turn_id in candidates:
            async with self._write() as conn:
                cursor = await conn.execute(
                    f"SELECT {', '.join('t.' + name.strip() for name in _TURN_COLUMNS.split(','))} "
                    f"FROM hermes.turns AS t WHERE t.id = %s AND t.ended_at IS NULL AND NOT {_LIVE_LEASE} "
                    "FOR UPDATE OF t",
                    (turn_id,),
                )
                row = await cursor.fetchone()
                if row is None:
                    continue  # ended, or its owner came back, meanwhile
                repaired.append(await self._repair_turn(conn, _turn(row)))
        return repaired

    async def _repair_turn(self, conn: Any, turn: TurnRecord) -> RepairedTurn:
        """Inside a transaction holding the turn's lock: see `AsyncSessionStore.repair_abandoned_turns`."""
        cursor = await conn.execute(
            "SELECT role, tool_calls, tool_call_id FROM hermes.messages WHERE session_id = %s AND id > %s ORDER BY id",
            (turn.session_id, turn.after_message_id),
        )
        unanswered: list[tuple[str, str]] = []
        for role, tool_calls, tool_call_id in await cursor.fetchall():
            if role == "assistant" and tool_calls is not None:
                unanswered.extend(call_ids_and_names(json.loads(tool_calls)))
            elif role == "tool":
                unanswered = [pair for pair in unanswered if pair[0] != tool_call_id]
        kept_text = turn.draft_message_id is not None
        await self._close_turn(conn, turn, INTERRUPTED)
        now = self._clock()
        placeholder = _encode_json(SERVER_STOPPED_TOOL_RESULT)
        text = search_text("tool", SERVER_STOPPED_TOOL_RESULT)
        for call_id, name in unanswered:
            await conn.execute(
                "INSERT INTO hermes.messages (session_id, role, content_json, tool_call_id, tool_name, "
                "timestamp, search_text) VALUES (%s, 'tool', %s, %s, %s, %s, %s)",
                (turn.session_id, placeholder, call_id, name or None, now, text),
            )
        await conn.execute(
            "UPDATE hermes.sessions SET message_count = message_count + %s, updated_at = %s, "
            "ended_at = coalesce(ended_at, %s), end_reason = coalesce(end_reason, %s) WHERE id = %s",
            (len(unanswered), now, now, INTERRUPTED, turn.session_id),
        )
        return RepairedTurn(
            turn_id=turn.id, session_id=turn.session_id, kept_text=kept_text, placeholders=len(unanswered)
        )

    # -- compaction markers ----------------------------------------------------------

    async def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        async with self._conn() as conn:
            cursor = await conn.execute(
                "INSERT INTO hermes.compactions (session_id, summary, first_kept_message_id, summarized_messages, "
                "before_tokens, after_tokens, created_at) SELECT s.id, %s, %s, %s, %s, %s, %s "
                f"FROM hermes.sessions AS s WHERE s.id = %s RETURNING {_COMPACTION_COLUMNS}",
                (marker.summary, marker.first_kept_message_id, marker.summarized_messages, marker.before_tokens,
                 marker.after_tokens, self._clock(), session_id),
            )  # fmt: skip
            row = await cursor.fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return _compaction(row)

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        async with self._conn() as conn:
            cursor = await conn.execute(
                f"SELECT {_COMPACTION_COLUMNS} FROM hermes.compactions WHERE session_id = %s ORDER BY id",
                (session_id,),
            )
            rows = await cursor.fetchall()
        return [_compaction(row) for row in rows]

    # -- forks -----------------------------------------------------------------------

    @staticmethod
    async def _next_lineage_title(conn: Any, base: str) -> str:
        """`"<base> #N"` with N one more than the highest number in use (at least 2)."""
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('hermes.fork_title'), hashtext(%s))", (base,))
        cursor = await conn.execute(
            "SELECT title FROM hermes.sessions WHERE starts_with(title, %s)", (base + " #",)
        )
        highest = 1
        for (title,) in await cursor.fetchall():
            match = NUMBERED_TITLE.match(title)
            if match and match["base"] == base:
                highest = max(highest, int(match["n"]))
        return f"{base} #{highest + 1}"

    async def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
    ) -> SessionRecord:
        async with self._write() as conn:
            parent = await self._require(conn, session_id, lock=True)
            upto = 2**63 - 1
            if at_message_id is not None:
                cursor = await conn.execute(
                    "SELECT 1 FROM hermes.messages WHERE id = %s AND session_id = %s",
                    (at_message_id, session_id),
                )
                if await cursor.fetchone() is None:
                    raise MessageNotFound(at_message_id, session_id)
                upto = at_message_id
            child_title = clean_title(title)
            if child_title is None:
                base = parent.title or f"Session {short_session_id(parent.id)}"
                match = NUMBERED_TITLE.match(base)
                child_title = await self._next_lineage_title(conn, match["base"] if match else base)
            parent_now = self._clock()
            await conn.execute(
                "UPDATE hermes.sessions SET end_reason = 'branched', ended_at = %s, updated_at = %s WHERE id = %s",
                (parent_now, parent_now, session_id),
            )
            now = self._clock()
            child = await self._insert_new(
                conn,
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
            cursor = await conn.execute(
                f"INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) "
                f"SELECT %s, {_MESSAGE_DATA} FROM hermes.messages "
                "WHERE session_id = %s AND id <= %s AND NOT draft ORDER BY id",
                (child.id, session_id, upto),
            )
            copied = cursor.rowcount
            cursor = await conn.execute(
                "SELECT coalesce(sum(json_array_length(tool_calls::json)), 0) FROM hermes.messages "
                "WHERE session_id = %s AND id <= %s AND tool_calls IS NOT NULL AND NOT draft",
                (session_id, upto),
            )
            row = await cursor.fetchone()
            tool_calls = int(row[0]) if row else 0
            await conn.execute(
                "UPDATE hermes.sessions SET message_count = %s, tool_call_count = %s WHERE id = %s",
                (copied, tool_calls, child.id),
            )
            await conn.execute(_COPY_COMPACTIONS, (child.id, session_id, upto, child.id, session_id, upto))
            return await self._require(conn, child.id)

    # -- search and stats ------------------------------------------------------------

    async def search(
        self, query: str, *, limit: int = 20, source: str | None = None
    ) -> list[SearchHit]:
        tsquery = ts_query(query)
        if not tsquery or limit <= 0:
            return []
        join, where, params = "", "", []
        if source is not None:
            join = "JOIN hermes.sessions AS ws ON ws.id = m.session_id "
            where = "AND ws.source = %s "
            params = [source]
        # The window (newest matches, an index scan) is ranked; only the returned rows
        # get a headline, which is the expensive part.
        sql = (
            "WITH q AS (SELECT to_tsquery('hermes.search', %s) AS q), "
            "win AS (SELECT m.id, m.session_id, m.role, m.search_text, m.search_vector "
            f"FROM hermes.messages AS m {join}"
            f"WHERE m.search_vector @@ (SELECT q FROM q) AND NOT m.draft {where}"
            "ORDER BY m.id DESC LIMIT %s), "
            "best AS (SELECT win.*, ts_rank_cd(win.search_vector, (SELECT q FROM q), 1) AS rank "
            "FROM win ORDER BY rank DESC, win.id DESC LIMIT %s) "
            "SELECT best.id, best.role, best.search_text, "
            "ts_headline('hermes.search', best.search_text, (SELECT q FROM q), %s), "
            "hermes.search_words(best.search_text), "
            "ts_headline('hermes.search', hermes.search_words(best.search_text), (SELECT q FROM q), %s), "
            f"{SESSION_COLUMNS_S} FROM best JOIN hermes.sessions AS s ON s.id = best.session_id "
            "ORDER BY best.rank DESC, best.id DESC"
        )
        async with self._conn() as conn:
            cursor = await conn.execute(
                sql,
                (tsquery, *params, RANK_WINDOW, limit, _HEADLINE_OPTIONS, _HEADLINE_OPTIONS),
            )
            rows = await cursor.fetchall()
        return [
            SearchHit(session=_session(row[6:]), message_id=int(row[0]), role=row[1], snippet=_snippet(row))
            for row in rows
        ]

    async def stats(self) -> StoreStats:
        async with self._conn() as conn:
            cursor = await conn.execute(
                "SELECT source, count(*), coalesce(sum(message_count), 0), "
                "coalesce(sum(tool_call_count), 0), coalesce(sum(input_tokens), 0), "
                "coalesce(sum(output_tokens), 0) FROM hermes.sessions GROUP BY source ORDER BY source"
            )
            rows = await cursor.fetchall()
            cursor = await conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
                "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'hermes' AND c.relkind = 'r'"
            )
            size = await cursor.fetchone()
        return StoreStats(
            sessions=sum(int(row[1]) for row in rows),
            messages=sum(int(row[2]) for row in rows),
            tool_calls=sum(int(row[3]) for row in rows),
            input_tokens=sum(int(row[4]) for row in rows),
            output_tokens=sum(int(row[5]) for row in rows),
            by_source={row[0]: int(row[1]) for row in rows},
            db_bytes=int(size[0]) if size else 0,
        )
