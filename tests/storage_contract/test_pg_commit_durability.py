"""PostgreSQL connections commit with SQLite's durability unless the URL says otherwise."""

from __future__ import annotations

import pytest

from hermes.store.postgres.connect import open_pool


async def _setting(url: str) -> str:
    pool = await open_pool(url)
    try:
        async with pool.connection() as conn:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
    finally:
        await pool.close()
    assert row is not None
    return str(row[0])


async def test_pooled_connections_commit_without_waiting_for_the_disk(pg_url: str) -> None:
    assert await _setting(pg_url) == "off"


@pytest.mark.parametrize("value", ["on", "remote_apply"])
async def test_a_url_that_sets_synchronous_commit_keeps_it(pg_url: str, value: str) -> None:
    assert await _setting(f"{pg_url}?options=-c%20synchronous_commit%3D{value}") == value
