"""The row layer under the session rules: `SessionRows` reads and writes single rows.

`SessionRows` holds what every rule builds on, over one `Executor` and `Dialect`: the
row codecs (a message row to its record, a written message to the record of what was
stored), finding a session or turn by id, inserting a session (a generated id that
collides replaced, up to 8 tries), and appending a message (counted on its session in
the same transaction; an assistant message of an open turn replaces its draft). The
turn lifecycle (`hermes.store.rules.turns`) and the session rules (`hermes.store.rules.sessions`)
are built on it; the invariants they keep are in `hermes.store.rules.sessions`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from hermes.errors import SessionNotFound, StoreError
from hermes.ids import new_session_id
from hermes.store.owner import ProcessOwner
from hermes.store.records import MessageRecord, NewMessage, NewSession, SessionRecord, TurnRecord
from hermes.store.rules.session_record import SESSION_COLUMNS, SESSION_FIELDS, Clock, clean_title, fresh_session
from hermes.store.sql import TURN_COLUMNS, Dialect, Executor, Row, encode_json

__all__ = ["NO_MESSAGE_ABOVE", "SessionRows", "session_row", "turn_row"]

NO_MESSAGE_ABOVE = 2**63 - 1
"""The largest message id: "up to the end" for ranges of message ids."""

_SESSION_PLACEHOLDERS = ", ".join("?" for _ in SESSION_FIELDS)


def session_row(row: Row) -> SessionRecord:
    return SessionRecord(*row)


def turn_row(row: Row) -> TurnRecord:
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


class SessionRows:
    """The row layer of `Sessions` (see the module docstring).

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

    async def _fetch(self, session_id: str, *, lock: bool = False) -> SessionRecord | None:
        row = await self.db.fetch_one(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions WHERE id = ?" + (self.dialect.for_update if lock else ""),
            (session_id,),
        )
        return None if row is None else session_row(row)

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

    async def _create(self, session: NewSession) -> SessionRecord:
        record = fresh_session(
            session.id,
            self.clock(),
            source=session.source,
            title=clean_title(session.title),
            model=session.model,
            parent_session_id=session.parent_session_id,
            system_prompt=session.system_prompt,
            cwd=session.cwd,
            parent_call_id=session.parent_call_id,
        )
        return await self._insert_new(record, id_given=session.given)

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
            record = await self._replace_draft(draft, session_id, message, stored, tool_calls, now)
            await self.db.execute(
                "UPDATE hermes.sessions SET tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?",
                (len(message.tool_calls or ()), now, session_id),
            )
            await self.db.execute("UPDATE hermes.turns SET draft_message_id = NULL WHERE id = ?", (turn_id,))
            return record

    async def _replace_draft(
        self, draft: int, session_id: str, message: NewMessage, stored: tuple[Any, ...], tool_calls: str | None,
        now: float,
    ) -> MessageRecord:  # fmt: skip
        """Turn the draft row into `message`, in place (already counted; the caller updates
        the turn and the session)."""
        await self.db.execute(
            f"UPDATE hermes.messages SET {self._assign(self.dialect.content_columns)}, tool_calls = ?, "
            "reasoning = ?, finish_reason = ?, token_count = ?, timestamp = ?, draft = false WHERE id = ?",
            (*stored, tool_calls, message.reasoning, message.finish_reason, message.token_count, now, draft),
        )
        return self._stored(draft, session_id, message, stored, tool_calls, now, call=False)

    async def _insert_row(
        self, session_id: str, message: NewMessage, stored: tuple[Any, ...], tool_calls: str | None, now: float
    ) -> MessageRecord:
        """Insert the message row alone (uncounted: the caller counts it on its session)."""
        values = (message.role, *stored, tool_calls, message.tool_call_id, message.tool_name, message.reasoning,
                  message.finish_reason, now, message.token_count)  # fmt: skip
        message_id = await self.db.insert(
            f"INSERT INTO hermes.messages (session_id, {self._message_data}) "
            f"VALUES ({', '.join('?' for _ in range(len(values) + 1))})",
            (session_id, *values),
        )
        assert message_id is not None
        return self._stored(message_id, session_id, message, stored, tool_calls, now)

    @staticmethod
    def _assign(columns: str) -> str:
        return ", ".join(f"{name} = ?" for name in columns.split(", "))

    async def _insert_message(
        self, session_id: str, message: NewMessage, stored: tuple[Any, ...], tool_calls: str | None
    ) -> MessageRecord:
        """Insert and count one message (SessionNotFound when the session does not exist)."""
        calls = len(message.tool_calls or ())
        now = self.clock()
        fused = self.dialect.fused
        if fused is not None:
            values = (message.role, *stored, tool_calls, message.tool_call_id, message.tool_name,
                      message.reasoning, message.finish_reason, now, message.token_count)  # fmt: skip
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
            return await self._insert_row(session_id, message, stored, tool_calls, now)

    async def _fetch_turn(self, turn_id: int, *, lock: bool = False) -> TurnRecord | None:
        row = await self.db.fetch_one(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE id = ?" + (self.dialect.for_update if lock else ""),
            (turn_id,),
        )
        return None if row is None else turn_row(row)

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
