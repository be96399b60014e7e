"""state.db, the one SQLite file of a home: `StateDb` (the file) and `SqliteSessions`
(the session rules over it).

Invariants:

- The file is opened by `file.open_sqlite_file` (created 0600, folder 0700, WAL,
  `synchronous=NORMAL`, foreign keys, busy timeout, migrations from `schema`).
- Every rule is written once in `hermes.store.rules`; this module only gives them
  `SqliteExecutor` (plain sqlite3 calls in the caller's thread, one connection, one
  re-entrant lock) and `SqliteDialect`. Every write is one `BEGIN IMMEDIATE … COMMIT`
  transaction (or a savepoint of the caller's `transaction()` block, committed with it):
  when it returns the write is in the WAL and survives a crash of the process; only a
  power loss can drop the newest commits (FULL would fsync every message, ~4 ms per write).
- The executor never suspends, so `StateDb.run` drives a rule to its end in the calling
  thread without an event loop: how the few synchronous callers (`hermes sessions list`,
  tests and benches through `hermes.testing.state_db`) run the same async rules.
- A `large` `history_since` through `SqliteSessions` (the first read of a long
  session's history in a process) runs in a worker thread on a read-only connection of
  its own (`history_reader`), never on the shared one, whose lock it would hold.
- `flush_wal_in_background()` (the storage of a long-lived process) moves WAL
  flushes from the committing connection to a thread (`wal_flusher`); `close()`
  stops it first. `index_in_background()` likewise indexes new messages for search in
  batches (`fts_batches`); without it, a search indexes what waits first.
- Turns belong to processes: `repair_abandoned_turns` ends only turns whose owner
  process is gone (`owner.owner_gone`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from hermes.errors import StoreError
from hermes.store.owner import owner_gone
from hermes.store.records import MessageRecord
from hermes.store.rules.session_record import Clock
from hermes.store.rules.sessions import Sessions
from hermes.store.sqlite import folded_files, fts_batches
from hermes.store.sqlite.dialect import SqliteDialect
from hermes.store.sqlite.executor import SqliteExecutor, run_now
from hermes.store.sqlite.file import MEMORY, describe_sqlite_error, open_sqlite_file
from hermes.store.sqlite.history_reader import HistoryReader
from hermes.store.sqlite.schema import STATE_MIGRATIONS

if TYPE_CHECKING:
    from hermes.store.sqlite.fts_indexer import FtsIndexer
    from hermes.store.sqlite.wal_flusher import WalFlusher

__all__ = ["STATE_DB", "SqliteSessions", "StateDb"]

T = TypeVar("T")

STATE_DB = "state.db"
"""The session database's file name in `$HERMES_HOME`."""


class SqliteSessions(Sessions):
    """`AsyncSessionStore` on state.db: the session rules over `state`'s connection."""

    def __init__(self, state: StateDb) -> None:
        super().__init__(state.executor, state.dialect, is_gone=owner_gone, clock=state.clock)
        self.state = state
        """The file these rules run on."""

    async def history_since(
        self, session_id: str, first_message_id: int, *, large: bool = False
    ) -> list[MessageRecord]:
        """`Sessions.history_since`; a `large` read of a database file runs in a worker
        thread on a connection of its own (`history_reader`), so the event loop goes on
        serving other requests meanwhile (`:memory:` has no second connection: read here)."""
        reader = self.state.history_reader if large else None
        if reader is None:
            return await super().history_since(session_id, first_message_id)
        import asyncio  # here: a synchronous caller (`sessions list`) never loads asyncio

        return await asyncio.to_thread(reader.history_since, session_id, first_message_id)


class StateDb:
    """state.db (or `:memory:`): the open file, its executor and dialect, and its
    maintenance; `sessions` is the session rules over it.

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
        self._wal_flusher: WalFlusher | None = None
        """Background WAL flushes, once `flush_wal_in_background` started them."""
        self._indexer: FtsIndexer | None = None
        """Background search indexing, once `index_in_background` started it."""
        self.history_reader = (
            None if self._path is None
            else HistoryReader(self._path, self.dialect, self.clock, f"session database {opened.label} (reader)")
        )  # fmt: skip
        """Large history reads off the caller's thread (None for `:memory:`); its
        connection opens at its first read."""
        self.sessions = SqliteSessions(self)
        """The session rules over this file (`AsyncSessionStore`)."""

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """The result of `step`, a rule over this file (`sessions.list_sessions(...)`),
        run to its end in the calling thread: the executor never suspends, so no event
        loop is needed (`executor.run_now`)."""
        return run_now(step)

    def flush_wal_in_background(self, *, interval: float = 1.0, truncate_at: int | None = None) -> None:
        """Flush the WAL in a thread of its own from now on, not inside commits
        (`wal_flusher`: for a long-lived process; a no-op for `:memory:`); the WAL is cut
        to zero bytes once past `truncate_at` bytes (default 64 MiB)."""
        if self._path is None or self._wal_flusher is not None:
            return
        from hermes.store.sqlite.wal_flusher import (  # a server's, never a CLI command's
            DEFAULT_TRUNCATE_AT,
            WalFlusher,
        )

        self._wal_flusher = WalFlusher(
            self._path, self.executor.connection(), interval=interval,
            truncate_at=DEFAULT_TRUNCATE_AT if truncate_at is None else truncate_at,
        )  # fmt: skip
        with self.executor.lock:
            self._wal_flusher.start()

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
        """Close the connection (the background WAL flushes stopped first); later calls
        raise StoreError. Closing twice is fine."""
        if self.history_reader is not None:
            self.history_reader.close()
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        if self._wal_flusher is not None:
            with self.executor.lock:
                self._wal_flusher.stop()
            self._wal_flusher = None
        self.executor.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
