"""The turn lifecycle rules: `TurnRules`, written once over an `Executor` and a `Dialect`.

A turn opens with its input (`start_turn`, and a new session with it), saves its
streaming text as a draft (`save_draft`), and ends with its answer, usage, the session's
end and the conversation mark in one write (`finish_turn`), or plainly (`end_turn`);
`repair_abandoned_turns` ends the turns a dead owner left open (what it writes:
`turn_repair`). Where the dialect has one-statement forms (`FusedWrites`, PostgreSQL),
each write is that one statement; else one transaction of neutral SQL.

The invariants (draft, counters, repair) are those of `hermes.store.rules.sessions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, assert_never

from hermes.errors import SessionNotFound, StoreError
from hermes.ids import new_session_ids
from hermes.store.owner import ProcessOwner, current_owner
from hermes.store.records import INTERRUPTED, MessageRecord, NewMessage, NewSession, RepairedTurn, TurnRecord
from hermes.store.rules import conversation_marks, turn_repair, usage
from hermes.store.rules.rows import NO_MESSAGE_ABOVE, SessionRows, turn_row
from hermes.store.rules.session_record import clean_title
from hermes.store.sql import encode_json

__all__ = ["TurnRules"]


class TurnRules(SessionRows):
    """The turn lifecycle of `Sessions` (see the module docstring)."""

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
            return turn_row(row)
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
                ids = [session.id] if session.given else [session.id, *new_session_ids(7, created)]
                params |= {"ids": ids, "source": session.source, "title": clean_title(session.title),
                           "model": session.model, "prompt": session.system_prompt, "cwd": session.cwd,
                           "created": created, "parent": session.parent_session_id,
                           "parent_call": session.parent_call_id, "now": self.clock()}  # fmt: skip
                row = await self.db.fetch_one(fused.create_with_turn, params)
                if row is None and not session.given:  # another writer took a candidate meanwhile
                    params["ids"] = new_session_ids(8, created)
                    row = await self.db.fetch_one(fused.create_with_turn, params)
                if row is None:
                    if session.given:
                        raise StoreError(f"a session with id {session.id!r} already exists")
                    raise StoreError("could not generate a unique session id")
            case _:
                assert_never(session)
        turn = turn_row(row[:-1])
        now = params["now"]
        return turn, [
            self._stored(int(mid), turn.session_id, m, values, calls, now)
            for mid, m, values, calls in zip(row[-1], inputs, stored, calls_json, strict=True)
        ]

    async def save_draft(self, turn_id: int, content: str) -> None:
        """Save the streaming assistant text of an open turn as its draft (no-op once it ended)."""
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
            await usage.insert_usage(self.db, session_id, model=model, now=now, tokens=tokens)
            if mark is not None:
                await conversation_marks.mark_conversation(self.db, session_id, mark, self.clock)
            return record

    async def _write_answer(self, session_id: str, answer: NewMessage, draft: int | None, now: float) -> MessageRecord:
        """A turn's answer in place of its open `draft`, else appended (uncounted: the caller counts it)."""
        stored = self.dialect.encode_content(answer.role, answer.content)
        calls = None if answer.tool_calls is None else encode_json(answer.tool_calls)
        if draft is not None:
            return await self._replace_draft(draft, session_id, answer, stored, calls, now)
        return await self._insert_row(session_id, answer, stored, calls, now)

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
                  "model": model, "day": usage.utc_day(now), "answer": answer is not None, "mark": mark,
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

    async def find_turn(self, session_id: str, *, started_at_or_after: float) -> TurnRecord | None:
        """The session's first turn that started at or after the given time."""
        row = await self.db.fetch_one(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE session_id = ? AND started_at >= ? "
            "ORDER BY started_at LIMIT 1",
            (session_id, started_at_or_after),
        )
        return None if row is None else turn_row(row)

    async def open_turns(self) -> list[TurnRecord]:
        """Every turn not ended yet (running somewhere, or abandoned by a dead owner)."""
        rows = await self.db.fetch_all(
            f"SELECT {self._turn_columns} FROM hermes.turns WHERE ended_at IS NULL ORDER BY id"
        )
        return [turn_row(row) for row in rows]

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
        candidates = [turn_row(row) for row in await self.db.fetch_all(candidates_sql)]
        gone = is_gone or self.is_gone
        repaired: list[RepairedTurn] = []
        for candidate in candidates:
            if gone is not None and not gone(candidate.owner):
                continue
            async with self.db.transaction():
                row = await self.db.fetch_one(recheck_sql, (candidate.id,))
                if row is None:
                    continue  # ended, or its owner came back, meanwhile
                repaired.append(await self._repair_turn(turn_row(row)))
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
