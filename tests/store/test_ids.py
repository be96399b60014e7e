"""hermes.ids: every identifier format, and the one session-id generator."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import pytest

from hermes import ids
from hermes.testing.state_db import SyncStateDb


def test_new_session_ids_carry_their_utc_second_and_sort_by_it() -> None:
    first = ids.new_session_id(0.0)
    assert re.fullmatch(r"19700101_000000_[0-9a-f]{6}", first)
    later = ids.new_session_id(1_700_000_000.5)
    assert later.startswith("20231114_221320_")
    assert first < later
    assert ids.SESSION_ID.match(ids.new_session_id())


def test_new_session_ids_differ_within_one_second() -> None:
    made = {ids.new_session_id(1_700_000_000.0) for _ in range(200)}
    assert len(made) > 190  # 24 random bits each


def test_candidate_ids_share_one_second_and_differ() -> None:
    batch = ids.new_session_ids(8, 1_700_000_000.5)
    assert len(set(batch)) == 8
    assert all(ids.SESSION_ID.match(one) and one.startswith("20231114_221320_") for one in batch)
    assert ids.new_session_ids(0) == []


def test_short_session_id() -> None:
    assert ids.short_session_id("20240101_120000_a1b2c3") == "a1b2c3"
    assert ids.short_session_id("my-own-session-id") == "my-own-s"


def test_derived_session_id_is_pinned_by_the_api_contract() -> None:
    expected = "api-" + hashlib.sha256(b"Be brief.\nhello").hexdigest()[:16]
    assert ids.derived_session_id("Be brief.", "hello") == expected
    assert ids.derived_session_id(None, "hello") == ids.derived_session_id("", "hello")
    assert ids.derived_session_id("Be brief.", "hello") != ids.derived_session_id("Be brief.", "hello!")
    assert ids.DERIVED_SESSION_ID.match(expected)
    # Lone surrogates (from JSON "\ud800") still hash instead of raising.
    assert ids.DERIVED_SESSION_ID.match(ids.derived_session_id(None, "\ud800"))


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (ids.new_run_id, r"run_[0-9a-f]{32}"),
        (ids.new_response_id, r"resp_[0-9a-f]{28}"),
        (ids.new_completion_id, r"chatcmpl-[0-9a-f]{29}"),
        (ids.new_message_id, r"msg_[0-9a-f]{32}"),
        (ids.new_call_id, r"call_[0-9a-f]{24}"),
        (lambda: ids.new_item_id("fco_"), r"fco_[0-9a-f]{24}"),
    ],
)
def test_minted_id_formats(make: Callable[[], str], pattern: str) -> None:
    values = {make() for _ in range(50)}
    assert len(values) == 50
    assert all(re.fullmatch(pattern, value) for value in values)
    assert ids.RUN_ID.match(ids.new_run_id())


def test_the_store_names_new_sessions_with_the_shared_generator() -> None:
    with SyncStateDb(":memory:") as store:
        session = store.create_session(source="api_server")
        child = store.fork_session(session.id)
    assert ids.SESSION_ID.match(session.id)
    assert ids.SESSION_ID.match(child.id)
