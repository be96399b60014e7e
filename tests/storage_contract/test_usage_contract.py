"""Usage rows: every token a session counts, per model and UTC day (both backends)."""

from __future__ import annotations

import time

import pytest

from hermes.errors import SessionNotFound
from hermes.store.api import Storage
from hermes.store.records import NewMessage, UsageTotal
from hermes.store.rules.usage import utc_day


async def test_finish_turn_and_add_usage_write_rows_per_model(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="tui", model="gpt-4o")
    turn, _ = await store.open_turn(session.id, NewMessage(role="user", content="hi"))
    await store.finish_turn(
        turn.id, session.id, "completed", input_tokens=100, output_tokens=20, cached_input_tokens=40
    )
    second, _ = await store.open_turn(session.id, NewMessage(role="user", content="again"))
    await store.finish_turn(second.id, session.id, "completed", input_tokens=10, output_tokens=2, model="other")
    await store.add_usage(session.id, input_tokens=5, output_tokens=1)  # e.g. a compaction's summary
    await store.add_usage(session.id, input_tokens=0, output_tokens=0)  # writes no row
    other = await store.create_session(source="cli")
    record = await store.get_session(session.id)
    assert (record.input_tokens, record.output_tokens) == (115, 23)
    assert await store.session_usage([session.id, other.id]) == [
        UsageTotal("gpt-4o", 105, 40, 21, session_id=session.id),
        UsageTotal("other", 10, 0, 2, session_id=session.id),
    ]
    assert await store.session_usage([]) == []
    today = utc_day(time.time())
    assert await store.usage_totals() == [
        UsageTotal("gpt-4o", 105, 40, 21, day=today),
        UsageTotal("other", 10, 0, 2, day=today),
    ]
    with pytest.raises(SessionNotFound):
        await store.add_usage("nope", input_tokens=1, output_tokens=1)
    # Rows go with their session; a fork starts with none.
    fork = await store.fork_session(session.id)
    assert await store.session_usage([fork.id]) == []
    await store.delete_session(session.id)
    assert await store.usage_totals() == []


def test_utc_day() -> None:
    assert utc_day(0) == "1970-01-01"
    assert utc_day(86399.9) == "1970-01-01"
