"""Connecting to PostgreSQL: the driver import, the pool, and error translation.

The driver is psycopg 3 with psycopg_pool (the `postgres` extra), imported only when a
PostgreSQL URL is used, so SQLite users never load it. Invariants:

- Every connection the pool hands out is in autocommit mode; multi-statement writes use
  `conn.transaction()` explicitly, so no statement ever leaves a transaction open.
- `psycopg` errors never leave the backend: `Database.connection()` turns them into
  `StoreError` with one line naming the database by its masked URL (no password).
- Every wait has a bound: taking a connection from the pool (`POOL_TIMEOUT`), connecting
  (`CONNECT_TIMEOUT`), and each statement (`STATEMENT_TIMEOUT`, set per connection).
- hermes never sets `synchronous_commit`: a commit is as durable as the database says,
  which by PostgreSQL's default (`on`) means flushed to the WAL on disk before it is
  acknowledged, so what hermes committed before answering a client survives a crash of
  the database server. A URL that sets it (`?options=-c%20synchronous_commit%3Doff`) opts
  out and keeps its own value; with `off`, a crash of the database server may lose the
  last few acknowledged commits (at most three times `wal_writer_delay`' worth), never
  consistency. tests/server/test_responses_crash_pg.py kills the server to hold this.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError, StoreError
from hermes.redact import redact_url

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "CONNECT_TIMEOUT",
    "Database",
    "describe_pg_error",
    "is_postgres_url",
    "mask_database_url",
    "open_pool",
    "require_driver",
]

CONNECT_TIMEOUT = 10
"""Seconds to establish one connection."""
POOL_TIMEOUT = 30.0
"""Seconds to wait for a free pooled connection."""
STATEMENT_TIMEOUT_MS = 60_000
POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 10

_SCHEMES = ("postgresql://", "postgres://")
_PG_USERINFO = re.compile(r"^(?P<head>postgres(?:ql)?://(?P<userinfo>[^/?#@]*)@)", re.IGNORECASE)
_DSN_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).strip().lower().startswith(_SCHEMES)


def mask_database_url(url: str) -> str:
    """The URL (or key=value DSN) with its password masked, for messages.

    Unlike an API URL's bare userinfo (a token), a database URL's `user@` is a user name
    and stays readable; `user:password@` becomes `user:****@`, and credential-like query
    parameters (`?password=…`) and DSN `password=…` lose their value.
    """
    match = _PG_USERINFO.match(url)
    if match and ":" not in match["userinfo"]:
        return match["head"] + _DSN_PASSWORD.sub(r"\1****", redact_url(url[match.end("head") :]))
    return _DSN_PASSWORD.sub(r"\1****", redact_url(url))


def require_driver() -> None:
    """Raise a one-line ConfigError-like StoreError when the `postgres` extra is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise StoreError(
            "database_url is a PostgreSQL URL but its driver is not installed "
            "(pip install 'hermes-agent-cli[postgres]')"
        ) from None


def describe_pg_error(exc: BaseException) -> str:
    """One line for a psycopg error (its primary message, whitespace collapsed)."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = primary or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


async def _configure(conn: AsyncConnection[Any]) -> None:
    """Autocommit and the statement bound; nothing about durability (see the module invariants)."""
    await conn.set_autocommit(True)
    await conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")


async def open_pool(url: str, *, min_size: int = POOL_MIN_SIZE, max_size: int = POOL_MAX_SIZE) -> AsyncConnectionPool:
    """An open pool of autocommit connections to `url` (raises StoreError when unreachable)."""
    require_driver()
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    label = mask_database_url(url)
    pool: AsyncConnectionPool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
        configure=_configure,
        open=False,
        timeout=POOL_TIMEOUT,
        name="hermes",
    )
    try:
        await pool.open(wait=True, timeout=CONNECT_TIMEOUT + 5)
    except (psycopg.Error, OSError) as exc:
        await pool.close()
        raise StoreError(f"cannot connect to {label}: {describe_pg_error(exc)}") from None
    return pool


async def connect(url: str) -> AsyncConnection[Any]:
    """One autocommit connection outside any pool (migrations, LISTEN, `hermes db`)."""
    require_driver()
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {mask_database_url(url)}: {describe_pg_error(exc)}") from None
    return conn


class Database:
    """A pool plus the label used in messages; hands out error-translating connections."""

    def __init__(self, pool: AsyncConnectionPool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.label = mask_database_url(url)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        async with self.errors(), self.pool.connection() as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def errors(self) -> AsyncIterator[None]:
        """Turn psycopg errors raised in the block into one-line `StoreError`s."""
        import psycopg

        try:
            yield
        except HermesError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"database {self.label}: {describe_pg_error(exc)}") from None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection inside one transaction, committed when the block exits cleanly."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    async def aclose(self) -> None:
        await self.pool.close()
