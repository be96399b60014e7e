"""`PgSessionStore`: sessions and messages on PostgreSQL (`AsyncSessionStore`).

The rules are `hermes.store.sessions.Sessions`, the same as on SQLite; this backend
gives them `PgExecutor` (the pool, one round trip per statement, transactions pinned
to the task) and `PgDialect` (JSON content, tsvector search, row and advisory locks,
lease-owned turns, one-statement hot writes). Concurrent writers on any instance keep
the counters exact: each write locks the session row it counts on.
"""

from __future__ import annotations

from hermes.store.postgres.connect import Database
from hermes.store.postgres.dialect import PgDialect
from hermes.store.postgres.executor import PgExecutor
from hermes.store.sessions import Sessions

__all__ = ["PgSessionStore"]


class PgSessionStore(Sessions):
    """See the module docstring. Built by `open_postgres_storage`.

    `instance_id` (`Storage.instance_id`) owns the turns this store begins."""

    def __init__(self, db: Database, *, instance_id: str) -> None:
        super().__init__(PgExecutor(db), PgDialect(), instance_id=instance_id)
