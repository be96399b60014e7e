"""`IdempotentAnswers`: Idempotency-Key answers kept as receipts in a real storage.

Two `IdempotentAnswers` over one storage stand for two instances sharing a database:
they share nothing but the receipts. The clock is a variable the tests move.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes.runs.idempotency import AnswerPending, IdempotencyPolicy, IdempotentAnswers, Transient
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


def answers(clock: Clock, **policy: Any) -> IdempotentAnswers:
    return IdempotentAnswers(IdempotencyPolicy(**policy), clock=clock)


class Gated:
    """A computation that counts its calls and waits for `gate` before answering."""

    def __init__(self, fail_first: bool = False) -> None:
        self.gate, self.started = asyncio.Event(), asyncio.Event()
        self.calls = 0
        self.fail_first = fail_first

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        call = self.calls
        self.started.set()
        await self.gate.wait()
        if self.fail_first and call == 1:
            raise RuntimeError("boom")
        return {"answer": call}


async def test_concurrent_same_key_and_fingerprint_runs_once(storage: Storage) -> None:
    cache = answers(Clock())
    compute = Gated()
    first = asyncio.create_task(cache.once(storage.receipts, "chat", "k", "fp-1", compute))
    second = asyncio.create_task(cache.once(storage.receipts, "chat", "k", "fp-1", compute))
    await compute.started.wait()
    await asyncio.sleep(0)
    assert compute.calls == 1
    compute.gate.set()
    assert await first == await second == {"answer": 1}
    assert await cache.once(storage.receipts, "chat", "k", "fp-1", compute) == {"answer": 1}
    assert compute.calls == 1


async def test_different_fingerprint_does_not_share_and_replaces_the_answer(storage: Storage) -> None:
    cache = answers(Clock())
    compute = Gated()
    compute.gate.set()
    assert await cache.once(storage.receipts, "chat", "k", "fp-1", compute) == {"answer": 1}
    assert await cache.once(storage.receipts, "chat", "k", "fp-2", compute) == {"answer": 2}
    assert await cache.once(storage.receipts, "chat", "k", "fp-2", compute) == {"answer": 2}
    assert compute.calls == 2


async def test_cancelled_waiter_does_not_cancel_shared_work(storage: Storage) -> None:
    cache = answers(Clock())
    compute = Gated()
    first = asyncio.create_task(cache.once(storage.receipts, "chat", "k", "fp-1", compute))
    await compute.started.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.create_task(cache.once(storage.receipts, "chat", "k", "fp-1", compute))
    await asyncio.sleep(0)
    assert compute.calls == 1
    compute.gate.set()
    assert await second == {"answer": 1}


async def test_failures_are_not_stored_and_answers_expire(storage: Storage) -> None:
    clock = Clock()
    cache = answers(clock, ttl=300.0)
    compute = Gated(fail_first=True)
    compute.gate.set()
    with pytest.raises(RuntimeError):
        await cache.once(storage.receipts, "chat", "k", "fp", compute)
    assert await storage.receipts.find_receipt("chat", "k", now=clock.now) is None  # the claim was released
    assert await cache.once(storage.receipts, "chat", "k", "fp", compute) == {"answer": 2}
    assert await cache.once(storage.receipts, "chat", "k", "fp", compute) == {"answer": 2}
    clock.now += 301.0
    assert await cache.once(storage.receipts, "chat", "k", "fp", compute) == {"answer": 3}


async def test_expired_answers_are_pruned(storage: Storage) -> None:
    clock = Clock()
    cache = answers(clock, ttl=300.0)
    compute = Gated()
    compute.gate.set()
    for key in ("a", "b", "c"):
        await cache.once(storage.receipts, "chat", key, "fp", compute)
    assert await storage.receipts.prune_receipts(now=clock.now + 10.0) == 0
    assert await storage.receipts.prune_receipts(now=clock.now + 301.0) == 3


async def test_a_retry_on_another_instance_waits_for_the_answer(storage: Storage) -> None:
    clock = Clock()
    here, there = answers(clock, poll=0.01), answers(clock, poll=0.01)
    compute = Gated()
    first = asyncio.create_task(here.once(storage.receipts, "chat", "k", "fp", compute))
    await compute.started.wait()
    retry = asyncio.create_task(there.once(storage.receipts, "chat", "k", "fp", compute))
    for _ in range(20):  # the retry reads the pending receipt and polls it
        await asyncio.sleep(0)
    assert not retry.done() and compute.calls == 1
    compute.gate.set()
    assert await first == await retry == {"answer": 1}
    assert compute.calls == 1


async def test_a_retry_gives_up_after_the_wait_bound(storage: Storage) -> None:
    clock = Clock()
    here, there = answers(clock), answers(clock, wait=0.05, poll=0.01)
    compute = Gated()
    first = asyncio.create_task(here.once(storage.receipts, "chat", "k", "fp", compute))
    await compute.started.wait()
    with pytest.raises(AnswerPending):
        await there.once(storage.receipts, "chat", "k", "fp", compute)
    compute.gate.set()
    assert await first == {"answer": 1}
    assert compute.calls == 1


async def test_a_dead_instances_claim_lapses_and_a_retry_computes(storage: Storage) -> None:
    clock = Clock()
    receipts = storage.receipts
    # An instance claimed the key and died: nobody refreshes its claim.
    claimed = await receipts.claim_receipt("chat", "k", "fp", "claim_dead", now=clock.now, expires_at=clock.now + 30)
    assert claimed is None
    compute = Gated()
    compute.gate.set()
    with pytest.raises(AnswerPending):
        await answers(clock, wait=0.02, poll=0.01).once(receipts, "chat", "k", "fp", compute)
    clock.now += 31.0
    assert await answers(clock).once(receipts, "chat", "k", "fp", compute) == {"answer": 1}
    # The dead claim's late release drops nothing: the answer stored since still replays.
    await receipts.release_receipt("chat", "k", "claim_dead")
    assert await answers(clock).once(receipts, "chat", "k", "fp", compute) == {"answer": 1}
    assert compute.calls == 1


async def test_a_transient_answer_is_given_but_not_stored(storage: Storage) -> None:
    """What a shutting-down instance answers: the client gets it, a retry computes afresh."""
    clock = Clock()
    cache = answers(clock)
    calls = 0

    async def cut_short() -> dict[str, Any] | Transient:
        nonlocal calls
        calls += 1
        return Transient({"interrupted": calls}) if calls == 1 else {"answer": calls}

    assert await cache.once(storage.receipts, "chat", "k", "fp", cut_short) == {"interrupted": 1}
    assert await storage.receipts.find_receipt("chat", "k", now=clock.now) is None
    assert await cache.once(storage.receipts, "chat", "k", "fp", cut_short) == {"answer": 2}
    assert await cache.once(storage.receipts, "chat", "k", "fp", cut_short) == {"answer": 2}

