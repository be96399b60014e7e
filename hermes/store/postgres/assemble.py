"""`open_postgres_storage`: every store of the PostgreSQL backend on one pool, the instance
lease registered and heartbeated, one LISTEN connection shared by run events and control.

Sessions, responses, receipts, runs and leases are the rules written once
(`hermes.store.rules`) over `PgExecutor` (the pool, one round trip per statement,
transactions pinned to the task) and `PgDialect`; run events and the control channel are
this backend's own (LISTEN/NOTIFY). Concurrent writers on any instance keep the session
counters exact: each write locks the session row it counts on."""

from __future__ import annotations

from hermes.ids import new_instance_id
from hermes.store.api import Storage, caps_of
from hermes.store.postgres.connect import (
    Database,
    connect,
    mask_database_url,
    open_pool,
)
from hermes.store.postgres.control import PgControlChannel, channel_for
from hermes.store.postgres.dialect import PgDialect
from hermes.store.postgres.events import CHANNEL, PgRunEventStore
from hermes.store.postgres.executor import PgExecutor
from hermes.store.postgres.lease_keeper import DEFAULT_LEASE_TTL, LeaseKeeper
from hermes.store.postgres.listener import PgListener
from hermes.store.postgres.migrate import migrate_postgres
from hermes.store.records import RETENTION_SECONDS
from hermes.store.rules.leases import Leases
from hermes.store.rules.receipts import Receipts
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.rules.sessions import Sessions

__all__ = ["open_postgres_storage"]


class _PgCloser:
    def __init__(self, db: Database, listener: PgListener, control: PgControlChannel, keeper: LeaseKeeper) -> None:
        self._db = db
        self.listener = listener
        self._control = control
        self.keeper = keeper
        self._closed = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.keeper.aclose()
            await self._control.aclose()
            await self.listener.aclose()
        finally:
            await self._db.aclose()


async def open_postgres_storage(
    url: str,
    *,
    response_store_size: int = 1000,
    retention: float = RETENTION_SECONDS,
    migrate: bool = True,
    instance_lease_ttl: float = DEFAULT_LEASE_TTL,
) -> Storage:
    """Connect to `url`, bring its schema up to date (under the advisory lock) and return
    every store on one pool.

    The storage's instance lease is registered before this returns and heartbeated
    every `instance_lease_ttl / 3` seconds until `Storage.aclose()` releases it.

    Raises:
        StoreError: the driver is missing, the server is unreachable, or migrating failed
            (the message names the database with its password masked).
    """
    if migrate:
        conn = await connect(url)
        try:
            import psycopg

            from hermes.errors import StoreError
            from hermes.store.postgres.connect import describe_pg_error

            try:
                await migrate_postgres(conn)
            except psycopg.Error as exc:
                raise StoreError(f"cannot migrate {mask_database_url(url)}: {describe_pg_error(exc)}") from None
        finally:
            await conn.close()
    pool = await open_pool(url)
    db = Database(pool, url)
    instance_id = new_instance_id()
    # One LISTEN connection per instance, shared by the run events and the control channel.
    listener = PgListener(url, instance_id, (CHANNEL, channel_for(instance_id)))
    events = PgRunEventStore(db, listener)
    control = PgControlChannel(db, listener)
    executor, dialect = PgExecutor(db), PgDialect()
    leases = Leases(executor, dialect)
    try:
        keeper = await LeaseKeeper.start(leases, instance_id, ttl=instance_lease_ttl)
    except BaseException:
        await control.aclose()
        await listener.aclose()
        await db.aclose()
        raise
    return Storage(
        backend="postgres",
        location=db.label,
        instance_id=instance_id,
        sessions=Sessions(executor, dialect, instance_id=instance_id),  # this instance owns its turns
        responses=Responses(executor, dialect, max_size=response_store_size),
        receipts=Receipts(executor, retention=retention),
        runs=Runs(executor, dialect, retention=retention),
        run_events=events,
        leases=leases,
        closer=_PgCloser(db, listener, control, keeper),
        control=control,
        repairer=_LeasesRepair(),
        caps=caps_of("postgres"),
    )


class _LeasesRepair:
    """Nothing at start-up: the orphan sweeper settles what an instance whose lease
    expired left (`hermes.server.orphan_sweeper`)."""

    async def repair_after_crash(self) -> None:
        return None
