"""Settling the runs of dead instances (PostgreSQL): the orphan sweeper of every instance.

Every `hermes serve` instance on PostgreSQL runs `sweep_forever` as a background task of
its app. Every `sweep_interval(ttl)` seconds (min(10 s, ttl/3)) it:

1. finds the unsettled runs whose owner instance has no live lease
   (`LeaseStore.orphaned_runs`: the lease expired or is missing),
2. appends the final `run.interrupted` event to each one's stream (unless it has its
   final event already: the append is atomic, so of several instances sweeping at once
   exactly one writes it), so the stream ends with it on every instance,
3. then settles them `interrupted` (`AsyncRunStore.mark_interrupted`); a sweep that
   fails between the two leaves the run unsettled, and the next sweep finishes it,
4. repairs the turns such dead owners left open (`repair_abandoned_turns`),
5. prunes leases that expired more than a ttl ago.

With the default ttl (30 s) a dead owner's runs are `interrupted` within 40 s.
A failing sweep is logged and retried at the next interval; it never stops the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from hermes.errors import StreamEnded
from hermes.runs.run_log import RunSettled, entry_data
from hermes.store.api import Storage
from hermes.store.records import ORPHAN_MESSAGE

__all__ = ["SweepReport", "sweep_forever", "sweep_interval", "sweep_once"]

logger = logging.getLogger(__name__)

MAX_SWEEP_INTERVAL = 10.0


@dataclass(frozen=True, slots=True)
class SweepReport:
    interrupted: list[str] = field(default_factory=list)
    """The runs this sweep settled (it won them)."""
    turns: int = 0
    leases_pruned: int = 0


def sweep_interval(ttl: float) -> float:
    return max(0.05, min(MAX_SWEEP_INTERVAL, ttl / 3))


async def sweep_once(storage: Storage, *, ttl: float) -> SweepReport:
    """One sweep (see the module docstring). A store error propagates: what it left
    undone is found again by the next sweep, since a run is settled only after its
    stream has its final event."""
    orphans = await storage.leases.orphaned_runs()
    for run in orphans:
        with contextlib.suppress(StreamEnded):  # ended already: by its owner, or another sweeper
            settled = RunSettled("interrupted", run.session_id, False, ORPHAN_MESSAGE, "interrupted", True)
            await storage.run_events.append(run.run_id, *entry_data(settled), final=True)
    won = await storage.runs.mark_interrupted([run.run_id for run in orphans]) if orphans else []
    turns = len(await storage.sessions.repair_abandoned_turns())
    pruned = await storage.leases.prune_instances(expired_for=ttl)
    if won:
        logger.warning("settled %d run(s) of dead instances as interrupted: %s", len(won), ", ".join(won))
    return SweepReport(interrupted=list(won), turns=turns, leases_pruned=pruned)


async def sweep_forever(storage: Storage, *, ttl: float) -> None:
    """Sweep every `sweep_interval(ttl)` seconds until cancelled."""
    interval = sweep_interval(ttl)
    while True:
        await asyncio.sleep(interval)
        try:
            await sweep_once(storage, ttl=ttl)
        except Exception:  # noqa: BLE001 - logged; the next interval tries again
            logger.exception("orphan sweep failed")
