"""`hermes.runs.session_claims`: one turn at a time per session, claimed in a real storage.

Two claimants over one storage stand for two instances sharing a database: they share
nothing but the receipts. The clock is a variable the tests move.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.runs.session_claims import SCOPE, acquire
from hermes.store.api import Storage
from hermes.store.sqlite.assemble import open_sqlite_storage


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    opened = open_sqlite_storage(tmp_path / "home")
    yield opened
    await opened.aclose()


async def test_a_held_session_is_refused_until_released(storage: Storage) -> None:
    clock = Clock()
    first = await acquire(storage.receipts, "s1", wait=0, clock=clock)
    assert first is not None
    assert await acquire(storage.receipts, "s1", wait=0, clock=clock) is None
    assert await acquire(storage.receipts, "s2", wait=0, clock=clock) is not None  # per session
    waiting = asyncio.ensure_future(acquire(storage.receipts, "s1", wait=10, poll=0.01, clock=clock))
    await first.release()
    second = await waiting
    assert second is not None and second.token != first.token
    await second.release()
    await second.release()  # idempotent
    assert await storage.receipts.find_receipt(SCOPE, "s1", now=clock.now) is None


async def test_a_dead_holders_claim_lapses(storage: Storage) -> None:
    clock = Clock()
    dead = await acquire(storage.receipts, "s1", wait=0, hold=30, clock=clock)
    assert dead is not None
    assert dead._keeper is not None
    dead._keeper.cancel()  # its instance died: nobody refreshes the claim
    clock.now += 31
    taken = await acquire(storage.receipts, "s1", wait=0, clock=clock)
    assert taken is not None
    await taken.release()
