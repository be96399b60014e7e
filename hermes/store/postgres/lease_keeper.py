"""Keeping this instance's lease alive: register, heartbeat every ttl/3, release.

    keeper = await LeaseKeeper.start(leases, instance_id, ttl=30.0)
    ...
    await keeper.aclose()

Invariants:

- `start` registers the lease before returning (a failure there is the caller's
  StoreError: an instance without a lease must not start owning turns and runs).
- The heartbeat task beats every ttl/3 measured from the start of the previous beat,
  each beat bounded by `ttl` (past that the lease has lapsed anyway). A failed beat is
  logged once per outage (and the recovery once), retried at the next tick, and never
  ends the task; `heartbeat` re-creates a lease another instance pruned meanwhile.
- The task is named `hermes-lease-<instance id>` (as the server named its own keeper).
- `aclose` stops the task, then releases the lease (bounded; a failure is logged, the
  lease then simply expires). Closing twice is fine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

from hermes.store.api import LeaseStore
from hermes.store.records import InstanceLease

__all__ = ["DEFAULT_LEASE_TTL", "LeaseKeeper"]

log = logging.getLogger(__name__)

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease holds without a heartbeat (setting `instance_lease_ttl`)."""
RELEASE_TIMEOUT = 5.0


class LeaseKeeper:
    """One instance's lease and the task that heartbeats it (see the module docstring)."""

    def __init__(self, leases: LeaseStore, instance_id: str, *, ttl: float) -> None:
        if not ttl > 0:
            raise ValueError(f"lease ttl must be positive, not {ttl!r}")
        self.leases = leases
        self.instance_id = instance_id
        self.ttl = ttl
        self.beats = 0
        """Successful heartbeats so far."""
        self.failing = False
        """True from a failed heartbeat until the next successful one."""
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def start(cls, leases: LeaseStore, instance_id: str, *, ttl: float = DEFAULT_LEASE_TTL) -> LeaseKeeper:
        """Register the lease (StoreError when that fails) and start heartbeating."""
        keeper = cls(leases, instance_id, ttl=ttl)
        await leases.register_instance(instance_id, ttl=ttl, host=socket.gethostname(), pid=os.getpid())
        keeper._task = asyncio.create_task(keeper._run(), name=f"hermes-lease-{instance_id}")
        return keeper

    @property
    def interval(self) -> float:
        return self.ttl / 3

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + self.interval
        while True:
            await asyncio.sleep(max(0.0, next_beat - loop.time()))
            next_beat = loop.time() + self.interval
            await self.beat()

    async def beat(self) -> InstanceLease | None:
        """One heartbeat; the renewed lease, or None when it failed (logged once per outage)."""
        try:
            async with asyncio.timeout(self.ttl):
                lease = await self.leases.heartbeat(self.instance_id, ttl=self.ttl)
        except Exception as exc:  # noqa: BLE001 - any failure is retried at the next tick
            if not self.failing:
                self.failing = True
                reason = str(exc) or type(exc).__name__
                log.warning("instance lease %s: heartbeat failed, retrying: %s", self.instance_id, reason)
            return None
        if self.failing:
            self.failing = False
            log.warning("instance lease %s: heartbeat works again", self.instance_id)
        self.beats += 1
        return lease

    async def aclose(self) -> None:
        """Stop heartbeating and release the lease."""
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT):
                await self.leases.release_instance(self.instance_id)
        except Exception as exc:  # noqa: BLE001 - the lease then expires on its own
            log.warning("instance lease %s: could not release it (it will expire): %s", self.instance_id, exc)
