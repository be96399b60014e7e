"""The session rules, written once over an `Executor` and a `Dialect` (both backends).

`Sessions` implements `AsyncSessionStore`: create, fork and title lineage, counters,
turns and drafts, crash repair of abandoned turns, compaction markers, messages, list,
get, rename, delete and end. A backend supplies only

- an `Executor`: runs one statement (`fetch_one`, `fetch_all`, `execute`, `insert`) and
  groups statements (`transaction`), translating the neutral SQL written here (`?`
  placeholders, tables named `hermes.<table>`) into its own;
- a `Dialect`: the few named differences (how content is stored, the session insertion
  order column, row locks, LIMIT without a limit, the title-lineage query, which turns
  are abandoned, full-text search, the database's size) and, where the backend can do
  a write in one statement, that statement (`FusedWrites`, PostgreSQL).

Invariants (both backends):

- `sessions.message_count` equals the number of the session's rows in `messages` (a
  draft included), `tool_call_count` the total length of their `tool_calls` lists; both
  change in the same transaction as the rows they count.
- `updated_at` ("newest activity") moves on create, append, rename, end and fork, from
  one `Clock` per store that never repeats or goes back; equal times (other writers)
  fall back to insertion order.
- Session ids default to `hermes.ids.new_session_id()`; a generated id that collides is
  replaced (up to 8 tries), and so is a preferred one (`fresh_if_taken`, a `NewSession`
  not `given`: of two writers creating one id at once exactly one gets it, the other a
  fresh id); a given one that exists is a StoreError.
- A turn is open from `begin_turn` (or `start_turn`) to `end_turn` (or `finish_turn`).
  Its draft is an assistant row with `draft` set, counted like any row, that
  `save_draft` overwrites and `append_message(..., turn_id=)` / `finish_turn`'s answer /
  `end_turn` / repair turn into a real message in place. `history()`, `fork_session`
  and search leave drafts out.
- `repair_abandoned_turns` ends only turns whose owner is gone (`Dialect.abandoned`
  decides, plus the store's `is_gone` test), each in its own transaction that re-checks
  the turn is still open and abandoned, so two repairers never both act (what a repair
  writes: `turn_repair`).
- Undo hides turns and their messages behind a marker; see `turn_undo`.
- A fork ends the parent "branched" and copies its transcript and markers into the
  child in the same transaction; see `forks` (and `compactions` for the markers).
- Every token added to a session's counters is also in a `usage` row written in the same
  transaction (`usage_rows`), so cost can be priced per model and day.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, assert_never

from hermes.errors import MessageNotFound, SessionNotFound, StoreError
from hermes.ids import new_session_id
from hermes.messages import ChatMessage
from hermes.store import compactions, conversation_marks, forks, turn_repair, turn_undo, usage_rows
from hermes.store.owner import ProcessOwner, current_owner
from hermes.store.records import (
    INTERRUPTED,
    CompactionRecord,
    ConversationMark,
    MessageRecord,
    NewCompaction,
    NewMessage,
    NewSession,
    RepairedTurn,
    SearchHit,
    SessionRecord,
    StoreStats,
    TurnCheckpoint,
    TurnRecord,
    UsageTotal,
)
from hermes.store.session_rules import (
    SESSION_COLUMNS,
    SESSION_FIELDS,
    Clock,
    clean_title,
    fresh_session,
)
from hermes.store.sql import TURN_COLUMNS, Dialect, Executor, Row, encode_json
from hermes.store.transcript import valid_transcript

__all__ = ["Sessions"]

NO_MESSAGE_ABOVE = 2**63 - 1
"""The largest message id: "up to the end" for ranges of message ids."""

_SESSION_PLACEHOLDERS = ", ".join("?" for _ in SESSION_FIELDS)


def _session(row: Row) -> SessionRecord:
    return SessionRecord(*row)


def _turn(row: Row) -> TurnRecord:
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


class Sessions:
    """`AsyncSessionStore` over an executor and a dialect.

    Args:
        db: the backend's executor.
        dialect: the backend's dialect.
        instance_id: the owner instance recorded on the turns this store begins, where
            the dialect has the column (PostgreSQL); None where a process owns its turns.
        is_gone: which abandoned-looking turns to repair (SQLite: the owner process is
            gone); the dialect's SQL alone decides when None.
        clock: the store's clock (shared with any other face of the same store).
    """

    def __init__(
        self,
        db: Executor,
        dialect: Dialect,
        *,
        instance_id: str | None = None,
        is_gone: Callable[[ProcessOwner], bool] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.db = db
        self.dialect = dialect
        self.instance_id = instance_id
        self.is_gone = is_gone
        self.clock = clock or Clock()
        d = dialect
        self._message_columns = (
            f"id, session_id, role, {', '.join(d.content_columns.split(', ')[: d.content_width])}, tool_calls, "
            "tool_call_id, tool_name, reasoning, finish_reason, timestamp, token_count"
        )
        self._message_data = (
            f"role, {d.content_columns}, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, "
            "timestamp, token_count"
        )
        self._turn_columns = f"{TURN_COLUMNS}, {d.turn_instance}"

    # -- rows ------------------------------------------------------------------------

    def _message(self, row: Row) -> MessageRecord:
        width = self.dialect.content_width
        mid, session_id, role = row[0], row[1], row[2]
        (tool_calls, tool_call_id, tool_name, reasoning, finish_reason, timestamp, token_count) = row[3 + width :]
        return MessageRecord(
            id=int(mid),
            session_id=session_id,
            role=role,
            content=self.dialect.decode_content(row[3 : 3 + width]),
            tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            reasoning=reasoning,
            finish_reason=finish_reason,
            timestamp=timestamp,
            token_count=token_count,
        )

    def _stored(
        self, message_id: int, session_id: str, message: NewMessage, stored: tuple[Any, ...],
        tool_calls: str | None, now: float, *, call: bool = True,
    ) -> MessageRecord:  # fmt: skip
        """The record of what was stored (decoded, so it never aliases the caller's lists)."""
        width = self.dialect.content_width
        return self._message(
            (message_id, session_id, message.role, *stored[:width], tool_calls,
             message.tool_call_id if call else None, message.tool_name if call else None,
             message.reasoning, message.finish_reason, now, message.token_count)
        )  # fmt: skip

    # -- sessions --------------------------------------------------------------------

    async def _fetch(self, session_id: str, *, lock: bool = False) -> SessionRecord | None:
        row = await self.db.fetch_one(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions WHERE id = ?" + (self.dialect.for_update if lock else ""),
            (session_id,),
        )
        return None if row is None else _session(row)

    async def _require(self, session_id: str, *, lock: bool = False) -> SessionRecord:
        record = await self._fetch(session_id, lock=lock)
        if record is None:
            raise SessionNotFound(session_id)
        return record

    async def _insert_new(self, record: SessionRecord, *, id_given: bool) -> SessionRecord:
        """Insert `record`; a generated id that collides is replaced by a fresh one."""
        for _ in range(8):
            inserted = await self.db.execute(
                f"INSERT INTO hermes.sessions ({SESSION_COLUMNS}) VALUES ({_SESSION_PLACEHOLDERS}) "
                "ON CONFLICT (id) DO NOTHING",
                tuple(getattr(record, name) for name in SESSION_FIELDS),
            )
            if inserted == 1:
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
        fresh_if_taken: bool = False,
    ) -> SessionRecord:
        given = bool(session_id) and not fresh_if_taken
        if parent_session_id is None:  # one statement (per id tried): no transaction to hold
            new = NewSession(session_id or new_session_id(), given, source, model, title, system_prompt)
            return await self._create(new)
        async with self.db.transaction():
            if parent_session_id is not None:
                await self._require(parent_session_id)
            now = self.clock()
            record = fresh_session(
                session_id or new_session_id(now),
                now,
                source=source,
                title=clean_title(title),
                model=model,
                parent_session_id=parent_session_id,
                system_prompt=system_prompt,
            )
            return await self._insert_new(record, id_given=given)

    async def _create(self, session: NewSession) -> SessionRecord:
        record = fresh_session(
            session.id,
            self.clock(),
            source=session.source,
            title=clean_title(session.title),
            model=session.model,
            parent_session_id=None,
            system_prompt=session.system_prompt,
        )
        return await self._insert_new(record, id_given=session.given)

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self._require(session_id)

    async def find_session(self, session_id: str) -> SessionRecord | None:
        return await self._fetch(session_id)

    async def latest_session(self, *, source: str | None = None) -> SessionRecord | None:
        sessions = await self.list_sessions(limit=1, source=source)
        return sessions[0] if sessions else None

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        """Newest activity first (index scan on updated_at, ties newest insert first)."""
        where, params = ("WHERE source = ?", [source]) if source is not None else ("", [])
        rows = await self.db.fetch_all(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions {where} "
            f"ORDER BY updated_at DESC, {self.dialect.session_order} DESC LIMIT ? OFFSET ?",
            (*params, max(limit, 0), max(offset, 0)),
        )
        return [_session(row) for row in rows]

    async def count_sessions(self, *, source: str | None = None) -> int:
        if source is None:
            row = await self.db.fetch_one("SELECT count(*) FROM hermes.sessions")
        else:
            row = await self.db.fetch_one("SELECT count(*) FROM hermes.sessions WHERE source = ?", (source,))
        return int(row[0]) if row else 0

    async def rename_session(self, session_id: str, title: str) -> SessionRecord:
        """Set the title (whitespace collapsed; blank clears it) and mark activity."""
        async with self.db.transaction():
            changed = await self.db.execute(
                "UPDATE hermes.sessions SET title = ?, updated_at = ? WHERE id = ?",
                (clean_title(title), self.clock(), session_id),
            )
            if changed == 0:
                raise SessionNotFound(session_id)
            return await self._require(session_id)

    async def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord:
        """Change the given fields; None leaves a field as it is."""
        async with self.db.transaction():
            changed = await self.db.execute(
                "UPDATE hermes.sessions SET model = coalesce(?, model), "
                "system_prompt = coalesce(?, system_prompt) WHERE id = ?",
                (model, system_prompt, session_id),
            )
            if changed == 0:
                raise SessionNotFound(session_id)
            return await self._require(session_id)

    async def end_session(self, session_id: str, reason: str) -> None:
        """Record the end; the first reason wins (later calls leave it unchanged).

        `fork_session` is the exception: branching always marks the parent "branched".
        """
        async with self.db.transaction():
            now = self.clock()
            changed = await self.db.execute(
                "UPDATE hermes.sessions SET ended_at = ?, end_reason = ?, updated_at = ? "
                "WHERE id = ? AND end_reason IS NULL",
                (now, reason, now, session_id),
            )
            if changed == 0:
                await self._require(session_id)

    async def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        model: str | None = None,
    ) -> None:
        """See `AsyncSessionStore.add_usage`."""
        async with self.db.transaction():
            changed = await self.db.execute(
                "UPDATE hermes.sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ? "
                "WHERE id = ?",
                (input_tokens, output_tokens, session_id),
            )
            if changed == 0:
                raise SessionNotFound(session_id)
            tokens = (input_tokens, cached_input_tokens, output_tokens)
            await usage_rows.insert_usage(self.db, session_id, model=model, now=self.clock(), tokens=tokens)

    async def delete_session(self, session_id: str) -> None:
        """Delete the session, its messages and their search rows; children are kept
        with parent_session_id cleared."""
        async with self.db.transaction():
            await self._require(session_id, lock=True)
            await self.db.execute(
                "UPDATE hermes.sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (session_id,)
            )
            await self.db.execute("DELETE FROM hermes.messages WHERE session_id = ?", (session_id,))
            await self.db.execute("DELETE FROM hermes.sessions WHERE id = ?", (session_id,))

    # -- messages --------------------------------------------------------------------

    async def append_message(
        self, session_id: str, message: NewMessage, *, turn_id: int | None = None
    ) -> MessageRecord:
        stored = self.dialect.encode_content(message.role, message.content)
        tool_calls = None if message.tool_calls is None else encode_json(message.tool_calls)
        fused = self.dialect.fused
        if turn_id is None or message.role != "assistant":
            return await self._insert_message(session_id, message, stored, tool_calls)
        if fused is not None:
            # Replaces the turn's open draft, else appends; no row back means the ids
            # are wrong (the rules below say how).
            now = self.clock()
            row = await self.db.fetch_one(
                fused.append_to_turn,
                {"turn": turn_id, "sid": session_id, "calls": len(message.tool_calls or ()), "now": now,
                 **self._input_columns([message], [stored], [tool_calls], scalar=True)},
            )  # fmt: skip
            if row is not None:
                replaced = bool(row[1])
                return self._stored(int(row[0]), session_id, message, stored, tool_calls, now, call=not replaced)
        async with self.db.transaction():
            draft = await self._open_draft(turn_id, session_id)
            if draft is None:
                return await self._insert_message(session_id, message, stored, tool_calls)
            now = self.clock()
            await self.db.execute(
                f"UPDATE hermes.messages SET {self._assign(self.dialect.content_columns)}, tool_calls = ?, "
                "reasoning = ?, finish_reason = ?, token_count = ?, timestamp = ?, draft = false WHERE id = ?",
                (*stored, tool_calls, message.reasoning, message.finish_reason, message.token_count, now, draft),
            )
            await self.db.execute(
                "UPDATE hermes.sessions SET tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?",
                (len(message.tool_calls or ()), now, session_id),
            )
            await self.db.execute("UPDATE hermes.turns SET draft_message_id = NULL WHERE id = ?", (turn_id,))
            return self._stored(draft, session_id, message, stored, tool_calls, now, call=False)

    @staticmethod
    def _assign(columns: str) -> str:
        return ", ".join(f"{name} = ?" for name in columns.split(", "))

    async def _insert_message(
        self, session_id: str, message: NewMessage, stored: tuple[Any, ...], tool_calls: str | None
    ) -> MessageRecord:
        """Insert and count one message (SessionNotFound when the session does not exist)."""
        calls = len(message.tool_calls or ())
        now = self.clock()
        values = (message.role, *stored, tool_calls, message.tool_call_id, message.tool_name, message.reasoning,
                  message.finish_reason, now, message.token_count)  # fmt: skip
        fused = self.dialect.fused
        if fused is not None:
            row = await self.db.fetch_one(fused.append, (calls, now, session_id, *values))
            if row is None:
                raise SessionNotFound(session_id)
            return self._stored(int(row[0]), session_id, message, stored, tool_calls, now)
        async with self.db.transaction():
            changed = await self.db.execute(
                "UPDATE hermes.sessions SET message_count = message_count + 1, "
                "tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?",
                (calls, now, session_id),
            )
            if changed == 0:
                raise SessionNotFound(session_id)
            placeholders = ", ".join("?" for _ in range(len(values) + 1))
            message_id = await self.db.insert(
                f"INSERT INTO hermes.messages (session_id, {self._message_data}) VALUES ({placeholders})",
                (session_id, *values),
            )
        assert message_id is not None
        return self._stored(message_id, session_id, message, stored, tool_calls, now)

    async def get_messages(self, session_id: str, *, limit: int | None = None, offset: int = 0) -> list[MessageRecord]:
        """Oldest first."""
        await self._require(session_id)
        rows = await self.db.fetch_all(
            f"SELECT {self._message_columns} FROM hermes.messages WHERE session_id = ? AND undone IS NULL "
            "ORDER BY id LIMIT ? OFFSET ?",
            (session_id, self.dialect.no_limit if limit is None else max(limit, 0), max(offset, 0)),
        )
        return [self._message(row) for row in rows]

    async def history(self, session_id: str) -> list[ChatMessage]:
        await self._require(session_id)
        rows = await self.db.fetch_all(
            f"SELECT {self._message_columns} FROM hermes.messages WHERE session_id = ? AND NOT draft "
            "AND undone IS NULL ORDER BY id",
            (session_id,),
        )
        return valid_transcript([self._message(row).to_openai() for row in rows])

    # -- turns and checkpoints -------------------------------------------------------

    async def _fetch_turn(self, turn_id: int, *, lock: bool = False) -> TurnRecord | None:
        row = await self.db.fetch_one(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE id = ?" + (self.dialect.for_update if lock else ""),
            (turn_id,),
        )
        return None if row is None else _turn(row)

    async def _require_turn(self, turn_id: int, *, lock: bool = False) -> TurnRecord:
        turn = await self._fetch_turn(turn_id, lock=lock)
        if turn is None:
            raise StoreError(f"{self.db.where}: no turn with id {turn_id}")
        return turn

    async def _open_draft(self, turn_id: int, session_id: str) -> int | None:
        """The open turn's draft id (the turn row locked), None when it has none or ended."""
        turn = await self._require_turn(turn_id, lock=True)
        if turn.session_id != session_id:
            raise StoreError(f"turn {turn_id} belongs to session {turn.session_id}, not {session_id}")
        return turn.draft_message_id if turn.ended_at is None else None

    def _owner_values(self, owner: ProcessOwner | None = None) -> tuple[Any, ...]:
        owner = owner or current_owner()
        return (owner.host, owner.pid, owner.started) + (() if self.instance_id is None else (self.instance_id,))

    def _owner_columns(self) -> str:
        return "owner_host, owner_pid, owner_started" + ("" if self.instance_id is None else ", owner_instance")

    async def begin_turn(self, session_id: str, *, owner: ProcessOwner | None = None) -> TurnRecord:
        """Open a turn owned by `owner` (default: this process) and this store's instance."""
        fused = self.dialect.fused
        if fused is not None:
            row = await self.db.fetch_one(fused.begin_turn, (self.clock(), *self._owner_values(owner), session_id))
            if row is None:
                raise SessionNotFound(session_id)
            return _turn(row)
        async with self.db.transaction():
            after = await self.db.fetch_one(  # no row: no session
                "SELECT (SELECT coalesce(max(m.id), 0) FROM hermes.messages AS m WHERE m.session_id = s.id) "
                "FROM hermes.sessions AS s WHERE s.id = ?",
                (session_id,),
            )
            if after is None:
                raise SessionNotFound(session_id)
            values = self._owner_values(owner)
            started_at = self.clock()
            turn_id = await self.db.insert(
                f"INSERT INTO hermes.turns (session_id, after_message_id, started_at, {self._owner_columns()}) "
                f"VALUES (?, ?, ?, {', '.join('?' for _ in values)})",
                (session_id, after[0], started_at, *values),
            )
            assert turn_id is not None
            host, pid, started, *instance = values
            return TurnRecord(
                id=turn_id, session_id=session_id, after_message_id=int(after[0]), draft_message_id=None,
                started_at=started_at, ended_at=None, end_reason=None,
                owner=ProcessOwner(host=host, pid=pid, started=started), owner_instance=(instance or [None])[0],
            )  # fmt: skip

    async def open_turn(self, session_id: str, first: NewMessage) -> tuple[TurnRecord, MessageRecord]:
        """`begin_turn` and `append_message(first, turn_id=…)` as one write (all or nothing)."""
        turn, records = await self.start_turn(session_id, [first])
        return turn, records[0]

    async def start_turn(
        self, session: str | NewSession, inputs: Sequence[NewMessage]
    ) -> tuple[TurnRecord, list[MessageRecord]]:
        """Open a turn with its input messages (and, for a `NewSession`, create the
        session first) as one write, all or nothing; the turn names the session."""
        if not inputs:
            raise ValueError("a turn starts with at least one input message")
        stored = [self.dialect.encode_content(m.role, m.content) for m in inputs]
        calls_json = [None if m.tool_calls is None else encode_json(m.tool_calls) for m in inputs]
        fused = self.dialect.fused
        if fused is None:
            async with self.db.transaction():
                match session:
                    case str():
                        session_id = session
                    case NewSession():
                        session_id = (await self._create(session)).id
                    case _:
                        assert_never(session)
                turn = await self.begin_turn(session_id)
                records = [await self.append_message(session_id, m, turn_id=turn.id) for m in inputs]
                return turn, records
        params: dict[str, Any] = {
            **self._input_columns(inputs, stored, calls_json),
            "count": len(inputs),
            "calls": sum(len(m.tool_calls or ()) for m in inputs),
            **dict(zip(("host", "pid", "started", "instance"), self._owner_values(), strict=False)),
        }
        match session:
            case str():
                params |= {"sid": session, "now": self.clock()}
                row = await self.db.fetch_one(fused.start_turn, params)
                if row is None:
                    raise SessionNotFound(session)
            case NewSession():
                created = self.clock()
                ids = [session.id] if session.given else [session.id, *(new_session_id(created) for _ in range(7))]
                params |= {"ids": ids, "source": session.source, "title": clean_title(session.title),
                           "model": session.model, "prompt": session.system_prompt, "created": created,
                           "now": self.clock()}  # fmt: skip
                row = await self.db.fetch_one(fused.create_with_turn, params)
                if row is None and not session.given:  # another writer took a candidate meanwhile
                    params["ids"] = [new_session_id(created) for _ in range(8)]
                    row = await self.db.fetch_one(fused.create_with_turn, params)
                if row is None:
                    if session.given:
                        raise StoreError(f"a session with id {session.id!r} already exists")
                    raise StoreError("could not generate a unique session id")
            case _:
                assert_never(session)
        turn = _turn(row[:-1])
        now = params["now"]
        return turn, [
            self._stored(int(mid), turn.session_id, m, values, calls, now)
            for mid, m, values, calls in zip(row[-1], inputs, stored, calls_json, strict=True)
        ]

    def _input_columns(
        self, inputs: Sequence[NewMessage], stored: Sequence[tuple[Any, ...]], calls_json: Sequence[str | None],
        *, scalar: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        """A dialect's named message parameters: one list per column (one value with `scalar`)."""
        columns: dict[str, list[Any]] = {
            "role": [m.role for m in inputs],
            "content": [values[0] for values in stored],
            "search": [values[1] for values in stored],
            "tool_calls": list(calls_json),
            "call_id": [m.tool_call_id for m in inputs],
            "tool_name": [m.tool_name for m in inputs],
            "reasoning": [m.reasoning for m in inputs],
            "finish": [m.finish_reason for m in inputs],
            "tokens": [m.token_count for m in inputs],
        }
        return {name: values[0] for name, values in columns.items()} if scalar else dict(columns)

    async def save_draft(self, turn_id: int, content: str) -> None:
        """Checkpoint the streaming assistant text of an open turn (no-op once it ended)."""
        stored = self.dialect.encode_content("assistant", content)
        fused = self.dialect.fused
        if fused is not None:
            params = {"turn": turn_id, "now": self.clock(), "content": stored[0], "search": stored[1]}
            row = await self.db.fetch_one(fused.save_draft, params)
            if row is None or int(row[0]) == 0:
                await self._require_turn(turn_id)  # no such turn: StoreError; else it has ended
            return
        async with self.db.transaction():
            turn = await self._require_turn(turn_id, lock=True)
            if turn.ended_at is not None:
                return
            if turn.draft_message_id is not None:
                await self.db.execute(
                    f"UPDATE hermes.messages SET {self._assign(self.dialect.content_columns)} WHERE id = ?",
                    (*stored, turn.draft_message_id),
                )
                return
            now = self.clock()
            await self.db.execute(
                "UPDATE hermes.sessions SET message_count = message_count + 1, updated_at = ? WHERE id = ?",
                (now, turn.session_id),
            )
            draft_id = await self.db.insert(
                f"INSERT INTO hermes.messages (session_id, role, {self.dialect.content_columns}, timestamp, draft) "
                f"VALUES (?, 'assistant', {', '.join('?' for _ in stored)}, ?, true)",
                (turn.session_id, *stored, now),
            )
            await self.db.execute("UPDATE hermes.turns SET draft_message_id = ? WHERE id = ?", (draft_id, turn_id))

    async def _close_turn(self, turn: TurnRecord, reason: str) -> bool:
        """Keep the draft as a message and end the turn; False when it had already ended."""
        changed = await self.db.execute(
            "UPDATE hermes.turns SET ended_at = ?, end_reason = ?, draft_message_id = NULL "
            "WHERE id = ? AND ended_at IS NULL",
            (self.clock(), reason, turn.id),
        )
        if changed == 0:
            return False
        if turn.draft_message_id is not None:
            await self.db.execute(
                "UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, ?) WHERE id = ?",
                (reason, turn.draft_message_id),
            )
        return True

    async def end_turn(self, turn_id: int, reason: str) -> None:
        """End an open turn; a draft still open is kept as a message (finish_reason `reason`)."""
        fused = self.dialect.fused
        if fused is not None:
            row = await self.db.fetch_one(fused.end_turn, {"turn": turn_id, "now": self.clock(), "reason": reason})
            if row is None or int(row[0]) == 0:
                raise StoreError(f"{self.db.where}: no turn with id {turn_id}")
            return
        async with self.db.transaction():
            await self._close_turn(await self._require_turn(turn_id), reason)

    async def finish_turn(
        self,
        turn_id: int,
        session_id: str,
        reason: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        model: str | None = None,
        answer: NewMessage | None = None,
        mark: str | None = None,
    ) -> MessageRecord | None:
        """See `AsyncSessionStore.finish_turn`: the answer, the turn's end, usage, the
        session's end and the conversation mark as one write; the answer's record."""
        if answer is not None and answer.role != "assistant":
            raise ValueError("a turn's answer is an assistant message")
        fused = self.dialect.fused
        if fused is not None:
            return await self._finish_fused(
                fused.finish_turn, turn_id, session_id, reason, answer, mark,
                tokens=(input_tokens, output_tokens, cached_input_tokens), model=model,
            )  # fmt: skip
        async with self.db.transaction():
            turn = await self._fetch_turn(turn_id, lock=True)
            if turn is None or turn.session_id != session_id:
                await self._require(session_id)  # SessionNotFound first, as on PostgreSQL
                raise StoreError(f"{self.db.where}: turn {turn_id} is not a turn of session {session_id}")
            draft = turn.draft_message_id if turn.ended_at is None else None
            now = self.clock()
            record, added, calls = None, 0, 0
            if answer is not None:  # as `append_message(..., turn_id=)`: in place of the draft, else appended
                record = await self._write_answer(session_id, answer, draft, now)
                added, calls, draft = int(draft is None), len(answer.tool_calls or ()), None
            if turn.ended_at is None:
                await self._close_turn(replace(turn, draft_message_id=draft), reason)
            # The session's counters, usage and end: one UPDATE of its row.
            await self.db.execute(
                "UPDATE hermes.sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?, "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "ended_at = CASE WHEN end_reason IS NULL THEN ? ELSE ended_at END, "
                "updated_at = CASE WHEN end_reason IS NULL OR ? THEN ? ELSE updated_at END, "
                "end_reason = coalesce(end_reason, ?) WHERE id = ?",
                (added, calls, input_tokens, output_tokens, now, answer is not None, now, reason, session_id),
            )
            tokens = (input_tokens, cached_input_tokens, output_tokens)
            await usage_rows.insert_usage(self.db, session_id, model=model, now=now, tokens=tokens)
            if mark is not None:
                await self.mark_conversation(session_id, mark)
            return record

    async def _write_answer(self, session_id: str, answer: NewMessage, draft: int | None, now: float) -> MessageRecord:
        """A turn's answer in place of its open `draft`, else appended (uncounted: the caller counts it)."""
        stored = self.dialect.encode_content(answer.role, answer.content)
        calls = None if answer.tool_calls is None else encode_json(answer.tool_calls)
        if draft is not None:
            await self.db.execute(
                f"UPDATE hermes.messages SET {self._assign(self.dialect.content_columns)}, tool_calls = ?, "
                "reasoning = ?, finish_reason = ?, token_count = ?, timestamp = ?, draft = false WHERE id = ?",
                (*stored, calls, answer.reasoning, answer.finish_reason, answer.token_count, now, draft),
            )
            return self._stored(draft, session_id, answer, stored, calls, now, call=False)
        values = (answer.role, *stored, calls, answer.tool_call_id, answer.tool_name, answer.reasoning,
                  answer.finish_reason, now, answer.token_count)  # fmt: skip
        message_id = await self.db.insert(
            f"INSERT INTO hermes.messages (session_id, {self._message_data}) "
            f"VALUES ({', '.join('?' for _ in range(len(values) + 1))})",
            (session_id, *values),
        )
        assert message_id is not None
        return self._stored(message_id, session_id, answer, stored, calls, now)

    async def _finish_fused(
        self, sql: str, turn_id: int, session_id: str, reason: str, answer: NewMessage | None, mark: str | None,
        *, tokens: tuple[int, int, int], model: str | None,
    ) -> MessageRecord | None:  # fmt: skip
        """`finish_turn` as the dialect's one statement (its parameters documented there)."""
        now = self.clock()
        message = answer or NewMessage(role="assistant", content=None)
        stored = self.dialect.encode_content(message.role, message.content)
        calls_json = None if message.tool_calls is None else encode_json(message.tool_calls)
        params = {"turn": turn_id, "sid": session_id, "now": now, "reason": reason,
                  "input": tokens[0], "output": tokens[1], "cached": tokens[2],
                  "model": model, "day": usage_rows.utc_day(now), "answer": answer is not None, "mark": mark,
                  "calls": len(message.tool_calls or ()),
                  **self._input_columns([message], [stored], [calls_json], scalar=True)}  # fmt: skip
        row = await self.db.fetch_one(sql, params)
        assert row is not None
        if int(row[1]) == 0:
            raise SessionNotFound(session_id)
        if int(row[0]) == 0:
            raise StoreError(f"{self.db.where}: turn {turn_id} is not a turn of session {session_id}")
        if answer is None:
            return None
        return self._stored(int(row[2]), session_id, answer, stored, calls_json, now, call=not row[3])

    async def get_turn(self, turn_id: int) -> TurnRecord | None:
        return await self._fetch_turn(turn_id)

    # -- file checkpoints and undo (rules in `turn_undo`) -----------------------------

    async def set_turn_checkpoint(self, turn_id: int, *, worktree: str, before: str, after: str) -> None:
        await turn_undo.set_turn_checkpoint(self.db, turn_id, worktree=worktree, before=before, after=after)

    async def turn_checkpoints(self, session_id: str) -> list[TurnCheckpoint]:
        return await turn_undo.turn_checkpoints(self.db, session_id)

    async def undo_turns(self, session_id: str, count: int) -> list[int]:
        async with self.db.transaction():
            await self._require(session_id, lock=True)
            return await turn_undo.undo_turns(self.db, session_id, count)

    async def redo_turns(self, session_id: str) -> list[int]:
        async with self.db.transaction():
            await self._require(session_id, lock=True)
            return await turn_undo.redo_turns(self.db, session_id)

    async def find_turn(self, session_id: str, *, started_at_or_after: float) -> TurnRecord | None:
        """The session's first turn that started at or after the given time."""
        row = await self.db.fetch_one(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE session_id = ? AND started_at >= ? "
            "ORDER BY started_at LIMIT 1",
            (session_id, started_at_or_after),
        )
        return None if row is None else _turn(row)

    async def open_turns(self) -> list[TurnRecord]:
        """Every turn not ended yet (running somewhere, or abandoned by a dead owner)."""
        rows = await self.db.fetch_all(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE ended_at IS NULL ORDER BY id"
        )
        return [_turn(row) for row in rows]

    async def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        """The turn's messages, oldest first (a draft included)."""
        turn = await self._require_turn(turn_id)
        rows = await self.db.fetch_all(
            f"SELECT {self._message_columns} FROM hermes.messages WHERE session_id = ? AND id > ? "
            "AND id <= (SELECT coalesce(min(after_message_id), ?) FROM hermes.turns "
            "WHERE session_id = ? AND id > ? AND after_message_id > ?) ORDER BY id",
            (turn.session_id, turn.after_message_id, NO_MESSAGE_ABOVE, turn.session_id, turn.id,
             turn.after_message_id),
        )  # fmt: skip
        return [self._message(row) for row in rows]

    async def repair_abandoned_turns(self, is_gone: Callable[[ProcessOwner], bool] | None = None) -> list[RepairedTurn]:
        """End every open turn whose owner is gone (see the module docstring).

        `is_gone` replaces the store's own test of a turn's owner process (tests)."""
        candidates_sql, recheck_sql = self.dialect.abandoned()
        candidates = [_turn(row) for row in await self.db.fetch_all(candidates_sql)]
        gone = is_gone or self.is_gone
        repaired: list[RepairedTurn] = []
        for candidate in candidates:
            if gone is not None and not gone(candidate.owner):
                continue
            async with self.db.transaction():
                row = await self.db.fetch_one(recheck_sql, (candidate.id,))
                if row is None:
                    continue  # ended, or its owner came back, meanwhile
                repaired.append(await self._repair_turn(_turn(row)))
        return repaired

    async def _repair_turn(self, turn: TurnRecord) -> RepairedTurn:
        """Inside a transaction holding the turn: see `AsyncSessionStore.repair_abandoned_turns`."""
        unanswered = await turn_repair.open_calls(self.db, turn)
        await self._close_turn(turn, INTERRUPTED)
        await turn_repair.answer_open_calls(self.db, self.dialect, turn, unanswered, self.clock())
        return RepairedTurn(
            turn_id=turn.id, session_id=turn.session_id, kept_text=turn.draft_message_id is not None,
            placeholders=len(unanswered),
        )  # fmt: skip

    # -- compaction markers ----------------------------------------------------------

    async def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        """Record a marker; SessionNotFound for an unknown session (rules in `compactions`)."""
        return await compactions.add_compaction(self.db, session_id, marker, self.clock())

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's markers, oldest first (empty for an unknown session)."""
        return await compactions.compactions(self.db, session_id)

    # -- forks (rules in `forks`) ------------------------------------------------------

    async def fork_session(
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
        async with self.db.transaction():
            parent = await self._require(session_id, lock=True)
            upto = NO_MESSAGE_ABOVE
            if at_message_id is not None:
                found = await self.db.fetch_one(
                    "SELECT 1 FROM hermes.messages WHERE id = ? AND session_id = ?", (at_message_id, session_id)
                )
                if found is None:
                    raise MessageNotFound(at_message_id, session_id)
                upto = at_message_id
            child_title = clean_title(title) or await forks.lineage_title(self.db, self.dialect, parent)
            parent_now = self.clock()
            await self.db.execute(
                "UPDATE hermes.sessions SET end_reason = 'branched', ended_at = ?, updated_at = ? WHERE id = ?",
                (parent_now, parent_now, session_id),
            )
            now = self.clock()
            child = await self._insert_new(
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
            await forks.copy_transcript(
                self.db, self.dialect, self._message_data, child_id=child.id, parent_id=session_id, upto=upto
            )
            return await self._require(child.id)

    async def mark_conversation(self, session_id: str, fingerprint: str) -> ConversationMark:
        """See `AsyncSessionStore.mark_conversation` (rules in `conversation_marks`)."""
        return await conversation_marks.mark_conversation(self.db, session_id, fingerprint, self.clock)

    async def find_conversation(self, fingerprints: Sequence[str]) -> ConversationMark | None:
        return await conversation_marks.find_conversation(self.db, fingerprints)

    async def claim_conversation(self, session_id: str, fingerprint: str) -> bool:
        return await conversation_marks.claim_conversation(self.db, session_id, fingerprint)

    # -- search, stats, transactions -------------------------------------------------

    async def search(self, query: str, *, limit: int = 20, source: str | None = None) -> list[SearchHit]:
        """Full-text search over message content, best match first (drafts left out)."""
        return await self.dialect.search(self.db, query, limit=limit, source=source)

    async def stats(self) -> StoreStats:
        rows = await self.db.fetch_all(
            "SELECT source, count(*), coalesce(sum(message_count), 0), coalesce(sum(tool_call_count), 0), "
            "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) FROM hermes.sessions "
            "GROUP BY source ORDER BY source"
        )
        db_bytes = await self.dialect.db_bytes(self.db)
        return StoreStats(
            sessions=sum(int(row[1]) for row in rows),
            messages=sum(int(row[2]) for row in rows),
            tool_calls=sum(int(row[3]) for row in rows),
            input_tokens=sum(int(row[4]) for row in rows),
            output_tokens=sum(int(row[5]) for row in rows),
            by_source={row[0]: int(row[1]) for row in rows},
            db_bytes=db_bytes,
        )

    async def session_usage(self, session_ids: Sequence[str]) -> list[UsageTotal]:
        """See `AsyncSessionStore.session_usage`."""
        return await usage_rows.session_usage(self.db, session_ids)

    async def usage_totals(self) -> list[UsageTotal]:
        """See `AsyncSessionStore.usage_totals`."""
        return await usage_rows.usage_totals(self.db)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """See `AsyncSessionStore.transaction`."""
        async with self.db.block():
            yield
