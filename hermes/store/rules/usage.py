"""Usage rows: every token a session counts, per model and UTC day, for pricing.

The rules are written once here over an `Executor` (neutral SQL, both backends);
`Sessions` writes a row with each usage add (`add_usage`, `finish_turn`; PostgreSQL's fused
`finish_turn` statement inserts the same row) and exposes the sums as `session_usage` /
`usage_totals`.

Invariants: a row is written in the same transaction as the session counters it adds to,
and only for a non-zero add, so a session's rows sum to its `input_tokens` /
`output_tokens`; `model` is the one given, else the session's model at that time; `day`
is the UTC date of the write (`utc_day`); rows go with their session (ON DELETE CASCADE),
and a fork starts with none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from hermes.store.records import UsageTotal
from hermes.store.sql import Executor, Row

__all__ = ["insert_usage", "session_usage", "usage_totals", "utc_day"]

COLUMNS = "session_id, model, day, input_tokens, cached_input_tokens, output_tokens"
_SUMS = "sum(input_tokens), sum(cached_input_tokens), sum(output_tokens)"


def utc_day(unix_seconds: float) -> str:
    """The UTC date of a time, as the usage rows key it (YYYY-MM-DD)."""
    return time.strftime("%Y-%m-%d", time.gmtime(unix_seconds))


async def insert_usage(
    db: Executor, session_id: str, *, model: str | None, now: float, tokens: tuple[int, int, int]
) -> None:
    """One row of (input, cached input, output) `tokens`; nothing for zero tokens."""
    if not any(tokens):
        return
    await db.execute(
        f"INSERT INTO hermes.usage ({COLUMNS}) SELECT id, coalesce(?, model), ?, ?, ?, ? "
        "FROM hermes.sessions WHERE id = ?",
        (model, utc_day(now), *tokens, session_id),
    )


def _total(model: Any, sums: Row, *, session_id: str | None = None, day: str | None = None) -> UsageTotal:
    return UsageTotal(
        model=None if model is None else str(model),
        input_tokens=int(sums[0]),
        cached_input_tokens=int(sums[1]),
        output_tokens=int(sums[2]),
        session_id=session_id,
        day=day,
    )


async def session_usage(db: Executor, session_ids: Sequence[str]) -> list[UsageTotal]:
    """The rows of these sessions summed per session and model."""
    if not session_ids:
        return []
    marks = ", ".join("?" * len(session_ids))
    rows = await db.fetch_all(
        f"SELECT session_id, model, {_SUMS} FROM hermes.usage WHERE session_id IN ({marks}) "
        "GROUP BY session_id, model ORDER BY session_id, model",
        tuple(session_ids),
    )
    return [_total(row[1], row[2:], session_id=row[0]) for row in rows]


async def usage_totals(db: Executor) -> list[UsageTotal]:
    """Every row summed per UTC day and model, oldest day first."""
    rows = await db.fetch_all(f"SELECT day, model, {_SUMS} FROM hermes.usage GROUP BY day, model ORDER BY day, model")
    return [_total(row[1], row[2:], day=row[0]) for row in rows]
