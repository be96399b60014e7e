"""Reading a home's state.db from a test, without an event loop.

The rules are async, but over SQLite's executor they never suspend, so `StateDb.run` runs
them to their end in the calling thread (inside or outside a running loop alike);
`SyncCalls` (hermes.testing.state_db) calls a whole rules object that way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.store.records import RunRecord
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.sqlite.state_db import STATE_DB, StateDb
from hermes.testing.state_db import SyncCalls

__all__ = ["SyncCalls", "stored_response", "stored_run"]


def stored_run(home: Path, run_id: str) -> RunRecord | None:
    """The run row `run_id` in `home`'s state.db (opened afresh)."""
    with StateDb(home / STATE_DB) as state:
        return state.run(Runs(state.executor, state.dialect).get(run_id))


def stored_response(home: Path, response_id: str) -> dict[str, Any] | None:
    """The stored response `response_id` in `home`'s state.db (opened afresh)."""
    with StateDb(home / STATE_DB) as state:
        return state.run(Responses(state.executor, state.dialect).get(response_id))
