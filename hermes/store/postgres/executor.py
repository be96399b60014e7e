"""`PgExecutor`: the session rules' statements on a psycopg pool.

Invariants:

- One round trip per statement; outside a transaction each statement commits on its
  own (the pool's connections are in autocommit mode).
- SQL arrives neutral (`?` placeholders, tables named `hermes.<table>`, the schema this
  backend really has); `?` becomes psycopg's `%s`. A dialect's own statements may use
  `%s` and `%(name)s` directly.
- `transaction()` and `block()` pin one pooled connection to the current task's context
  (a ContextVar) inside BEGIN … COMMIT; every statement run in the block uses it, every
  other one uses the pool. A task started inside a block inherits its context; once the
  block has ended such a task uses the pool like any other.
- Nested, `transaction()` joins the enclosing block (no savepoint: a write that raises
  one of our own errors has written nothing, and a database error aborts the whole
  transaction), while `block()` (a caller's `transaction()`) is a savepoint of it.
- A block whose transaction was aborted by a database error its code caught raises
  StoreError at exit instead of committing (COMMIT would quietly roll back).
- psycopg errors become one-line `StoreError`s naming the database by its masked URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from hermes.errors import StoreError
from hermes.store.postgres.connect import Database
from hermes.store.sql import Params, Row

__all__ = ["PgExecutor"]


class _Block:
    """The connection a block pinned, and whether the block still runs."""

    __slots__ = ("conn", "open")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.open = True


class PgExecutor:
    """See the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.where = f"database {db.label}"
        self._block: ContextVar[_Block | None] = ContextVar(f"hermes_pg_transaction_{id(self)}", default=None)
        self._sql: dict[str, str] = {}

    def _native(self, sql: str) -> str:
        native = self._sql.get(sql)
        if native is None:
            native = self._sql[sql] = sql.replace("?", "%s")
        return native

    def _pinned(self) -> Any:
        block = self._block.get()
        return block.conn if block is not None and block.open else None

    @contextlib.asynccontextmanager
    async def _conn(self) -> AsyncIterator[Any]:
        """The task's pinned connection inside a block, else a pooled one."""
        pinned = self._pinned()
        if pinned is None:
            async with self._db.connection() as conn:
                yield conn
        else:
            async with self._db.errors():
                yield pinned

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        async with self._conn() as conn:
            cursor = await conn.execute(self._native(sql), params)
            row: Row | None = await cursor.fetchone()
            return row

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._conn() as conn:
            cursor = await conn.execute(self._native(sql), params)
            rows: list[Row] = await cursor.fetchall()
            return rows

    async def execute(self, sql: str, params: Params = ()) -> int:
        async with self._conn() as conn:
            cursor = await conn.execute(self._native(sql), params)
            count: int = cursor.rowcount
            return count

    async def insert(self, sql: str, params: Params = ()) -> int | None:
        row = await self.fetch_one(sql + " RETURNING id", params)
        return None if row is None else int(row[0])

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        if self._pinned() is not None:
            yield
            return
        async with self._pin():
            yield

    @contextlib.asynccontextmanager
    async def block(self) -> AsyncIterator[None]:
        pinned = self._pinned()
        if pinned is not None:
            async with self._db.errors(), pinned.transaction():
                yield
            return
        async with self._pin():
            yield

    @contextlib.asynccontextmanager
    async def _pin(self) -> AsyncIterator[None]:
        from psycopg.pq import TransactionStatus

        async with self._db.connection() as conn, conn.transaction():
            block = _Block(conn)
            token = self._block.set(block)
            try:
                yield
            finally:
                block.open = False
                self._block.reset(token)
            if conn.info.transaction_status == TransactionStatus.INERROR:
                # COMMIT would quietly roll back: say so instead.
                raise StoreError(f"{self.where}: a write in the transaction failed; nothing was committed")
