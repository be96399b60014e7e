"""The session rules, written once over an `Executor` and a `Dialect` (both backends).

`Sessions` implements `AsyncSessionStore`: create, fork and title lineage, counters,
turns and drafts, crash repair of abandoned turns, compaction markers, messages, list,
get, rename, delete and end. It is built in layers, one module each: the row layer
(`rows.SessionRows`: codecs, finding and inserting rows, appending messages),
the turn lifecycle on it (`turns.TurnRules`) and the session rules here; rules of
their own tables sit in modules beside them (`forks`, `compactions`, `conversation_marks`,
`turn_undo`, `turn_repair`, `usage`). A backend supplies only

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
  transaction (`rules.usage`), so cost can be priced per model and day.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from hermes.errors import MessageNotFound, SessionNotFound
from hermes.ids import new_session_id
from hermes.messages import ChatMessage
from hermes.store.records import (
    CompactionRecord,
    ConversationMark,
    HistoryMark,
    MessageRecord,
    NewCompaction,
    NewSession,
    SearchHit,
    SessionRecord,
    StoreStats,
    TurnCheckpoint,
    UsageTotal,
)
from hermes.store.rules import compactions, conversation_marks, forks, turn_undo, usage
from hermes.store.rules.rows import NO_MESSAGE_ABOVE, session_row
from hermes.store.rules.session_record import SESSION_COLUMNS, clean_title, fresh_session
from hermes.store.rules.turns import TurnRules
from hermes.store.transcript import valid_transcript

__all__ = ["Sessions"]

_HISTORY_MARK = (
    "WITH c AS (SELECT id, first_kept_message_id AS first FROM hermes.compactions WHERE session_id = ? "
    "ORDER BY id DESC LIMIT 1) "
    "SELECT (SELECT id FROM c), coalesce((SELECT first FROM c), 0), count(*), coalesce(max(m.id), 0), "
    "coalesce(sum(m.id), 0) FROM hermes.messages AS m WHERE m.session_id = ? "
    "AND m.id >= coalesce((SELECT first FROM c), 0) AND NOT m.draft AND m.undone IS NULL"
)
"""`history_mark`: (latest compaction id, its first kept message id or 0, count, max id, sum of ids)."""

def _session_filter(source: str | None, cwd: str | None) -> tuple[str, list[str]]:
    """The WHERE clause (or "") and its parameters of a session list narrowed by source and folder."""
    clauses: list[str] = []
    params: list[str] = []
    if source is not None:
        clauses.append("source = ?")
        params.append(source)
    if cwd is not None:
        clauses.append("cwd = ?")
        params.append(cwd)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


class Sessions(TurnRules):
    """`AsyncSessionStore` over an executor and a dialect (arguments: `SessionRows`)."""

    # -- sessions --------------------------------------------------------------------

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
        cwd: str | None = None,
    ) -> SessionRecord:
        given = bool(session_id) and not fresh_if_taken
        if parent_session_id is None:  # one statement (per id tried): no transaction to hold
            new = NewSession(session_id or new_session_id(), given, source, model, title, system_prompt, cwd)
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
                cwd=cwd,
            )
            return await self._insert_new(record, id_given=given)

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self._require(session_id)

    async def find_session(self, session_id: str) -> SessionRecord | None:
        return await self._fetch(session_id)

    async def latest_session(self, *, source: str | None = None, cwd: str | None = None) -> SessionRecord | None:
        sessions = await self.list_sessions(limit=1, source=source, cwd=cwd)
        return sessions[0] if sessions else None

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, cwd: str | None = None
    ) -> list[SessionRecord]:
        """Newest activity first (index scan on updated_at, ties newest insert first);
        `source` and `cwd` (the session's folder, compared exactly) narrow the list."""
        where, params = _session_filter(source, cwd)
        rows = await self.db.fetch_all(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions {where} "
            f"ORDER BY updated_at DESC, {self.dialect.session_order} DESC LIMIT ? OFFSET ?",
            (*params, max(limit, 0), max(offset, 0)),
        )
        return [session_row(row) for row in rows]

    async def count_sessions(self, *, source: str | None = None, cwd: str | None = None) -> int:
        where, params = _session_filter(source, cwd)
        row = await self.db.fetch_one(f"SELECT count(*) FROM hermes.sessions {where}", tuple(params))
        return int(row[0]) if row else 0

    async def sessions_with_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        """The sessions whose id starts with `prefix` (compared exactly, case and all),
        newest activity first; at most `limit`. An empty prefix matches none."""
        if not prefix:
            return []
        # Compared character for character (no LIKE: `%` and `_` are plain text; no range:
        # a database collation may order punctuation its own way).
        rows = await self.db.fetch_all(
            f"SELECT {SESSION_COLUMNS} FROM hermes.sessions WHERE substr(id, 1, ?) = ? "
            f"ORDER BY updated_at DESC, {self.dialect.session_order} DESC LIMIT ?",
            (len(prefix), prefix, max(limit, 0)),
        )
        return [session_row(row) for row in rows]

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
            await usage.insert_usage(self.db, session_id, model=model, now=self.clock(), tokens=tokens)

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

    async def history_mark(self, session_id: str) -> HistoryMark:
        """The numbers that identify the session's model-ready history (see `HistoryMark`);
        one statement, bounded by the latest compaction (an unknown session: count 0)."""
        row = await self.db.fetch_one(_HISTORY_MARK, (session_id, session_id))
        assert row is not None  # an aggregate always gives one row
        compaction, first, count, last, id_sum = row
        return HistoryMark(None if compaction is None else int(compaction), int(first), int(count), int(last),
                           int(id_sum))  # fmt: skip

    async def history_since(
        self, session_id: str, first_message_id: int, *, large: bool = False
    ) -> list[MessageRecord]:
        """The visible, finished messages with id >= `first_message_id`, oldest first (what
        `history()` holds from there on, before `valid_transcript`). `large` is a hint a
        backend may use to read off the event loop (`SqliteSessions`); the rows are the same."""
        rows = await self.db.fetch_all(
            f"SELECT {self._message_columns} FROM hermes.messages WHERE session_id = ? AND id >= ? AND NOT draft "
            "AND undone IS NULL ORDER BY id",
            (session_id, first_message_id),
        )
        return [self._message(row) for row in rows]

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

    # -- compaction markers ----------------------------------------------------------

    async def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        """Record a marker; SessionNotFound for an unknown session (rules in `compactions`)."""
        return await compactions.add_compaction(self.db, session_id, marker, self.clock())

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's markers, oldest first (empty for an unknown session)."""
        return await compactions.compactions(self.db, session_id)

    async def latest_compaction(self, session_id: str) -> CompactionRecord | None:
        """The session's newest marker (None: never compacted, or an unknown session)."""
        return await compactions.latest_compaction(self.db, session_id)

    # -- forks (rules in `forks`) ------------------------------------------------------

    async def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
        with_marks: bool = False,
    ) -> SessionRecord:
        """Copy the messages (all, or up to and including at_message_id) into a new session.

        The child inherits source (unless given), model and system prompt; its title is
        the given one, else the next free "<base> #N" where base is the parent title
        without its " #N" suffix ("Session <short id>" for an untitled parent). The
        parent is ended with reason "branched". Copied messages keep their timestamps;
        the child's token counters start at zero. Compaction markers whose first kept
        message lies in the copied range come along, pointing at the copies; with
        `with_marks`, so do the conversation marks (`conversation_marks.copy_marks`). One
        transaction.
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
                    cwd=parent.cwd,
                ),
                id_given=False,
            )
            await forks.copy_transcript(
                self.db, self.dialect, self._message_data, child_id=child.id, parent_id=session_id, upto=upto
            )
            if with_marks:
                await conversation_marks.copy_marks(self.db, child_id=child.id, parent_id=session_id, upto=upto)
            return await self._require(child.id)

    async def mark_conversation(self, session_id: str, fingerprint: str) -> ConversationMark:
        """See `AsyncSessionStore.mark_conversation` (rules in `conversation_marks`)."""
        return await conversation_marks.mark_conversation(self.db, session_id, fingerprint, self.clock)

    async def find_conversation(
        self, fingerprints: Sequence[str], *, session_id: str | None = None
    ) -> ConversationMark | None:
        return await conversation_marks.find_conversation(self.db, fingerprints, session_id)

    async def point_chat_key(self, key: str, session_id: str) -> None:
        """See `AsyncSessionStore.point_chat_key` (rules in `conversation_marks`)."""
        await conversation_marks.mark_conversation(
            self.db, session_id, conversation_marks.KEY_PREFIX + key, self.clock
        )

    async def find_chat_key(self, key: str) -> str | None:
        return await conversation_marks.find_chat_key(self.db, key)

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
        return await usage.session_usage(self.db, session_ids)

    async def usage_totals(self) -> list[UsageTotal]:
        """See `AsyncSessionStore.usage_totals`."""
        return await usage.usage_totals(self.db)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """See `AsyncSessionStore.transaction`."""
        async with self.db.block():
            yield
