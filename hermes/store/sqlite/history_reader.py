"""Large history reads of state.db off the event loop: `HistoryReader`.

The session store's statements run in the caller's thread on one shared connection
(`executor`): a server's are on its event loop, which a read of thousands of messages
(the first turn of a long session in a process, or one after an undo or a compaction)
would hold for a noticeable time, every other request waiting. `HistoryReader` runs
such a read in a worker thread, on a connection of its own to the same file.

Invariants:
- The reader's connection is its own (opened at the first read, `query_only`, with the
  busy timeout): the shared connection and its lock are never touched by the worker, so
  the event loop's statements never wait for a large read.
- One statement per read: it sees one snapshot of the WAL database (committed writes
  only), as the shared connection would at that moment.
- The rows are decoded by the same session rules as the shared connection's
  (`Sessions.history_since`), so a read here equals one there.
- Reads through one reader run one at a time (the reader's executor's lock); `close()`
  waits for the one in progress and later reads raise StoreError.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from hermes.errors import StoreError
from hermes.store.owner import owner_gone
from hermes.store.records import MessageRecord
from hermes.store.rules.session_record import Clock
from hermes.store.rules.sessions import Sessions
from hermes.store.sqlite.dialect import SqliteDialect
from hermes.store.sqlite.executor import SqliteExecutor, run_now
from hermes.store.sqlite.file import BUSY_TIMEOUT_MS, describe_sqlite_error

__all__ = ["HistoryReader"]


class HistoryReader:
    """Reads `history_since` of the database at `path` on a connection of its own, in
    whichever thread calls it (see the module docstring)."""

    def __init__(self, path: Path, dialect: SqliteDialect, clock: Clock, where: str) -> None:
        self._path = path
        self._dialect = dialect
        self._clock = clock
        self._where = where
        self._lock = threading.Lock()
        self._rules: Sessions | None = None
        self._executor: SqliteExecutor | None = None
        self._closed = False

    def history_since(self, session_id: str, first_message_id: int) -> list[MessageRecord]:
        """`Sessions.history_since` on the reader's connection (blocking: call it in a worker thread)."""
        return run_now(self._open().history_since(session_id, first_message_id))

    def _open(self) -> Sessions:
        with self._lock:
            if self._closed:
                raise StoreError(f"{self._where} is closed")
            if self._rules is None:
                try:
                    db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False,
                                         timeout=BUSY_TIMEOUT_MS / 1000)  # fmt: skip
                    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                    db.execute("PRAGMA query_only = 1")
                except sqlite3.Error as exc:
                    raise StoreError(f"{self._where}: {describe_sqlite_error(exc)}") from exc
                self._executor = SqliteExecutor(db, self._where)
                self._rules = Sessions(self._executor, self._dialect, is_gone=owner_gone, clock=self._clock)
            return self._rules

    def close(self) -> None:
        """Close the connection (after the read in progress); later reads raise StoreError."""
        with self._lock:
            self._closed = True
            executor, self._executor, self._rules = self._executor, None, None
        if executor is not None:
            executor.close()
