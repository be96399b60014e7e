"""hermes sets no `synchronous_commit`: the database's own setting applies unless the URL sets one.

The session's test server runs with `synchronous_commit=off` for speed, so each case
first gives its database a value of its own (`ALTER DATABASE … SET`, which new sessions
take up): a pooled connection must show that value, not one hermes chose.
"""

from __future__ import annotations

import pytest

from hermes.store.postgres.connect import connect, open_pool


async def _database_default(url: str, value: str) -> None:
    from psycopg import sql

    conn = await connect(url)
    try:
        row = await (await conn.execute("SELECT current_database()")).fetchone()
        assert row is not None
        statement = sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}").format(
            sql.Identifier(str(row[0])), sql.Literal(value)
        )
        await conn.execute(statement)
    finally:
        await conn.close()


async def _setting(url: str) -> str:
    pool = await open_pool(url)
    try:
        async with pool.connection() as conn:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
    finally:
        await pool.close()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("value", ["on", "remote_write"])
async def test_pooled_connections_commit_as_the_database_says(pg_url: str, value: str) -> None:
    await _database_default(pg_url, value)
    assert await _setting(pg_url) == value


@pytest.mark.parametrize("value", ["off", "on", "remote_apply"])
async def test_a_url_that_sets_synchronous_commit_keeps_it(pg_url: str, value: str) -> None:
    await _database_default(pg_url, "local")  # a value no URL here asks for
    assert await _setting(f"{pg_url}?options=-c%20synchronous_commit%3D{value}") == value
