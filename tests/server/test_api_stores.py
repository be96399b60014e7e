"""ResponseStore (LRU, conversation names, file mode) and the Idempotency-Key checks."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.runs.idempotency import fingerprint
from hermes.server.http.errors import RequestValidationError
from hermes.server.http.request import validate_key
from hermes.store.sqlite.responses import ResponseStore


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    made: list[ResponseStore] = []

    def make(max_size: int = 10) -> ResponseStore:
        path = ":memory:" if request.param == "memory" else tmp_path / f"rs{len(made)}.db"
        s = ResponseStore(path, max_size=max_size)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_put_get_update_delete(store) -> None:
    s = store()
    assert s.get("resp_missing") is None
    s.put("resp_1", {"output": "v1"})
    assert s.get("resp_1") == {"output": "v1"}
    s.put("resp_1", {"output": "v2"})
    assert s.get("resp_1") == {"output": "v2"}
    assert len(s) == 1
    assert s.delete("resp_1") is True
    assert s.get("resp_1") is None
    assert len(s) == 0
    assert s.delete("resp_1") is False


def test_lru_eviction_and_refresh(store) -> None:
    s = store(max_size=3)
    for i in range(1, 4):
        s.put(f"resp_{i}", {"n": i})
    s.get("resp_1")
    s.put("resp_4", {"n": 4})
    assert s.get("resp_2") is None
    assert s.get("resp_1") is not None
    assert len(s) == 3


def test_conversation_mapping_cleaned_on_delete_and_eviction(store) -> None:
    s = store(max_size=2)
    s.put("resp_1", {"n": 1})
    s.set_conversation("chat-a", "resp_1")
    s.put("resp_2", {"n": 2})
    s.set_conversation("chat-b", "resp_2")
    s.put("resp_3", {"n": 3})
    assert s.get_conversation("chat-a") is None
    assert s.get_conversation("chat-b") == "resp_2"
    s.delete("resp_2")
    assert s.get_conversation("chat-b") is None


def test_lru_order_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    s = ResponseStore(path, max_size=2)
    s.put("a", {})
    s.put("b", {})
    s.get("a")
    s.close()
    s = ResponseStore(path, max_size=2)
    s.put("c", {})
    assert s.get("b") is None and s.get("a") is not None
    s.close()


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_file_is_owner_only_under_permissive_umask(tmp_path: Path) -> None:
    path = tmp_path / "response_store.db"
    old = os.umask(0o022)
    try:
        s = ResponseStore(path, max_size=10)
        s.put("resp_secret", {"conversation_history": [{"role": "tool", "content": "marker"}]})
    finally:
        os.umask(old)
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.exists():
            assert stat.S_IMODE(candidate.stat().st_mode) == 0o600, candidate
    s.close()


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


def test_response_store_errors_are_store_errors(tmp_path: Path) -> None:
    s = ResponseStore(tmp_path / "rs.db")
    s.close()
    with pytest.raises(StoreError, match="response store"):
        s.get("resp_1")
    with pytest.raises(StoreError, match="response store"):
        s.put("resp_1", {"n": 1})
