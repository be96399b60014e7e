"""Stored responses on SQLite (LRU, conversation names, file mode) and the Idempotency-Key checks.

(The same rules on both backends: tests/storage_contract/test_records_contract.py.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.runs.idempotency import fingerprint
from hermes.server.http.errors import RequestValidationError
from hermes.server.http.request import validate_key
from hermes.store.rules.responses import Responses
from hermes.testing.state_db import SyncStateDb


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    made: list[SyncStateDb] = []

    def make(max_size: int = 10) -> Responses:
        path = ":memory:" if request.param == "memory" else tmp_path / f"rs{len(made)}" / "state.db"
        state = SyncStateDb(path)
        made.append(state)
        return Responses(state.executor, state.dialect, max_size=max_size)

    yield make
    for state in made:
        state.close()


async def test_put_get_update_delete(store) -> None:
    s = store()
    assert await s.get("resp_missing") is None
    await s.put("resp_1", {"output": "v1"})
    assert await s.get("resp_1") == {"output": "v1"}
    await s.put("resp_1", {"output": "v2"})
    assert await s.get("resp_1") == {"output": "v2"}
    assert await s.count() == 1
    assert await s.delete("resp_1") is True
    assert await s.get("resp_1") is None
    assert await s.count() == 0
    assert await s.delete("resp_1") is False


async def test_lru_eviction_and_refresh(store) -> None:
    s = store(max_size=3)
    for i in range(1, 4):
        await s.put(f"resp_{i}", {"n": i})
    await s.get("resp_1")
    await s.put("resp_4", {"n": 4})
    assert await s.get("resp_2") is None
    assert await s.get("resp_1") is not None
    assert await s.count() == 3


async def test_conversation_mapping_cleaned_on_delete_and_eviction(store) -> None:
    s = store(max_size=2)
    await s.put("resp_1", {"n": 1})
    await s.set_conversation("chat-a", "resp_1")
    await s.put("resp_2", {"n": 2})
    await s.set_conversation("chat-b", "resp_2")
    await s.put("resp_3", {"n": 3})
    assert await s.get_conversation("chat-a") is None
    assert await s.get_conversation("chat-b") == "resp_2"
    await s.delete("resp_2")
    assert await s.get_conversation("chat-b") is None


def _open(path: Path, max_size: int = 10) -> tuple[SyncStateDb, Responses]:
    state = SyncStateDb(path)
    return state, Responses(state.executor, state.dialect, max_size=max_size)


async def test_lru_order_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    state, s = _open(path, max_size=2)
    await s.put("a", {})
    await s.put("b", {})
    await s.get("a")
    state.close()
    state, s = _open(path, max_size=2)
    await s.put("c", {})
    assert await s.get("b") is None and await s.get("a") is not None
    state.close()


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
async def test_file_is_owner_only_under_permissive_umask(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    old = os.umask(0o022)
    try:
        state, s = _open(path)
        await s.put("resp_secret", {"conversation_history": [{"role": "tool", "content": "marker"}]})
    finally:
        os.umask(old)
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.exists():
            assert stat.S_IMODE(candidate.stat().st_mode) == 0o600, candidate
    state.close()


# ---- Idempotency-Key (the answers themselves: tests/runs/test_idempotency.py) ----------------


def test_key_validation_and_fingerprint() -> None:
    assert validate_key(None) is None
    assert validate_key("abc-123") == "abc-123"
    for bad in ("", "a b", "x" * 256, "é"):
        with pytest.raises(RequestValidationError):
            validate_key(bad)
    a = fingerprint({"messages": [1], "other": 1}, ["messages"])
    assert a == fingerprint({"messages": [1], "other": 2}, ["messages"])
    assert a != fingerprint({"messages": [2]}, ["messages"])
    assert a != fingerprint({"messages": [1]}, ["messages"], session_key="k")


async def test_response_store_errors_are_store_errors(tmp_path: Path) -> None:
    state, s = _open(tmp_path / "state.db")
    state.close()
    with pytest.raises(StoreError, match="state.db"):
        await s.get("resp_1")
    with pytest.raises(StoreError, match="state.db"):
        await s.put("resp_1", {"n": 1})
