"""Background WAL flushes for a long-lived process's SQLite file: `WalFlusher`.

By default the connection that commits also flushes the WAL (copies its pages into
the database file: SQLite's `wal_checkpoint`) whenever the WAL passes 1000 pages, inside that commit: in a server,
on the event loop's thread, a pause of many page writes every few dozen turns.
`WalFlusher` moves that work to a thread with a connection of its own: the writer's
connection stops flushing (`wal_autocheckpoint = 0`) and the thread runs a PASSIVE
`wal_checkpoint` every `interval` seconds, which also writes each page changed in that time
once, however often it changed.

A WAL file keeps its size when it is reused from the start, and is not reused at all
while a reader holds an old snapshot; so, after a PASSIVE flush, when the `-wal` file
is past `truncate_at` bytes the thread runs a TRUNCATE flush, which copies what is
left, waits (at most the busy timeout) for readers of old snapshots, and cuts the file to
zero bytes. Every connection also has `journal_size_limit` (`file.JOURNAL_SIZE_LIMIT`):
a WAL reused from the start is cut back to that size.

Invariants:
- A PASSIVE flush never waits for a writer or a reader and never blocks one; it
  copies the frames no reader still needs (the rest go in a later one).
- A TRUNCATE flush runs only when the WAL is past `truncate_at`; while it runs it
  holds the write lock (writers wait through their busy timeout); one that could not
  finish (busy) is tried again at the next interval.
- The thread never raises: a failed flush is logged (once) and tried again.
- `stop()` is bounded: it wakes the thread, joins it for at most `STOP_TIMEOUT` seconds
  and gives the writer's connection back its own flushes.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from hermes.store.sqlite.file import JOURNAL_SIZE_LIMIT

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_AUTOCHECKPOINT", "DEFAULT_TRUNCATE_AT", "STOP_TIMEOUT", "WalFlusher"]

DEFAULT_AUTOCHECKPOINT = 1000
"""SQLite's own `wal_autocheckpoint` (pages), restored on the writer at `stop()`."""
DEFAULT_TRUNCATE_AT = 64 * 1024 * 1024
"""Bytes of `-wal` file past which the thread runs a TRUNCATE flush."""
STOP_TIMEOUT = 5.0
"""Seconds `stop()` waits for a flush in progress."""
_BUSY_TIMEOUT_MS = 1000


class WalFlusher:
    """Flushes `path`'s WAL every `interval` seconds in a thread (see the module docstring)."""

    def __init__(
        self, path: Path, writer: sqlite3.Connection, *, interval: float = 1.0, truncate_at: int = DEFAULT_TRUNCATE_AT
    ) -> None:
        self._path = path
        self._wal = path.with_name(path.name + "-wal")
        self._truncate_at = truncate_at
        self._writer = writer
        self._interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.flushes = 0
        """PASSIVE flushes run so far (for tests and diagnostics)."""
        self.truncations = 0
        """TRUNCATE flushes that left the WAL at zero bytes."""

    def start(self) -> None:
        if self._thread is not None:
            return
        self._writer.execute("PRAGMA wal_autocheckpoint = 0")
        self._thread = threading.Thread(target=self._run, name=f"wal-flush {self._path.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        thread.join(STOP_TIMEOUT)
        try:
            self._writer.execute(f"PRAGMA wal_autocheckpoint = {DEFAULT_AUTOCHECKPOINT}")
        except sqlite3.Error:  # the writer is closing anyway; its last close flushes
            pass

    def _run(self) -> None:
        warned = False
        try:
            db = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("no background WAL flushes for %s: %s", self._path, exc)
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            db.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
            while not self._stopping.wait(self._interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.flushes += 1
                    if self._wal_bytes() > self._truncate_at:
                        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                        self.truncations += 1 if self._wal_bytes() == 0 else 0
                except sqlite3.Error as exc:  # tried again next interval
                    if not warned:
                        warned = True
                        log.warning("background WAL flush of %s failed: %s", self._path, exc)
        finally:
            db.close()

    def _wal_bytes(self) -> int:
        try:
            return self._wal.stat().st_size
        except OSError:  # no WAL file (yet): nothing to cut
            return 0
