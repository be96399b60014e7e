"""Stored responses, runs, receipts and instance leases behave alike on both backends."""

from __future__ import annotations

import asyncio
import time

import pytest

from hermes.store.api import Storage
from hermes.store.records import RunRecord


def run(run_id: str, status: str = "running", **fields: object) -> RunRecord:
    now = time.time()
    return RunRecord(run_id=run_id, status=status, created_at=now, updated_at=now, **fields)  # type: ignore[arg-type]


# -- responses -------------------------------------------------------------------------


async def test_responses_put_get_delete(storage: Storage) -> None:
    responses = storage.responses
    record = {"response": {"id": "resp_1", "output": "hi \x00 🎉"}, "conversation_history": [], "session_id": "s"}
    assert await responses.get("resp_1") is None
    await responses.put("resp_1", record)
    assert await responses.get("resp_1") == record
    await responses.put("resp_1", {**record, "instructions": "x"})
    assert (await responses.get("resp_1") or {}).get("instructions") == "x"
    assert await responses.count() == 1
    assert await responses.delete("resp_1") is True
    assert await responses.delete("resp_1") is False
    assert await responses.get("resp_1") is None


async def test_responses_find_output_items_by_id(storage: Storage) -> None:
    responses = storage.responses
    output = [{"id": "msg_1", "type": "message"}, {"id": "mcp_1", "type": "mcp_call", "output": "ok"}, "odd"]
    await responses.put("r1", {"response": {"id": "r1", "output": output}})
    await responses.put("r2", {"response": {"id": "r2", "output": "not a list"}})
    await responses.put("r3", {"n": 3})
    assert await responses.find_item("mcp_1") == output[1]
    assert await responses.find_item("msg_1") == output[0]
    assert await responses.find_item("r1") is None and await responses.find_item("odd") is None
    await responses.delete("r1")
    assert await responses.find_item("mcp_1") is None


async def test_responses_are_lru_bounded_and_names_go_with_them(storage: Storage) -> None:
    responses = storage.responses
    responses.max_size = 3
    for index in range(3):
        await responses.put(f"r{index}", {"n": index})
    await responses.set_conversation("chat", "r0")
    assert await responses.get("r0") == {"n": 0}  # r0 is now the most recently used
    await responses.put("r3", {"n": 3})
    assert await responses.get("r1") is None
    assert await responses.count() == 3
    assert await responses.get_conversation("chat") == "r0"
    await responses.set_conversation("chat", "r2")
    assert await responses.get_conversation("chat") == "r2"
    await responses.delete("r2")
    assert await responses.get_conversation("chat") is None
    await responses.set_conversation("gone", "r3")
    for index in range(4, 8):
        await responses.put(f"r{index}", {"n": index})
    assert await responses.get_conversation("gone") is None


# -- runs ------------------------------------------------------------------------------


async def test_runs_put_get_and_interrupt(storage: Storage) -> None:
    runs = storage.runs
    await runs.put(run("run_a", session_id="s1", model="m", usage={"input_tokens": 3}, owner_instance="i1"))
    await runs.put(run("run_b", status="completed", output="done"))
    got = await runs.get("run_a")
    assert got is not None and got.usage == {"input_tokens": 3} and got.owner_instance == "i1"
    assert (await runs.get("run_b")) is not None
    assert await runs.get("nope") is None
    changed = await runs.mark_interrupted(["run_a", "run_b", "nope"])
    assert changed == ["run_a"]
    settled = await runs.get("run_a")
    assert settled is not None and settled.status == "interrupted" and settled.last_event == "run.interrupted"
    assert settled.error_code == "interrupted" and settled.terminal
    assert await runs.mark_interrupted([]) == []


async def test_runs_latest_for_session_is_the_newest_run(storage: Storage) -> None:
    now = time.time()
    await storage.runs.put(RunRecord("run_old", "completed", now - 20, now - 20, session_id="s1"))
    await storage.runs.put(RunRecord("run_new", "running", now - 10, now - 10, session_id="s1"))
    await storage.runs.put(RunRecord("run_other", "running", now, now, session_id="s2"))
    latest = await storage.runs.latest_for_session("s1")
    assert latest is not None and latest.run_id == "run_new" and latest.status == "running"
    assert await storage.runs.latest_for_session("nobody") is None


async def test_runs_prune_only_old_settled_rows(storage: Storage) -> None:
    old = time.time() - 10 * 24 * 3600
    await storage.runs.put(RunRecord("old_done", "completed", old, old))
    await storage.runs.put(RunRecord("old_running", "running", old, old))
    await storage.runs.put(run("new_done", status="failed"))
    assert await storage.runs.prune_runs() == 1
    assert await storage.runs.get("old_done") is None
    assert await storage.runs.get("old_running") is not None


async def test_one_unsettled_run_per_session(storage: Storage) -> None:
    from hermes.errors import SessionBusy

    runs = storage.runs
    await runs.put(run("run_a", session_id="s1"))
    with pytest.raises(SessionBusy) as busy:
        await runs.put(run("run_b", "queued", session_id="s1"))
    assert busy.value.session_id == "s1" and busy.value.code == "run_already_active"
    assert await runs.get("run_b") is None
    await runs.put(run("run_a", "stopping", session_id="s1"))  # the unsettled run itself changes freely
    await runs.put(run("run_c", session_id="s2"))
    await runs.put(run("run_d"))  # no session: not limited
    await runs.put(run("run_e"))
    await runs.put(run("run_a", "cancelled", session_id="s1"))
    await runs.put(run("run_b", "queued", session_id="s1"))  # s1 is free again
    assert (await runs.latest_for_session("s1") or pytest.fail("missing")).run_id == "run_b"


# -- receipts --------------------------------------------------------------------------


async def test_receipts_claim_find_touch_prune(storage: Storage) -> None:
    receipts = storage.receipts
    now = time.time()
    assert await receipts.claim_receipt("key1", "k", "fp1", "run_1", now=now) is None
    winner = await receipts.claim_receipt("key1", "k", "fp2", "run_2", now=now + 1)
    assert winner is not None and (winner.run_id, winner.fingerprint) == ("run_1", "fp1")
    found = await receipts.find_receipt("key1", "k", now=now + 2)
    assert found is not None and found.run_id == "run_1"
    assert await receipts.find_receipt("key2", "k") is None
    later = now + receipts.retention + 5
    assert await receipts.find_receipt("key1", "k", now=later) is None
    assert await receipts.claim_receipt("key1", "k", "fp3", "run_3", now=later) is None  # expired: replaced
    assert (await receipts.find_receipt("key1", "k", now=later) or pytest.fail("missing")).run_id == "run_3"
    await receipts.touch_receipts("run_3", now=later + 100)
    assert await receipts.prune_receipts(now=later + receipts.retention + 50) == 0
    assert await receipts.prune_receipts(now=later + receipts.retention + 500) == 1


async def test_concurrent_claims_have_one_winner(storage: Storage) -> None:
    results = await asyncio.gather(
        *(storage.receipts.claim_receipt("scope", "same-key", f"fp{i}", f"run_{i}") for i in range(8))
    )
    winners = [i for i, result in enumerate(results) if result is None]
    assert len(winners) == 1
    assert {result.run_id for result in results if result is not None} == {f"run_{winners[0]}"}


# -- leases ----------------------------------------------------------------------------


async def test_leases_and_orphaned_runs(storage: Storage) -> None:
    leases = storage.leases
    alive = await leases.register_instance("alive", ttl=300, host="h1", pid=11)
    assert alive.expires_at > alive.heartbeat_at
    # Expired a second ago: ttl=0 expires at this very millisecond of the database's clock, and a
    # query in the same millisecond still counts that lease as held (expires_at >= now).
    await leases.register_instance("dead", ttl=-1, host="h2", pid=22)
    await storage.runs.put(run("r_alive", owner_instance="alive"))
    await storage.runs.put(run("r_dead", owner_instance="dead"))
    await storage.runs.put(run("r_dead_done", status="completed", owner_instance="dead"))
    await storage.runs.put(run("r_vanished", owner_instance="never-registered"))
    await storage.runs.put(run("r_unowned"))

    async def orphans() -> list[str]:
        return [record.run_id for record in await leases.orphaned_runs()]

    assert sorted(await orphans()) == ["r_dead", "r_vanished"]
    beat = await leases.heartbeat("dead", ttl=300)
    assert beat.expires_at > beat.heartbeat_at >= alive.started_at - 1
    assert await orphans() == ["r_vanished"]
    await leases.release_instance("alive")
    assert sorted(await orphans()) == ["r_alive", "r_vanished"]
    # (On PostgreSQL the storage's own lease is there too: the lease keeper holds it.)
    others = [lease.instance_id for lease in await leases.list_instances() if lease.instance_id != storage.instance_id]
    assert others == ["dead"]
    revived = await leases.heartbeat("alive", ttl=300)  # a pruned lease is re-created
    assert revived.instance_id == "alive"
    await leases.register_instance("old", ttl=-1, host="h3", pid=33)
    assert await leases.prune_instances(expired_for=3600) == 0
    assert await leases.prune_instances(expired_for=-1) == 1
    assert {lease.instance_id for lease in await leases.list_instances()} - {storage.instance_id} == {"alive", "dead"}


async def test_postgres_a_settled_run_stays_settled(pg_storage: Storage) -> None:
    """The owner's late status write (its lease lapsed while another instance settled the
    run) cannot bring the run back or change how it ended; its own terminal updates can."""
    runs = pg_storage.runs
    await runs.put(run("run_a", "running", owner_instance="inst_a"))
    assert await runs.mark_interrupted(["run_a"]) == ["run_a"]
    await runs.put(run("run_a", "running", owner_instance="inst_a"))
    await runs.put(run("run_a", "completed", owner_instance="inst_a", output="late"))
    settled = await runs.get("run_a")
    assert settled is not None and (settled.status, settled.output) == ("interrupted", None)
    await runs.put(run("run_b", "completed", output="first"))
    await runs.put(run("run_b", "completed", output="final"))
    again = await runs.get("run_b")
    assert again is not None and again.output == "final"


async def test_receipts_hold_a_claimed_answer_until_it_expires(storage: Storage) -> None:
    receipts = storage.receipts
    now = 1_000_000.0
    assert await receipts.claim_receipt("chat", "k", "fp", "claim_1", now=now, expires_at=now + 30) is None
    pending = await receipts.claim_receipt("chat", "k", "fp", "claim_2", now=now + 1, expires_at=now + 31)
    assert pending is not None and pending.run_id == "claim_1" and pending.pending and pending.answer is None
    assert await receipts.hold_receipt("chat", "k", "claim_1", expires_at=now + 60)
    assert not await receipts.hold_receipt("chat", "k", "claim_2", expires_at=now + 60)
    assert await receipts.claim_receipt("chat", "k", "fp", "claim_2", now=now + 45, expires_at=now + 75) is not None
    # Another fingerprint's answer does not replace a live claim; the claim's own does.
    assert not await receipts.store_answer("chat", "k", "fp2", "other", {"n": 0}, expires_at=now + 300, now=now + 46)
    answer = {"status": 200, "body": {"text": "é \x00 🎉"}, "headers": {"X-Hermes-Session-Id": "s"}}
    assert await receipts.store_answer("chat", "k", "fp", "claim_1", answer, expires_at=now + 350, now=now + 50)
    stored = await receipts.find_receipt("chat", "k", now=now + 51)
    assert stored is not None and stored.answer == answer and not stored.pending
    await receipts.release_receipt("chat", "k", "claim_1")  # an answered receipt is not released
    assert await receipts.find_receipt("chat", "k", now=now + 52) is not None
    # Another fingerprint's answer replaces a stored answer (as a fresh computation does).
    assert await receipts.store_answer("chat", "k", "fp2", "claim_3", {"n": 3}, expires_at=now + 360, now=now + 60)
    assert (await receipts.find_receipt("chat", "k", now=now + 61) or pytest.fail("gone")).answer == {"n": 3}
    assert await receipts.find_receipt("chat", "k", now=now + 361) is None
    assert await receipts.claim_receipt("chat", "k", "fp", "claim_4", now=now + 361, expires_at=now + 391) is None
    await receipts.release_receipt("chat", "k", "claim_4")  # a failed computation
    assert await receipts.find_receipt("chat", "k", now=now + 362) is None
    assert await receipts.claim_receipt("chat", "x", "fp", "claim_5", now=now, expires_at=now + 30) is None
    assert await receipts.prune_receipts(now=now + 29) == 0
    assert await receipts.prune_receipts(now=now + 31) == 1


# -- what start-up repair reads (the rules of `hermes.store.rules`, on both backends) ----


async def test_responses_keep_their_status_and_writer_for_repair(storage: Storage) -> None:
    from hermes.store.owner import current_owner
    from hermes.store.rules.responses import Responses

    responses = storage.responses
    assert isinstance(responses, Responses)  # the one set of rules, on either backend
    streaming = {"response": {"id": "r1", "status": "in_progress"}, "session_id": "s"}
    await responses.put("r1", streaming)
    await responses.put("r2", {"response": {"id": "r2", "status": "completed"}})
    await responses.put("r3", {"not": "an envelope"})
    pending = await responses.in_progress()
    assert [(p.response_id, p.record, p.owner) for p in pending] == [("r1", streaming, current_owner())]
    settled = {"response": {"id": "r1", "status": "incomplete"}, "session_id": "s"}
    assert await responses.settle("r1", settled)
    assert await responses.in_progress() == []
    assert not await responses.settle("r1", streaming)  # no longer in progress: unchanged
    assert not await responses.settle("r_missing", streaming)
    assert await responses.get("r1") == settled


async def test_runs_list_the_unsettled_with_their_owner(storage: Storage) -> None:
    from hermes.store.owner import current_owner
    from hermes.store.rules.runs import Runs

    runs = storage.runs
    assert isinstance(runs, Runs)
    me = current_owner()
    await runs.put(run("run_mine", owner_pid=me.pid))
    await runs.put(run("run_other", owner_pid=me.pid + 1))
    await runs.put(run("run_done", "completed", owner_pid=me.pid))
    unsettled = {entry.run_id: entry for entry in await runs.unsettled()}
    assert set(unsettled) == {"run_mine", "run_other"}
    # Only this process's own rows carry its host and start identity.
    mine, other = unsettled["run_mine"], unsettled["run_other"]
    assert (mine.owner_pid, mine.owner_host, mine.owner_started) == (me.pid, me.host, me.started)
    assert (other.owner_pid, other.owner_host, other.owner_started) == (me.pid + 1, None, None)


async def test_a_conversation_name_moves_to_its_newest_response(storage: Storage) -> None:
    responses = storage.responses
    await responses.put("r1", {"n": 1})
    await responses.put("r2", {"n": 2})
    assert await responses.get_conversation("chat") is None
    await responses.set_conversation("chat", "r1")
    await responses.set_conversation("chat", "r2")
    assert await responses.get_conversation("chat") == "r2"
    await responses.delete("r1")  # the old response going takes no newer name with it
    assert await responses.get_conversation("chat") == "r2"
