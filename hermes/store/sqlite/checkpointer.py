"""Background WAL checkpoints for a long-lived process's SQLite file: `WalCheckpointer`.

By default the connection that commits also checkpoints the WAL (copies its pages into
the database file) whenever the WAL passes 1000 pages, inside that commit: in a server,
on the event loop's thread, a pause of many page writes every few dozen turns.
`WalCheckpointer` moves that work to a thread with a connection of its own: the writer's
connection stops checkpointing (`wal_autocheckpoint = 0`) and the thread runs a PASSIVE
checkpoint every `interval` seconds, which also writes each page changed in that time
once, however often it changed.

Invariants:
- A PASSIVE checkpoint never waits for a writer or a reader and never blocks one; it
  copies the frames no reader still needs (the rest go in a later one).
- The thread never raises: a failed checkpoint is logged (once) and tried again.
- `stop()` is bounded: it wakes the thread, joins it for at most `STOP_TIMEOUT` seconds
  and gives the writer's connection back its own checkpoints.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_AUTOCHECKPOINT", "STOP_TIMEOUT", "WalCheckpointer"]

DEFAULT_AUTOCHECKPOINT = 1000
"""SQLite's own `wal_autocheckpoint` (pages), restored on the writer at `stop()`."""
STOP_TIMEOUT = 5.0
"""Seconds `stop()` waits for a checkpoint in progress."""
_BUSY_TIMEOUT_MS = 1000


class WalCheckpointer:
    """Checkpoints `path`'s WAL every `interval` seconds in a thread (see the module docstring)."""

    def __init__(self, path: Path, writer: sqlite3.Connection, *, interval: float = 1.0) -> None:
        self._path = path
        self._writer = writer
        self._interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0
        """PASSIVE checkpoints run so far (for tests and diagnostics)."""

    def start(self) -> None:
        if self._thread is not None:
            return
        self._writer.execute("PRAGMA wal_autocheckpoint = 0")
        self._thread = threading.Thread(target=self._run, name=f"wal-checkpoint {self._path.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        thread.join(STOP_TIMEOUT)
        try:
            self._writer.execute(f"PRAGMA wal_autocheckpoint = {DEFAULT_AUTOCHECKPOINT}")
        except sqlite3.Error:  # the writer is closing anyway; its last close checkpoints
            pass

    def _run(self) -> None:
        warned = False
        try:
            db = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("no background checkpoints for %s: %s", self._path, exc)
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            while not self._stopping.wait(self._interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # tried again next interval
                    if not warned:
                        warned = True
                        log.warning("background checkpoint of %s failed: %s", self._path, exc)
        finally:
            db.close()
