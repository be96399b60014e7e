"""state.db: `SqliteSessions` (the session rules over SQLite) and `SqliteSessionStore`,
its synchronous face.

Invariants:

- The file is opened by `file.open_sqlite_file` (created 0600, folder 0700, WAL,
  `synchronous=NORMAL`, foreign keys, busy timeout, migrations from `schema`).
- The rules are `hermes.store.sessions.Sessions`, over `SqliteExecutor` (plain sqlite3
  calls in the caller's thread, one connection, one re-entrant lock) and
  `SqliteDialect`. Every write is one `BEGIN IMMEDIATE … COMMIT` transaction (or a
  savepoint of the caller's `transaction()` block, committed with it): when it returns
  the write is in the WAL and survives a crash of the process; only a power loss can
  drop the newest commits (FULL would fsync every message, ~4 ms per write).
- `SqliteSessionStore` runs the same rules to their end in the calling thread
  (`run_now`): the executor never suspends. Its `SqliteSessions` face and it share the
  connection, the lock and the clock.
- A `large` `history_since` through `SqliteSessions` (the first read of a long
  session's history in a process) runs in a worker thread on a read-only connection of
  its own (`history_reader`), never on the shared one, whose lock it would hold.
- `checkpoint_in_background()` (the async storage of a long-lived process) moves WAL
  checkpoints from the committing connection to a thread (`checkpointer`); `close()`
  stops it first. `index_in_background()` likewise indexes new messages for search in
  batches (`fts_batches`); without it, a search indexes what waits first.
- Turns belong to processes: `repair_abandoned_turns` ends only turns whose owner
  process is gone (`owner.owner_gone`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Self

from hermes.errors import StoreError
from hermes.messages import ChatMessage
from hermes.store.owner import ProcessOwner, owner_gone
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
    UsageTotal,
)
from hermes.store.session_rules import Clock
from hermes.store.sessions import Sessions
from hermes.store.sqlite import folded_files, fts_batches
from hermes.store.sqlite.dialect import SqliteDialect
from hermes.store.sqlite.executor import SqliteExecutor, run_now
from hermes.store.sqlite.file import MEMORY, describe_sqlite_error, open_sqlite_file
from hermes.store.sqlite.history_reader import HistoryReader
from hermes.store.sqlite.schema import STATE_MIGRATIONS

if TYPE_CHECKING:
    from hermes.store.sqlite.checkpointer import WalCheckpointer
    from hermes.store.sqlite.fts_indexer import FtsIndexer

__all__ = ["STATE_DB", "SqliteSessionStore", "SqliteSessions"]

STATE_DB = "state.db"
"""The session database's file name in `$HERMES_HOME`."""


class SqliteSessions(Sessions):
    """`AsyncSessionStore` on state.db: the rules over `store`'s connection."""

    def __init__(self, store: SqliteSessionStore) -> None:
        super().__init__(store.executor, store.dialect, is_gone=owner_gone, clock=store.clock)
        self.sync = store
        """The synchronous face of the same store."""

    async def history_since(
        self, session_id: str, first_message_id: int, *, large: bool = False
    ) -> list[MessageRecord]:
        """`Sessions.history_since`; a `large` read of a database file runs in a worker
        thread on a connection of its own (`history_reader`), so the event loop goes on
        serving other requests meanwhile (`:memory:` has no second connection: read here)."""
        reader = self.sync.history_reader if large else None
        if reader is None:
            return await super().history_since(session_id, first_message_id)
        import asyncio  # here: the synchronous face (`sessions list`) never loads asyncio

        return await asyncio.to_thread(reader.history_since, session_id, first_message_id)


class SqliteSessionStore:
    """Sessions and messages in one SQLite file (or `:memory:`), searchable with FTS5,
    called synchronously (tests, benchmarks, `hermes doctor`, start-up repair).

    Args:
        path: the database file (created 0600, with its folder 0700, when missing), or
            ":memory:" for a private in-memory database.

    Raises:
        StoreError: the file cannot be created, is not a database, or is damaged.
    """

    def __init__(self, path: str | os.PathLike[str] = MEMORY) -> None:
        opened = open_sqlite_file(path, STATE_MIGRATIONS, what="session database", check_same_thread=False)
        self._path = opened.path
        if opened.path is not None:
            folded_files.set_aside(opened.path.parent)  # their rows are in state.db now (m012)
        self.applied_migrations: list[str] = opened.applied_migrations
        """Migrations this open applied (empty when the schema was already current)."""
        self.executor = SqliteExecutor(opened.connection, f"session database {opened.label}")
        self.dialect = SqliteDialect(opened.path)
        self.clock = Clock()
        self.rules = Sessions(self.executor, self.dialect, is_gone=owner_gone, clock=self.clock)
        self._checkpointer: WalCheckpointer | None = None
        """Background WAL checkpoints, once `checkpoint_in_background` started them."""
        self._indexer: FtsIndexer | None = None
        """Background search indexing, once `index_in_background` started it."""
        self.history_reader = (
            None if self._path is None
            else HistoryReader(self._path, self.dialect, self.clock, f"session database {opened.label} (reader)")
        )  # fmt: skip
        """Large history reads off the caller's thread (None for `:memory:`); its
        connection opens at its first read."""

    def checkpoint_in_background(self, *, interval: float = 1.0, truncate_at: int | None = None) -> None:
        """Checkpoint the WAL in a thread of its own from now on, not inside commits
        (`checkpointer`: for a long-lived process; a no-op for `:memory:`); the WAL is cut
        to zero bytes once past `truncate_at` bytes (default 64 MiB)."""
        if self._path is None or self._checkpointer is not None:
            return
        from hermes.store.sqlite.checkpointer import (  # a server's, never a CLI command's
            DEFAULT_TRUNCATE_AT,
            WalCheckpointer,
        )

        self._checkpointer = WalCheckpointer(
            self._path, self.executor.connection(), interval=interval,
            truncate_at=DEFAULT_TRUNCATE_AT if truncate_at is None else truncate_at,
        )  # fmt: skip
        with self.executor.lock:
            self._checkpointer.start()

    def index_in_background(self, *, interval: float = 1.0) -> None:
        """Index new messages for search in batches in a thread of its own (`fts_batches`:
        for a long-lived process; a no-op for `:memory:`, where a search indexes first)."""
        if self._path is None or self._indexer is not None:
            return
        from hermes.store.sqlite.fts_indexer import FtsIndexer  # a server's, never a CLI command's

        self._indexer = FtsIndexer(self._path, interval=interval)
        self._indexer.start()

    def index_pending(self) -> None:
        """Index the messages that wait for the search index now (`fts_batches`)."""
        run_now(fts_batches.flush(self.executor))

    @property
    def path(self) -> Path | None:
        """The database file, or None for `:memory:`."""
        return self._path

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Make the writes inside the block one transaction, committed when the block exits.

        The block holds the store's lock, so it must not await. A write that fails inside
        the block is undone alone (a savepoint); an exception leaving it undoes all of it.
        """
        with self.executor.write():
            yield

    def close(self) -> None:
        """Close the connection (the background checkpoints stopped first); later calls
        raise StoreError. Closing twice is fine."""
        if self.history_reader is not None:
            self.history_reader.close()
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        if self._checkpointer is not None:
            with self.executor.lock:
                self._checkpointer.stop()
            self._checkpointer = None
        self.executor.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the rules, called synchronously ---------------------------------------------

    def create_session(
        self,
        *,
        source: str,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        cwd: str | None = None,
    ) -> SessionRecord:
        return run_now(
            self.rules.create_session(
                source=source, model=model, title=title, system_prompt=system_prompt,
                session_id=session_id, parent_session_id=parent_session_id, cwd=cwd,
            )
        )  # fmt: skip

    def get_session(self, session_id: str) -> SessionRecord:
        return run_now(self.rules.get_session(session_id))

    def find_session(self, session_id: str) -> SessionRecord | None:
        return run_now(self.rules.find_session(session_id))

    def latest_session(self, *, source: str | None = None, cwd: str | None = None) -> SessionRecord | None:
        return run_now(self.rules.latest_session(source=source, cwd=cwd))

    def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, cwd: str | None = None
    ) -> list[SessionRecord]:
        return run_now(self.rules.list_sessions(limit=limit, offset=offset, source=source, cwd=cwd))

    def count_sessions(self, *, source: str | None = None, cwd: str | None = None) -> int:
        return run_now(self.rules.count_sessions(source=source, cwd=cwd))

    def sessions_with_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        return run_now(self.rules.sessions_with_prefix(prefix, limit=limit))

    def rename_session(self, session_id: str, title: str) -> SessionRecord:
        return run_now(self.rules.rename_session(session_id, title))

    def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord:
        return run_now(self.rules.update_session(session_id, model=model, system_prompt=system_prompt))

    def end_session(self, session_id: str, reason: str) -> None:
        run_now(self.rules.end_session(session_id, reason))

    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        model: str | None = None,
    ) -> None:
        run_now(
            self.rules.add_usage(
                session_id,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cached_input_tokens=cached_input_tokens,
                model=model,
            )
        )

    def delete_session(self, session_id: str) -> None:
        run_now(self.rules.delete_session(session_id))

    def append_message(self, session_id: str, message: NewMessage, *, turn_id: int | None = None) -> MessageRecord:
        return run_now(self.rules.append_message(session_id, message, turn_id=turn_id))

    def get_messages(self, session_id: str, *, limit: int | None = None, offset: int = 0) -> list[MessageRecord]:
        return run_now(self.rules.get_messages(session_id, limit=limit, offset=offset))

    def history(self, session_id: str) -> list[ChatMessage]:
        return run_now(self.rules.history(session_id))

    def begin_turn(self, session_id: str, *, owner: ProcessOwner | None = None) -> TurnRecord:
        return run_now(self.rules.begin_turn(session_id, owner=owner))

    def save_draft(self, turn_id: int, content: str) -> None:
        run_now(self.rules.save_draft(turn_id, content))

    def end_turn(self, turn_id: int, reason: str) -> None:
        run_now(self.rules.end_turn(turn_id, reason))

    def get_turn(self, turn_id: int) -> TurnRecord | None:
        return run_now(self.rules.get_turn(turn_id))

    def find_turn(self, session_id: str, *, started_at_or_after: float) -> TurnRecord | None:
        return run_now(self.rules.find_turn(session_id, started_at_or_after=started_at_or_after))

    def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        return run_now(self.rules.turn_messages(turn_id))

    def open_turns(self) -> list[TurnRecord]:
        return run_now(self.rules.open_turns())

    def repair_abandoned_turns(self, is_gone: Callable[[ProcessOwner], bool] | None = None) -> list[RepairedTurn]:
        return run_now(self.rules.repair_abandoned_turns(is_gone))

    def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        return run_now(self.rules.add_compaction(session_id, marker))

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        return run_now(self.rules.compactions(session_id))

    def fork_session(
        self, session_id: str, *, at_message_id: int | None = None, title: str | None = None, source: str | None = None
    ) -> SessionRecord:
        return run_now(self.rules.fork_session(session_id, at_message_id=at_message_id, title=title, source=source))

    def search(self, query: str, *, limit: int = 20, source: str | None = None) -> list[SearchHit]:
        return run_now(self.rules.search(query, limit=limit, source=source))

    def stats(self) -> StoreStats:
        return run_now(self.rules.stats())

    def session_usage(self, session_ids: Sequence[str]) -> list[UsageTotal]:
        return run_now(self.rules.session_usage(session_ids))

    def usage_totals(self) -> list[UsageTotal]:
        return run_now(self.rules.usage_totals())

    # -- maintenance (SQLite only, for `hermes doctor` and `hermes sessions optimize`) --

    def integrity_check(self) -> str:
        """ "ok", or a one-line description of what is wrong.

        Checks SQLite's own structures, the search index against the messages, and the
        session counters against the messages.
        """
        with contextlib.suppress(StoreError):  # a damaged file: the checks below say how
            self.index_pending()  # the index is checked against every message
        with self.executor.lock:
            db = self.executor.connection()
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
                    db.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
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
        self.index_pending()
        with self.executor.write() as db:
            db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
        with self.executor.read() as db:
            db.execute("PRAGMA optimize")
