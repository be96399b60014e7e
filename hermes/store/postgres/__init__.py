"""The PostgreSQL backend of the async storage interface (the `postgres` extra).

Driver choice: psycopg 3 (async) with psycopg_pool rather than asyncpg, because
- one driver serves both the async server and synchronous callers (the CLI can use
  `psycopg.connect` with the same SQL and types), where asyncpg is async only;
- LISTEN/NOTIFY is a plain async iterator (`AsyncConnection.notifies()`), which is what
  run-event subscriptions need;
- parameters are always sent separately from the SQL (server-side binding, binary-safe),
  with the DB-API placeholders the SQLite stores already use in spirit;
- it ships a maintained binary wheel (`psycopg[binary]`) with libpq, and a pool with
  health checks and bounded waits.

Nothing here is imported unless `database_url` is a PostgreSQL URL.
`open_postgres_storage` is loaded on first use (`assemble`), so importing a light module
of this package (`connect`'s URL helpers) loads neither the driver nor asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.store.postgres.assemble import open_postgres_storage

__all__ = ["open_postgres_storage"]


def __getattr__(name: str) -> Any:
    if name == "open_postgres_storage":
        from hermes.store.postgres.assemble import open_postgres_storage

        return open_postgres_storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
