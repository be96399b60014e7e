"""`Leases`: instance leases (`LeaseStore`), written once for both backends.

An instance (one `Storage`) registers a lease and heartbeats it; a run names the instance
that owns it (`runs.owner_instance`), and a run whose owner's lease has expired (or is
missing) is an orphan for the sweeper to settle.

Invariant: lease times and the expiry test use the database's clock (`Dialect.db_now`),
so hosts with skewed clocks agree on which leases have expired.
"""

from __future__ import annotations

import os

from hermes.store.records import InstanceLease, RunRecord
from hermes.store.rules.runs import RUN_COLUMNS, TERMINAL_SQL, run_record
from hermes.store.sql import Dialect, Executor, Row

__all__ = ["Leases"]

_COLUMNS = "instance_id, host, pid, started_at, heartbeat_at, expires_at"
_R_COLUMNS = ", ".join(f"r.{name.strip()}" for name in RUN_COLUMNS.split(","))


def _lease(row: Row) -> InstanceLease:
    return InstanceLease(*row)


class Leases:
    """See the module docstring."""

    def __init__(self, db: Executor, dialect: Dialect) -> None:
        self._db = db
        self._now = dialect.db_now

    async def register_instance(self, instance_id: str, *, ttl: float, host: str, pid: int) -> InstanceLease:
        now = self._now
        rows = await self._db.fetch_all(
            f"INSERT INTO hermes.instances ({_COLUMNS}) VALUES (?, ?, ?, {now}, {now}, {now} + ?) "
            "ON CONFLICT (instance_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
            "started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, "
            f"expires_at = excluded.expires_at RETURNING {_COLUMNS}",
            (instance_id, host, pid, ttl),
        )
        return _lease(rows[0])

    async def heartbeat(self, instance_id: str, *, ttl: float) -> InstanceLease:
        """Extend the lease by `ttl` from now (registering it again when it was dropped)."""
        rows = await self._db.fetch_all(
            f"UPDATE hermes.instances SET heartbeat_at = {self._now}, expires_at = {self._now} + ? "
            f"WHERE instance_id = ? RETURNING {_COLUMNS}",
            (ttl, instance_id),
        )
        if not rows:
            return await self.register_instance(instance_id, ttl=ttl, host=os.uname().nodename, pid=os.getpid())
        return _lease(rows[0])

    async def release_instance(self, instance_id: str) -> None:
        await self._db.execute("DELETE FROM hermes.instances WHERE instance_id = ?", (instance_id,))

    async def list_instances(self) -> list[InstanceLease]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM hermes.instances ORDER BY started_at, instance_id")
        return [_lease(row) for row in rows]

    async def orphaned_runs(self) -> list[RunRecord]:
        """The unsettled runs whose owner instance holds no live lease, oldest first."""
        rows = await self._db.fetch_all(
            f"SELECT {_R_COLUMNS} FROM hermes.runs AS r "
            f"WHERE r.status NOT IN ({TERMINAL_SQL}) AND r.owner_instance IS NOT NULL AND NOT EXISTS ("
            "SELECT 1 FROM hermes.instances AS i WHERE i.instance_id = r.owner_instance "
            f"AND i.expires_at >= {self._now}) ORDER BY r.created_at, r.run_id"
        )
        return [run_record(row) for row in rows]

    async def prune_instances(self, *, expired_for: float) -> int:
        """Drop the leases expired more than `expired_for` seconds ago."""
        return await self._db.execute(
            f"DELETE FROM hermes.instances WHERE expires_at < {self._now} - ?", (expired_for,)
        )
