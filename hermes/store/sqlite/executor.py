"""`SqliteExecutor`: the session rules' statements on one SQLite connection.

Invariants:

- Plain `sqlite3` calls in the caller's thread: the async methods never suspend, so a
  coroutine of `hermes.store.rules.sessions` over this executor runs to its end in one step
  (`run_now` drives one without an event loop: `StateDb.run`).
- One connection in autocommit mode, and one re-entrant lock held for every call, so the
  connection may be used from the asyncio loop thread and from worker threads alike.
- `transaction()` is `BEGIN IMMEDIATE … COMMIT`; inside a caller's open transaction
  (`block()`, `write()`) a savepoint of it, so a failed write is undone alone; inside
  another `transaction()` (a rule calling a rule) simply part of it, with no savepoint:
  the rules never catch an error, so it leaves the enclosing one too, which undoes it.
  When the outermost block exits the writes are in the WAL and survive a crash of the
  process. An exception leaving it undoes it.
- SQL arrives neutral (`?` placeholders, tables named `hermes.<table>`); the schema
  prefix is dropped (state.db has one schema).
- `sqlite3` exceptions never leave: they become `StoreError` naming the database file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Coroutine, Iterator
from types import TracebackType
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
        self._in_rule = False
        """A `transaction()` block is open (the lock held): nested ones join it."""

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

    def _error(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"{self.where}: {describe_sqlite_error(exc)}")

    # The statements are the hot path of every turn: plain try/except, no generator-based
    # context managers (each costs more than a short statement).

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        with self.lock:
            try:
                row: Row | None = self._run(sql, params).fetchone()
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            return row

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        with self.lock:
            try:
                return self._run(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    async def execute(self, sql: str, params: Params = ()) -> int:
        with self.lock:
            try:
                return self._run(sql, params).rowcount
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    async def insert(self, sql: str, params: Params = ()) -> int | None:
        with self.lock:
            try:
                cursor = self._run(sql, params)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            return cursor.lastrowid if cursor.rowcount > 0 else None

    def transaction(self) -> _Write:
        # The block holds the lock; it awaits only this executor, which never suspends.
        return _Write(self, rule=True)

    def block(self) -> contextlib.AbstractAsyncContextManager[None]:
        return _Write(self)

    def write(self) -> _Write:
        """One write transaction (synchronous); inside an open one, a savepoint of it."""
        return _Write(self)

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


class _Write:
    """`SqliteExecutor.write()` (and, as an async context manager, `transaction()`).

    Holds the executor's lock; `BEGIN IMMEDIATE … COMMIT`, or inside an open transaction a
    savepoint of it (`rule`, inside another rule's block: nothing, the enclosing block
    undoes or commits it all). An exception undoes what the block wrote; the transaction
    is never left open, even when COMMIT itself failed.
    """

    __slots__ = ("_db", "_executor", "_joined", "_rule", "_savepoint")

    def __init__(self, executor: SqliteExecutor, *, rule: bool = False) -> None:
        self._executor = executor
        self._db: sqlite3.Connection | None = None
        self._rule = rule
        self._joined = False
        self._savepoint = False

    def __enter__(self) -> sqlite3.Connection:
        executor = self._executor
        executor.lock.acquire()
        try:
            db = executor.connection()
            # Autocommit, and the lock held: a transaction open here is our own.
            if executor._in_rule:
                self._joined = True
            else:
                self._savepoint = db.in_transaction
                db.execute("SAVEPOINT write" if self._savepoint else "BEGIN IMMEDIATE")
                executor._in_rule = self._rule
        except sqlite3.Error as exc:
            executor.lock.release()
            raise executor._error(exc) from exc
        except BaseException:
            executor.lock.release()
            raise
        self._db = db
        return db

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        db, executor = self._db, self._executor
        assert db is not None
        try:
            if self._joined:
                if isinstance(e, sqlite3.Error):
                    raise executor._error(e) from e
                return
            executor._in_rule = False
            if et is None:
                try:
                    db.execute("RELEASE write" if self._savepoint else "COMMIT")
                    return
                except sqlite3.Error as exc:
                    self._undo(db)
                    raise executor._error(exc) from exc
            self._undo(db)
            if isinstance(e, sqlite3.Error):
                raise executor._error(e) from e
        finally:
            executor.lock.release()

    def _undo(self, db: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._savepoint:
                db.execute("ROLLBACK TO write")
                db.execute("RELEASE write")
            elif db.in_transaction:
                db.execute("ROLLBACK")

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(et, e, tb)
