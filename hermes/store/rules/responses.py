"""`Responses`: stored Responses API records and conversation names (`AsyncResponseStore`),
written once for both backends.

A record is whatever the server stores for one response id — in practice
``{"response": <envelope>, "conversation_history": [...], "instructions": str | None,
"session_id": str}`` — kept as JSON text, so any string content round-trips.

Invariants:

- LRU-bounded to `max_size`: `get` refreshes a record, `put` evicts the least recently
  used ones beyond it. The recency stamp comes from the database
  (`Dialect.response_recency`), so every process and instance shares one clock, and
  nothing is cached in memory: a record deleted through one is gone for all.
- A conversation name maps to the newest response id of that conversation; a mapping
  disappears with the response it points at (on delete and on eviction), so a reused
  name simply starts a new conversation.
- Each row keeps its envelope's `status` and the process that wrote it
  (`owner.ProcessOwner`), so start-up repair settles the `in_progress` records of a
  process that died mid-response (`in_progress()`, `settle()`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hermes.store.owner import ProcessOwner, current_owner
from hermes.store.sql import Dialect, Executor

__all__ = ["PendingResponse", "Responses"]


@dataclass(frozen=True, slots=True)
class PendingResponse:
    """A stored response still `in_progress`, with the process that wrote it."""

    response_id: str
    record: dict[str, Any]
    owner: ProcessOwner | None
    """None for records written before owners were recorded."""


def _envelope_status(record: dict[str, Any]) -> str | None:
    response = record.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    return status if isinstance(status, str) else None


class Responses:
    """See the module docstring. `max_size`: how many responses to keep (at least 1)."""

    def __init__(self, db: Executor, dialect: Dialect, *, max_size: int = 1000) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._db = db
        self._dialect = dialect
        self.max_size = max_size

    async def get(self, response_id: str) -> dict[str, Any] | None:
        """The record, refreshed as most recently used; None when unknown (or corrupt)."""
        rows = await self._db.fetch_all(
            f"UPDATE hermes.responses SET accessed_at = {self._dialect.response_recency} "
            "WHERE response_id = ? RETURNING data",
            (response_id,),
        )
        if not rows:
            return None
        try:
            data = json.loads(rows[0][0])
        except json.JSONDecodeError:
            await self.delete(response_id)
            return None
        return data if isinstance(data, dict) else None

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        """Insert or replace, then evict the least recently used beyond `max_size`."""
        owner = current_owner()
        async with self._db.transaction():
            await self._db.execute(
                "INSERT INTO hermes.responses (response_id, data, accessed_at, status, owner_host, owner_pid, "
                f"owner_started) VALUES (?, ?, {self._dialect.response_recency}, ?, ?, ?, ?) "
                "ON CONFLICT (response_id) DO UPDATE SET data = excluded.data, accessed_at = excluded.accessed_at, "
                "status = excluded.status, owner_host = excluded.owner_host, owner_pid = excluded.owner_pid, "
                "owner_started = excluded.owner_started",
                (response_id, json.dumps(record), _envelope_status(record), owner.host, owner.pid, owner.started),
            )
            row = await self._db.fetch_one("SELECT count(*) FROM hermes.responses")
            excess = (int(row[0]) if row else 0) - self.max_size
            if excess <= 0:
                return
            victims = await self._db.fetch_all(
                "DELETE FROM hermes.responses WHERE response_id IN (SELECT response_id FROM hermes.responses "
                f"ORDER BY accessed_at ASC LIMIT ?{self._dialect.skip_locked}) RETURNING response_id",
                (excess,),
            )
            for (victim,) in victims:
                await self._db.execute("DELETE FROM hermes.conversations WHERE response_id = ?", (victim,))

    async def in_progress(self) -> list[PendingResponse]:
        """Every record whose envelope is still `in_progress` (an indexed query)."""
        rows = await self._db.fetch_all(
            "SELECT response_id, data, owner_host, owner_pid, owner_started FROM hermes.responses "
            "WHERE status = 'in_progress' ORDER BY accessed_at"
        )
        pending: list[PendingResponse] = []
        for response_id, data, host, pid, started in rows:
            try:
                record = json.loads(data)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict):
                continue
            owner = None if host is None or pid is None else ProcessOwner(host, pid, started or "")
            pending.append(PendingResponse(response_id, record, owner))
        return pending

    async def settle(self, response_id: str, record: dict[str, Any]) -> bool:
        """Replace a record that is still `in_progress` (its recency unchanged).

        Returns False, changing nothing, when the record is gone or no longer in progress
        (its writer finished it meanwhile).
        """
        changed = await self._db.execute(
            "UPDATE hermes.responses SET data = ?, status = ? WHERE response_id = ? AND status = 'in_progress'",
            (json.dumps(record), _envelope_status(record), response_id),
        )
        return changed > 0

    async def delete(self, response_id: str) -> bool:
        """Remove a record and every conversation name pointing at it."""
        async with self._db.transaction():
            removed = await self._db.execute("DELETE FROM hermes.responses WHERE response_id = ?", (response_id,))
            await self._db.execute("DELETE FROM hermes.conversations WHERE response_id = ?", (response_id,))
        return removed > 0

    async def count(self) -> int:
        row = await self._db.fetch_one("SELECT count(*) FROM hermes.responses")
        return int(row[0]) if row else 0

    async def get_conversation(self, name: str) -> str | None:
        row = await self._db.fetch_one("SELECT response_id FROM hermes.conversations WHERE name = ?", (name,))
        return None if row is None else str(row[0])

    async def set_conversation(self, name: str, response_id: str) -> None:
        await self._db.execute(
            "INSERT INTO hermes.conversations (name, response_id) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET response_id = excluded.response_id",
            (name, response_id),
        )

    async def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The output item with this id in any stored response (for ``item_reference``)."""
        row = await self._db.fetch_one(self._dialect.find_output_item, (item_id,))
        if row is None:
            return None
        try:
            item = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return item if isinstance(item, dict) else None
