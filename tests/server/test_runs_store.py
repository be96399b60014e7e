"""The durable run rows and idempotency receipts on SQLite: status rows, orphans, pruning.

(The same rules on both backends: tests/storage_contract/test_records_contract.py.)"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.store.api import Storage
from hermes.store.records import RunRecord
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.store.sqlite.repair import repair_runs


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    opened = open_sqlite_storage(tmp_path / "home", retention=10.0)
    yield opened
    await opened.aclose()


def _record(run_id: str = "run_1", status: str = "running", **kw) -> RunRecord:
    return RunRecord(run_id=run_id, status=status, created_at=100.0, updated_at=100.0, **kw)


async def test_file_is_private(tmp_path: Path) -> None:
    storage = open_sqlite_storage(tmp_path / "sub")
    await storage.runs.put(_record())
    await storage.aclose()
    assert stat.S_IMODE(os.stat(tmp_path / "sub" / "state.db").st_mode) == 0o600
    assert not (tmp_path / "sub" / "runs.db").exists()  # one file


async def test_put_get_roundtrip_and_json(storage: Storage) -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    await storage.runs.put(_record(session_id="s1", output="Done.", usage=usage))
    got = await storage.runs.get("run_1")
    assert got is not None
    assert got.session_id == "s1"
    assert got.usage == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    body = got.to_json()
    assert body["object"] == "hermes.run"
    assert body["status"] == "running"
    assert "error" not in body
    assert await storage.runs.get("run_missing") is None


async def test_status_survives_reopen(tmp_path: Path) -> None:
    first = open_sqlite_storage(tmp_path)
    await first.runs.put(_record(status="completed", output="ok"))
    await first.aclose()
    again = open_sqlite_storage(tmp_path)
    got = await again.runs.get("run_1")
    assert got is not None and got.output == "ok"
    await again.aclose()


async def test_recover_orphans_marks_dead_owners_interrupted(storage: Storage) -> None:
    await storage.runs.put(_record("run_dead", owner_pid=999_999_999))
    await storage.runs.put(_record("run_mine", owner_pid=os.getpid()))
    await storage.runs.put(_record("run_done", status="completed", owner_pid=999_999_999))
    assert await repair_runs(storage.runs) == 1  # type: ignore[arg-type]
    dead = await storage.runs.get("run_dead")
    assert dead is not None and dead.status == "interrupted" and dead.error
    assert (await storage.runs.get("run_mine")).status == "running"  # type: ignore[union-attr]
    assert (await storage.runs.get("run_done")).status == "completed"  # type: ignore[union-attr]


async def test_mark_interrupted_leaves_settled_runs(storage: Storage) -> None:
    await storage.runs.put(_record("run_a"))
    await storage.runs.put(_record("run_b", status="failed"))
    assert await storage.runs.mark_interrupted(["run_a", "run_b"]) == ["run_a"]
    assert (await storage.runs.get("run_b")).status == "failed"  # type: ignore[union-attr]


async def test_receipt_claim_then_find_then_conflict(storage: Storage) -> None:
    receipts = storage.receipts
    assert await receipts.find_receipt("scope", "key-1") is None
    assert await receipts.claim_receipt("scope", "key-1", "fp1", "run_1", now=1000.0) is None
    again = await receipts.claim_receipt("scope", "key-1", "fp2", "run_2", now=1001.0)
    assert again is not None and again.run_id == "run_1" and again.fingerprint == "fp1"
    assert (await receipts.find_receipt("scope", "key-1", now=1002.0)).run_id == "run_1"  # type: ignore[union-attr]
    # Scopes are separate namespaces.
    assert await receipts.claim_receipt("other", "key-1", "fp2", "run_3", now=1002.0) is None


async def test_receipts_expire_after_retention(storage: Storage) -> None:
    receipts = storage.receipts
    await receipts.claim_receipt("scope", "k", "fp", "run_1", now=1000.0)
    assert await receipts.find_receipt("scope", "k", now=1011.0) is None
    # An expired receipt may be claimed again.
    assert await receipts.claim_receipt("scope", "k", "fp", "run_2", now=1011.0) is None
    assert (await receipts.find_receipt("scope", "k", now=1012.0)).run_id == "run_2"  # type: ignore[union-attr]


async def test_prune_keeps_unsettled_runs(storage: Storage) -> None:
    await storage.runs.put(_record("run_old_done", status="completed"))
    await storage.runs.put(_record("run_old_live", status="running"))
    await storage.receipts.claim_receipt("scope", "k", "fp", "run_old_done", now=100.0)
    assert await storage.receipts.prune_receipts(now=1000.0) + await storage.runs.prune_runs(now=1000.0) == 2
    assert await storage.runs.get("run_old_done") is None
    assert await storage.runs.get("run_old_live") is not None


async def test_use_after_close_is_a_store_error(tmp_path: Path) -> None:
    storage = open_sqlite_storage(tmp_path)
    await storage.aclose()
    with pytest.raises(StoreError, match="closed"):
        await storage.runs.get("run_1")
