"""The instance lease keeper: a PostgreSQL storage keeps its lease alive until closed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.errors import ConfigError, StoreError
from hermes.store.api import Storage
from hermes.store.postgres.lease_keeper import LeaseKeeper
from hermes.store.records import InstanceLease, RunRecord

WAIT = 10.0


async def wait_for(condition: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def lease_of(storage: Storage, instance_id: str) -> InstanceLease | None:
    return next((lease for lease in await storage.leases.list_instances() if lease.instance_id == instance_id), None)


async def test_the_lease_moves_while_open_and_is_released_on_close(pg_url: str) -> None:
    from hermes.store.postgres import open_postgres_storage

    observer = await open_postgres_storage(pg_url)
    storage = await open_postgres_storage(pg_url, instance_lease_ttl=0.6)
    try:
        first = await lease_of(observer, storage.instance_id)
        assert first is not None and first.expires_at - first.heartbeat_at == pytest.approx(0.6, abs=0.05)

        async def moved_twice() -> bool:
            lease = await lease_of(observer, storage.instance_id)
            return lease is not None and lease.expires_at > first.expires_at + 0.3

        await wait_for(moved_twice)
        # A run it owns is never an orphan while the keeper beats.
        now = time.time()
        await storage.runs.put(RunRecord("run_k", "running", now, now, owner_instance=storage.instance_id))
        assert [run.run_id for run in await observer.leases.orphaned_runs()] == []
    finally:
        await storage.aclose()
    try:
        assert await lease_of(observer, storage.instance_id) is None  # released, not left to expire
        assert [run.run_id for run in await observer.leases.orphaned_runs()] == ["run_k"]
        await storage.aclose()  # closing twice is fine
    finally:
        await observer.aclose()


async def test_open_storage_passes_the_setting_through(pg_url: str, tmp_path: Path) -> None:
    from hermes.store.configured import open_storage

    settings = Settings.load(env={"HERMES_HOME": str(tmp_path), "HERMES_DATABASE_URL": pg_url,
                                  "HERMES_INSTANCE_LEASE_TTL": "45"})  # fmt: skip
    assert settings.instance_lease_ttl == 45.0
    async with await open_storage(settings) as storage:
        lease = await lease_of(storage, storage.instance_id)
        assert lease is not None and lease.expires_at - lease.heartbeat_at == pytest.approx(45.0, abs=0.05)


def test_the_setting_defaults_to_30_and_must_be_positive(tmp_path: Path) -> None:
    assert Settings.load(env={"HERMES_HOME": str(tmp_path)}).instance_lease_ttl == 30.0
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(ConfigError, match="instance_lease_ttl"):
            Settings.load(env={"HERMES_HOME": str(tmp_path), "HERMES_INSTANCE_LEASE_TTL": bad})


class FlakyLeases:
    """A lease store whose heartbeats fail while `down` (the database being unreachable)."""

    def __init__(self) -> None:
        self.down = False
        self.failures = 0
        self.released: list[str] = []

    def _lease(self, instance_id: str, ttl: float) -> InstanceLease:
        now = time.time()
        return InstanceLease(instance_id, "h", 1, now, now, now + ttl)

    async def register_instance(self, instance_id: str, *, ttl: float, host: str, pid: int) -> InstanceLease:
        return self._lease(instance_id, ttl)

    async def heartbeat(self, instance_id: str, *, ttl: float) -> InstanceLease:
        if self.down:
            self.failures += 1
            raise StoreError("database postgresql://db: connection refused")
        return self._lease(instance_id, ttl)

    async def release_instance(self, instance_id: str) -> None:
        if self.down:
            raise StoreError("database postgresql://db: connection refused")
        self.released.append(instance_id)


async def test_failed_heartbeats_are_logged_once_per_outage_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    leases = FlakyLeases()
    caplog.set_level(logging.WARNING, logger="hermes.store.postgres.lease_keeper")
    keeper = await LeaseKeeper.start(leases, "inst_x", ttl=0.15)  # type: ignore[arg-type]

    def messages(text: str) -> int:
        return sum(text in record.getMessage() for record in caplog.records)

    async def until(condition: Callable[[], bool]) -> None:
        async def check() -> bool:
            return condition()

        await wait_for(check)

    try:
        await until(lambda: keeper.beats >= 2)
        for outage in (1, 2):
            leases.down = True
            failures = leases.failures
            await until(lambda f=failures: leases.failures >= f + 3)  # type: ignore[misc]
            assert keeper.failing and messages("heartbeat failed") == outage
            leases.down = False
            beats = keeper.beats
            await until(lambda b=beats: keeper.beats > b and not keeper.failing)  # type: ignore[misc]
            assert messages("heartbeat works again") == outage
    finally:
        await keeper.aclose()
    assert leases.released == ["inst_x"]


async def test_a_release_that_fails_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    leases = FlakyLeases()
    keeper = await LeaseKeeper.start(leases, "inst_y", ttl=30)  # type: ignore[arg-type]
    leases.down = True
    with caplog.at_level(logging.WARNING, logger="hermes.store.postgres.lease_keeper"):
        await keeper.aclose()
    assert "could not release" in caplog.text and leases.released == []


def test_a_lease_needs_a_positive_ttl() -> None:
    with pytest.raises(ValueError, match="positive"):
        LeaseKeeper(FlakyLeases(), "inst_z", ttl=0)  # type: ignore[arg-type]


async def test_a_keeper_whose_task_was_cancelled_still_releases_on_close() -> None:
    leases = FlakyLeases()
    keeper = await LeaseKeeper.start(leases, "inst_c", ttl=30)  # type: ignore[arg-type]
    [task] = [task for task in asyncio.all_tasks() if task.get_name() == "hermes-lease-inst_c"]
    task.cancel()
    await asyncio.wait([task], timeout=WAIT)
    await keeper.aclose()
    assert leases.released == ["inst_c"]
