"""state.db for tests and benchmarks, its rules called without `await`: `SyncStateDb`.

    store = open_sync_state(tmp_path / "state.db")
    session = store.create_session(source="cli")   # `store.sessions.create_session`, run now
    store.sessions                                 # the same rules, to await
    SyncStateDb.wrap(storage.sessions.state)        # an open SQLite Storage's state.db

The rules are the async ones of `hermes.store.rules`, never a copy: a SQLite executor
never suspends, so each call runs to its end in the calling thread (`StateDb.run`),
inside or outside a running event loop alike. Nothing in hermes itself uses this; a
hermes command that needs no loop calls `StateDb.run` on the rule it wants.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from hermes.store.sqlite.executor import run_now
from hermes.store.sqlite.file import MEMORY
from hermes.store.sqlite.state_db import StateDb

__all__ = ["SyncCalls", "SyncStateDb", "open_sync_state"]


class SyncCalls:
    """`target`'s coroutine methods called synchronously (any rules over a SQLite
    executor: sessions, runs, responses); other attributes as they are. `len()` is
    `target.count()`."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return run_now(attr(*args, **kwargs))

        return call

    def __len__(self) -> int:
        return int(run_now(self._target.count()))


class SyncStateDb:
    """A `StateDb` (`state`: the file, its maintenance, `sessions` to await) whose every
    other attribute is a session rule called synchronously (`store.get_session(id)`).
    `transaction()` is the file's: a block of writes committed as one."""

    def __init__(self, path: str | os.PathLike[str] = MEMORY) -> None:
        self.state = StateDb(path)

    @classmethod
    def wrap(cls, state: StateDb) -> SyncStateDb:
        """The synchronous face of an open `state` (a `Storage`'s: `storage.sessions.state`)."""
        face = cls.__new__(cls)
        face.state = state
        return face

    def __getattr__(self, name: str) -> Any:
        # Only names this object lacks arrive here: the file's own, else a rule of
        # `state.sessions` (kept once found, so the next call is a plain lookup).
        state: StateDb | None = self.__dict__.get("state")
        if state is None or name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(state, name)
        except AttributeError:
            rule = getattr(SyncCalls(state.sessions), name)
        setattr(self, name, rule)
        return rule

    def __enter__(self) -> SyncStateDb:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.state.close()


def open_sync_state(path: str | os.PathLike[str] = MEMORY) -> SyncStateDb:
    """Open (creating and migrating when needed) the state.db at `path` (or ":memory:")."""
    return SyncStateDb(path)
