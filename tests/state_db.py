"""Reading a home's state.db from a test, without an event loop.

The rules are async, but over SQLite's executor they never suspend, so `run_now` runs
them to their end in the calling thread (inside or outside a running loop alike).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from hermes.store.records import RunRecord
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.sqlite.executor import run_now
from hermes.store.sqlite.state_db import STATE_DB, SqliteSessionStore


class SyncCalls:
    """`target`'s coroutine methods called synchronously (a SQLite store's rules);
    `len()` is its `count()`."""

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


def stored_run(home: Path, run_id: str) -> RunRecord | None:
    """The run row `run_id` in `home`'s state.db (opened afresh)."""
    with SqliteSessionStore(home / STATE_DB) as state:
        return run_now(Runs(state.executor, state.dialect).get(run_id))


def stored_response(home: Path, response_id: str) -> dict[str, Any] | None:
    """The stored response `response_id` in `home`'s state.db (opened afresh)."""
    with SqliteSessionStore(home / STATE_DB) as state:
        return run_now(Responses(state.executor, state.dialect).get(response_id))
