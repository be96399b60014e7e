"""`Receipts`: Idempotency-Key receipts (`ReceiptStore`), written once for both backends.

A receipt maps (scope, key) to the request's fingerprint and the run that answers it
(`POST /v1/runs`), or (the OpenAI endpoints) to a claim that computes an answer and,
once computed, the JSON answer.

Invariants:

- A claim is one statement, `INSERT … ON CONFLICT DO UPDATE … WHERE <the old receipt
  is no longer live>`: of two concurrent claims of a live key exactly one writes, the
  other reads the winner's receipt. `store_answer` is one such statement too (it writes
  when the receipt is ours, or no other live claim is computing).
- A receipt with `expires_at` (a claim or a stored answer) is live until then; one
  without is live `retention` seconds after its last update.
"""

from __future__ import annotations

import json
import time
from typing import Any

from hermes.store.records import RETENTION_SECONDS, Receipt
from hermes.store.sql import Executor, Row

__all__ = ["Receipts"]

_COLUMNS = "scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at"


def _live(table: str = "") -> str:
    """SQL: the receipt is live (parameters: now - retention, now)."""
    return (
        f"(({table}expires_at IS NULL AND {table}updated_at >= ?) "
        f"OR ({table}expires_at IS NOT NULL AND {table}expires_at >= ?))"
    )


_REPLACE = (
    f"INSERT INTO hermes.receipts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
    "run_id = excluded.run_id, created_at = excluded.created_at, updated_at = excluded.updated_at, "
    "answer = excluded.answer, expires_at = excluded.expires_at "
)
_CLAIM = _REPLACE + f"WHERE NOT {_live('hermes.receipts.')} RETURNING run_id"
_ANSWER = (
    _REPLACE + "WHERE hermes.receipts.run_id = excluded.run_id OR NOT (hermes.receipts.answer IS NULL "
    "AND hermes.receipts.expires_at IS NOT NULL AND hermes.receipts.expires_at >= ?) RETURNING run_id"
)


def _receipt(row: Row) -> Receipt:
    scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at = row
    return Receipt(
        scope, key, fingerprint, run_id, created_at, updated_at,
        answer=json.loads(answer) if answer is not None else None, expires_at=expires_at,
    )  # fmt: skip


class Receipts:
    """See the module docstring."""

    def __init__(self, db: Executor, *, retention: float = RETENTION_SECONDS) -> None:
        self._db = db
        self.retention = retention

    async def find_receipt(self, scope: str, key: str, *, now: float | None = None) -> Receipt | None:
        """The live receipt for (scope, key), or None (expired receipts do not count)."""
        now = time.time() if now is None else now
        row = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM hermes.receipts WHERE scope = ? AND key = ? AND {_live()}",
            (scope, key, now - self.retention, now),
        )
        return None if row is None else _receipt(row)

    async def claim_receipt(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        *,
        now: float | None = None,
        expires_at: float | None = None,
    ) -> Receipt | None:
        """Record that (scope, key) starts `run_id` (with `expires_at`: a claim computing
        an answer, lapsing then unless held longer or answered).

        Returns None when the claim succeeded, or the live receipt that got there first.
        An expired receipt for the same key is replaced.
        """
        now = time.time() if now is None else now
        for _ in range(8):
            # fetch_all: a RETURNING statement is read to its end (SQLite finishes it then).
            won = await self._db.fetch_all(
                _CLAIM, (scope, key, fingerprint, run_id, now, now, None, expires_at, now - self.retention, now)
            )
            if won:
                return None
            row = await self._db.fetch_one(
                f"SELECT {_COLUMNS} FROM hermes.receipts WHERE scope = ? AND key = ?", (scope, key)
            )
            if row is not None:
                return _receipt(row)
            # The winner's row was pruned in between: claim again.
        return await self.find_receipt(scope, key, now=now)

    async def hold_receipt(self, scope: str, key: str, run_id: str, *, expires_at: float) -> bool:
        """Extend the claim `run_id` holds on (scope, key); False when it holds none."""
        changed = await self._db.execute(
            "UPDATE hermes.receipts SET expires_at = ? WHERE scope = ? AND key = ? AND run_id = ? "
            "AND answer IS NULL AND expires_at IS NOT NULL",
            (expires_at, scope, key, run_id),
        )
        return bool(changed)

    async def store_answer(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        answer: dict[str, Any],
        *,
        expires_at: float,
        now: float | None = None,
    ) -> bool:
        """Store the answer of (scope, key) computed by `run_id`: settles its claim, or
        replaces the key's receipt unless another claim is computing. True when stored."""
        now = time.time() if now is None else now
        stored = await self._db.fetch_all(
            _ANSWER, (scope, key, fingerprint, run_id, now, now, json.dumps(answer), expires_at, now)
        )
        return bool(stored)

    async def release_receipt(self, scope: str, key: str, run_id: str) -> None:
        """Drop the claim `run_id` holds on (scope, key) (its computation failed)."""
        await self._db.execute(
            "DELETE FROM hermes.receipts WHERE scope = ? AND key = ? AND run_id = ? AND answer IS NULL",
            (scope, key, run_id),
        )

    async def touch_receipts(self, run_id: str, *, now: float | None = None) -> None:
        """Restart the retention clock of the receipts of `run_id` (it just settled)."""
        await self._db.execute(
            "UPDATE hermes.receipts SET updated_at = ? WHERE run_id = ?", (time.time() if now is None else now, run_id)
        )

    async def prune_receipts(self, *, now: float | None = None) -> int:
        """Drop the receipts that are no longer live. Returns rows removed."""
        now = time.time() if now is None else now
        return await self._db.execute(f"DELETE FROM hermes.receipts WHERE NOT {_live()}", (now - self.retention, now))
