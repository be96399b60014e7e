"""Fixtures for the session store tests: a real SQLite file in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.testing.state_db import SyncStateDb


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "state.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SyncStateDb]:
    store = SyncStateDb(db_path)
    yield store
    store.close()
