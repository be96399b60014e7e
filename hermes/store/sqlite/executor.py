"""`SqliteExecutor`: the session rules' statements on one SQLite connection.

Invariants:

- Plain `sqlite3` calls in the caller's thread: the async methods never suspend, so a
  coroutine of `hermes.store.sessions` over this executor runs to its end in one step
  (`run_now` drives one without an event loop, for the synchronous face).
- One connection in autocommit mode, and one re-entrant lock held for every call, so the
  connection may be used from the asyncio loop thread and from worker threads alike.
- `transaction()` is `BEGIN IMMEDIATE … COMMIT` (or, inside an open transaction, a
  savepoint of it, so a failed write is undone alone): when it exits the writes are in
  the WAL and survive a crash of the process. An exception leaving it undoes it.
- SQL arrives neutral (`?` placeholders, tables named `hermes.<table>`); the schema
  prefix is dropped (state.db has one schema).
- `sqlite3` exceptions never leave: they become `StoreError` naming the database file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from hermes.errors import StoreError
from hermes.store.sql import Params, Row
from hermes.store.sqlite.file import describe_sqlite_error

__all__ = ["SqliteExecutor", "run_now"]

T = TypeVar("T")


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (one over `SqliteExecutor`)."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a SQLite store operation suspended")


class SqliteExecutor:
    """See the module docstring. `where` names the database in messages."""

    def __init__(self, connection: sqlite3.Connection, where: str) -> None:
        self.where = where
        self.lock = threading.RLock()
        self._db: sqlite3.Connection | None = connection
        self._sql: dict[str, str] = {}

    def connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"{self.where} is closed")
        return self._db

    def _native(self, sql: str) -> str:
        native = self._sql.get(sql)
        if native is None:
            native = self._sql[sql] = sql.replace("hermes.", "")
        return native

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.where}: {describe_sqlite_error(exc)}") from exc

    def _run(self, sql: str, params: Params) -> sqlite3.Cursor:
        return self.connection().execute(self._native(sql), params)

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        with self.lock, self.errors():
            row: Row | None = self._run(sql, params).fetchone()
            return row

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        with self.lock, self.errors():
            return self._run(sql, params).fetchall()

    async def execute(self, sql: str, params: Params = ()) -> int:
        with self.lock, self.errors():
            return self._run(sql, params).rowcount

    async def insert(self, sql: str, params: Params = ()) -> int | None:
        with self.lock, self.errors():
            cursor = self._run(sql, params)
            return cursor.lastrowid if cursor.rowcount > 0 else None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        # The block holds the lock; it awaits only this executor, which never suspends.
        with self.write():
            yield

    def block(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.transaction()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (synchronous); inside an open one, a savepoint of it."""
        with self.lock, self.errors():
            db = self.connection()
            # Autocommit, and this lock held: a transaction open here is our own.
            inside_transaction = db.in_transaction
            if inside_transaction:
                db.execute("SAVEPOINT write")
                try:
                    yield db
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK TO write")
                        db.execute("RELEASE write")
                    raise
                db.execute("RELEASE write")
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # Never leave a transaction open, even when COMMIT itself failed.
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self.lock, self.errors():
            yield self.connection()

    def close(self) -> None:
        """Close the connection (after `PRAGMA optimize`); later calls raise StoreError."""
        with self.lock:
            if self._db is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("PRAGMA optimize")
            self._db.close()
            self._db = None
