"""Background search indexing for a long-lived process's state.db: `FtsIndexer`.

A thread with a connection of its own runs a batch (`fts_batches.flush_connection`) every
`interval` seconds, so messages reach the search index about a second after their commit
instead of inside it (see `fts_batches`).

Invariants: the thread never raises (a failed batch is logged once and tried again; a
search indexes what waits anyway); `stop()` is bounded (`STOP_TIMEOUT`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from hermes.store.sqlite.fts_batches import flush_connection

__all__ = ["STOP_TIMEOUT", "FtsIndexer"]

log = logging.getLogger(__name__)

STOP_TIMEOUT = 5.0
"""Seconds `stop()` waits for a batch in progress."""
_BUSY_TIMEOUT_MS = 1000


class FtsIndexer:
    """Runs a batch on `path` every `interval` seconds in a thread (see the module docstring)."""

    def __init__(self, path: Path, *, interval: float = 1.0) -> None:
        self._path = path
        self._interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.batches = 0
        """Batches that indexed something (for tests and diagnostics)."""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"fts-batches {self._path.name}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join(STOP_TIMEOUT)

    def _run(self) -> None:
        warned = False
        try:
            db = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("no background search indexing for %s: %s", self._path, exc)
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            while not self._stopping.wait(self._interval):
                try:
                    if flush_connection(db):
                        self.batches += 1
                except sqlite3.Error as exc:  # tried again next interval (a search flushes anyway)
                    if not warned:
                        warned = True
                        log.warning("background search indexing of %s failed: %s", self._path, exc)
        finally:
            db.close()
