"""The durable run store: status rows, idempotency receipts, orphans, pruning."""

from __future__ import annotations

import os
import stat

import pytest

from hermes.errors import StoreError
from hermes.store.records import RunRecord
from hermes.store.sqlite.runs import RunStore, open_run_store


@pytest.fixture
def store(tmp_path):
    s = open_run_store(tmp_path / "runs.db")
    yield s
    s.close()


def _record(run_id: str = "run_1", status: str = "running", **kw) -> RunRecord:
    return RunRecord(run_id=run_id, status=status, created_at=100.0, updated_at=100.0, **kw)


def test_file_is_private(tmp_path):
    s = open_run_store(tmp_path / "sub" / "runs.db")
    s.put(_record())
    s.close()
    assert stat.S_IMODE(os.stat(tmp_path / "sub" / "runs.db").st_mode) == 0o600


def test_put_get_roundtrip_and_json(store):
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    store.put(_record(session_id="s1", output="Done.", usage=usage))
    got = store.get("run_1")
    assert got is not None
    assert got.session_id == "s1"
    assert got.usage == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    body = got.to_json()
    assert body["object"] == "hermes.run"
    assert body["status"] == "running"
    assert "error" not in body
    assert store.get("run_missing") is None


def test_status_survives_reopen(tmp_path):
    first = open_run_store(tmp_path / "runs.db")
    first.put(_record(status="completed", output="ok"))
    first.close()
    again = open_run_store(tmp_path / "runs.db")
    assert again.get("run_1").output == "ok"
    again.close()


def test_recover_orphans_marks_dead_owners_interrupted(store):
    store.put(_record("run_dead", owner_pid=999_999_999))
    store.put(_record("run_mine", owner_pid=os.getpid()))
    store.put(_record("run_done", status="completed", owner_pid=999_999_999))
    assert store.recover_orphans() == 1
    assert store.get("run_dead").status == "interrupted"
    assert store.get("run_dead").error
    assert store.get("run_mine").status == "running"
    assert store.get("run_done").status == "completed"


def test_mark_interrupted_leaves_settled_runs(store):
    store.put(_record("run_a"))
    store.put(_record("run_b", status="failed"))
    assert store.mark_interrupted(["run_a", "run_b"]) == 1
    assert store.get("run_b").status == "failed"


def test_receipt_claim_then_find_then_conflict(store):
    assert store.find_receipt("scope", "key-1") is None
    assert store.claim_receipt("scope", "key-1", "fp1", "run_1", now=1000.0) is None
    again = store.claim_receipt("scope", "key-1", "fp2", "run_2", now=1001.0)
    assert again is not None and again.run_id == "run_1" and again.fingerprint == "fp1"
    assert store.find_receipt("scope", "key-1", now=1002.0).run_id == "run_1"
    # Scopes are separate namespaces.
    assert store.claim_receipt("other", "key-1", "fp2", "run_3", now=1002.0) is None


def test_receipts_expire_after_retention(tmp_path):
    s = RunStore(tmp_path / "runs.db", retention=10.0)
    s.claim_receipt("scope", "k", "fp", "run_1", now=1000.0)
    assert s.find_receipt("scope", "k", now=1011.0) is None
    # An expired receipt may be claimed again.
    assert s.claim_receipt("scope", "k", "fp", "run_2", now=1011.0) is None
    assert s.find_receipt("scope", "k", now=1012.0).run_id == "run_2"
    s.close()


def test_prune_keeps_unsettled_runs(tmp_path):
    s = RunStore(tmp_path / "runs.db", retention=10.0)
    s.put(_record("run_old_done", status="completed"))
    s.put(_record("run_old_live", status="running"))
    s.claim_receipt("scope", "k", "fp", "run_old_done", now=100.0)
    assert s.prune(now=1000.0) == 2
    assert s.get("run_old_done") is None
    assert s.get("run_old_live") is not None
    s.close()


def test_use_after_close_is_a_store_error(tmp_path):
    s = open_run_store(tmp_path / "runs.db")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.get("run_1")
