"""The SQLite backend of the async storage interface: `open_sqlite_storage(home)`.

One file, `$HERMES_HOME/state.db` (`schema`): sessions are the session rules
(`state_db.SqliteSessions`); responses, receipts, runs and leases are the rules of
`hermes.store.rules`, all over state.db's one `SqliteExecutor` and `SqliteDialect`.
Every call is a plain sqlite3 call in the event loop's thread: the queries take well
under a millisecond, so a thread hop would cost more than it saves. The one exception is
state.db's WAL flushes: a thread of their own (`wal_flusher`), so no turn's commit
waits for a flush's page writes. Run events live in the process
(`event_stream.MemoryRunEventStore`).
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes.ids import new_instance_id
from hermes.store.api import Storage, caps_of
from hermes.store.control import MemoryControlChannel
from hermes.store.event_stream import MemoryRunEventStore
from hermes.store.records import RETENTION_SECONDS
from hermes.store.rules.leases import Leases
from hermes.store.rules.receipts import Receipts
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.sqlite.repair import repair_after_crash
from hermes.store.sqlite.state_db import STATE_DB, SqliteSessions, StateDb

__all__ = ["open_sqlite_storage"]


class _SqliteCloser:
    def __init__(self, state: StateDb) -> None:
        self._state = state

    async def aclose(self) -> None:
        self._state.close()  # closing twice is fine


def open_sqlite_storage(
    home: str | os.PathLike[str],
    *,
    response_store_size: int = 1000,
    retention: float = RETENTION_SECONDS,
) -> Storage:
    """Open (creating 0600 and migrating when needed) state.db in `home`.

    Raises:
        StoreError: the file cannot be created, is not a database, or is damaged.
    """
    folder = Path(home).expanduser()
    state = StateDb(folder / STATE_DB)
    state.flush_wal_in_background()  # a turn's commits never pay for a WAL flush
    state.index_in_background()  # nor for the search index (`fts_batches`)
    db, dialect = state.executor, state.dialect
    sessions = state.sessions
    responses = Responses(db, dialect, max_size=response_store_size)
    runs = Runs(db, dialect, retention=retention)
    instance_id = new_instance_id()
    return Storage(
        backend="sqlite",
        location=str(folder),
        instance_id=instance_id,
        sessions=sessions,
        responses=responses,
        receipts=Receipts(db, retention=retention),
        runs=runs,
        run_events=MemoryRunEventStore(),
        leases=Leases(db, dialect),
        closer=_SqliteCloser(state),
        control=MemoryControlChannel(instance_id),
        repairer=_ProcessRepair(sessions, responses, runs),
        caps=caps_of("sqlite"),
    )


class _ProcessRepair:
    """Start-up repair of what dead processes left in state.db (`repair`)."""

    def __init__(self, sessions: SqliteSessions, responses: Responses, runs: Runs) -> None:
        self._sessions = sessions
        self._responses = responses
        self._runs = runs

    async def repair_after_crash(self) -> None:
        await repair_after_crash(self._sessions, self._responses, self._runs)
