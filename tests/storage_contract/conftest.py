"""Fixtures for the storage contract: every test runs on SQLite and on PostgreSQL.

The PostgreSQL fixtures (`pg_server`, `pg_url`, `empty_pg_url`) live in
tests/pg_fixtures.py, shared with the other test folders; where PostgreSQL or the
`postgres` extra is missing the PostgreSQL cases skip with the reason, except under CI
(`CI=true`), where they fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pg_fixtures import run_async, unavailable

from hermes.store.api import Storage

__all__ = ["run_async", "unavailable"]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def storage(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if backend == "sqlite":
        from hermes.store.sqlite_async import open_sqlite_storage

        opened = open_sqlite_storage(tmp_path / "home")
    else:
        from hermes.store.postgres import open_postgres_storage

        url = request.getfixturevalue("pg_url")
        opened = await open_postgres_storage(url)
    try:
        yield opened
    finally:
        await opened.aclose()
