"""Fixtures for the storage contract: every test runs on SQLite and on PostgreSQL.

PostgreSQL is a real server started once per test session (`tests/pg_fixtures.py`, a
plugin of tests/conftest.py shared with the server tests); each test gets a fresh
database cloned from a migrated template. Where PostgreSQL or the `postgres` extra is
missing the PostgreSQL cases skip with the reason, except under CI (`CI=true`), where
they fail: CI always runs them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.store.api import AsyncSessionStore, Storage


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def storage(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if backend == "sqlite":
        from hermes.store.sqlite.assemble import open_sqlite_storage

        opened = open_sqlite_storage(tmp_path / "home")
    else:
        from hermes.store.postgres import open_postgres_storage

        url = request.getfixturevalue("pg_url")
        opened = await open_postgres_storage(url)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
async def pg_storage(pg_url: str) -> AsyncIterator[Storage]:
    """The PostgreSQL storage alone, for what only that backend has."""
    from hermes.store.postgres import open_postgres_storage

    opened = await open_postgres_storage(pg_url)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
async def sqlite_storage(tmp_path: Path) -> AsyncIterator[Storage]:
    """The SQLite storage alone, for what only that backend does."""
    from hermes.store.sqlite.assemble import open_sqlite_storage

    opened = open_sqlite_storage(tmp_path / "home")
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def store(storage: Storage) -> AsyncSessionStore:
    """The storage's sessions: the rules of `hermes.store.rules.sessions` on its backend."""
    return storage.sessions
