"""Start-up repair in the store: only dead owners' turns, kept drafts, placeholders, responses, runs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from recovery_helpers import owner_of, spawn_sleeper, transcript_problems, wait_until
from state_db import SyncCalls

from hermes.store.owner import ProcessOwner, current_owner, owner_gone
from hermes.store.records import NewMessage, RunRecord
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.sqlite.executor import run_now
from hermes.store.sqlite.repair import repair_after_crash
from hermes.store.transcript import SERVER_STOPPED_TOOL_RESULT
from hermes.testing.state_db import SyncStateDb, open_sync_state

TOOL_CALLS = [
    {"id": "call_a", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}},
    {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SyncStateDb]:
    with SyncStateDb(db_path) as opened:
        yield opened


@pytest.fixture
def dead_owner() -> ProcessOwner:
    proc = spawn_sleeper()
    owner = owner_of(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    assert owner_gone(owner)
    return owner


# ---- owners -----------------------------------------------------------------------------


def test_this_process_is_not_gone() -> None:
    assert not owner_gone(current_owner())


def test_a_reused_pid_with_another_start_time_is_gone() -> None:
    me = current_owner()
    assert me.started, "this host has /proc"
    assert owner_gone(dataclasses.replace(me, started=me.started + "0"))


def test_an_owner_on_another_host_is_never_called_gone() -> None:
    assert not owner_gone(ProcessOwner(host=current_owner().host + "-elsewhere", pid=2**22 + 7, started=""))


def test_a_killed_but_unreaped_process_is_gone() -> None:
    proc = spawn_sleeper()
    try:
        owner = owner_of(proc.pid)
        assert not owner_gone(owner)
        proc.kill()
        assert wait_until(lambda: owner_gone(owner), 10), "a zombie still counts as its owner"
    finally:
        proc.kill()
        proc.wait(timeout=10)


# ---- turns ------------------------------------------------------------------------------


def test_a_dead_owners_turn_is_repaired_with_its_draft_kept(
    store: SyncStateDb, dead_owner: ProcessOwner
) -> None:
    session = store.create_session(source="api_server")
    turn = store.begin_turn(session.id, owner=dead_owner)
    store.append_message(session.id, NewMessage(role="user", content="write"), turn_id=turn.id)
    store.save_draft(turn.id, "Once upon")
    store.save_draft(turn.id, "Once upon a time")
    assert store.history(session.id) == [{"role": "user", "content": "write"}]  # drafts are never sent

    repaired = store.repair_abandoned_turns()
    assert [(r.session_id, r.kept_text, r.placeholders) for r in repaired] == [(session.id, True, 0)]
    rows = store.get_messages(session.id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "write", None),
        ("assistant", "Once upon a time", "interrupted"),
    ]
    assert store.get_session(session.id).end_reason == "interrupted"
    ended = store.get_turn(turn.id)
    assert ended is not None and (ended.end_reason, ended.draft_message_id) == ("interrupted", None)
    assert store.history(session.id)[-1] == {"role": "assistant", "content": "Once upon a time"}
    assert store.repair_abandoned_turns() == []  # idempotent
    assert store.integrity_check() == "ok"


def test_dangling_tool_calls_get_the_placeholder(store: SyncStateDb, dead_owner: ProcessOwner) -> None:
    session = store.create_session(source="api_server")
    turn = store.begin_turn(session.id, owner=dead_owner)
    store.append_message(session.id, NewMessage(role="user", content="look"), turn_id=turn.id)
    store.save_draft(turn.id, "Checking.")
    store.append_message(
        session.id, NewMessage(role="assistant", content="Checking.", tool_calls=TOOL_CALLS), turn_id=turn.id
    )
    store.append_message(
        session.id,
        NewMessage(role="tool", content="a.txt", tool_call_id="call_a", tool_name="terminal"),
        turn_id=turn.id,
    )

    [repaired] = store.repair_abandoned_turns()
    assert (repaired.kept_text, repaired.placeholders) == (False, 1)
    rows = store.get_messages(session.id)
    assert [(m.role, m.tool_call_id, m.content) for m in rows] == [
        ("user", None, "look"),
        ("assistant", None, "Checking."),
        ("tool", "call_a", "a.txt"),
        ("tool", "call_b", SERVER_STOPPED_TOOL_RESULT),
    ]
    assert rows[-1].tool_name == "read_file"
    assert transcript_problems(store.history(session.id)) == []
    record = store.get_session(session.id)
    assert (record.message_count, record.tool_call_count, record.end_reason) == (4, 2, "interrupted")
    assert store.integrity_check() == "ok"


def test_a_live_owners_turn_is_left_alone(store: SyncStateDb) -> None:
    proc = spawn_sleeper()
    try:
        session = store.create_session(source="tui")
        turn = store.begin_turn(session.id, owner=owner_of(proc.pid))
        store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
        store.save_draft(turn.id, "Hel")
        assert store.repair_abandoned_turns() == []
        assert store.get_session(session.id).end_reason is None
        assert store.get_turn(turn.id).ended_at is None  # type: ignore[union-attr]
        proc.kill()
        proc.wait(timeout=10)
        assert [r.turn_id for r in store.repair_abandoned_turns()] == [turn.id]
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_this_processs_own_open_turn_is_left_alone(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
    assert run_now(repair_after_crash(store.sessions)).empty
    assert store.get_turn(turn.id).ended_at is None  # type: ignore[union-attr]


TURN_HOLDER = textwrap.dedent(
    """
    import sys, time
    from hermes.testing.state_db import open_sync_state
    from hermes.store.records import NewMessage
    store = open_sync_state(sys.argv[1])
    session = store.create_session(source="tui")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
    store.save_draft(turn.id, "streaming")
    print(session.id, flush=True)
    time.sleep(600)
    """
)


def test_another_process_does_not_repair_a_turn_while_its_owner_runs(db_path: Path) -> None:
    """A TUI turn open in one process survives `hermes sessions list` starting in another."""
    holder = subprocess.Popen(
        [sys.executable, "-c", TURN_HOLDER, str(db_path)], stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    try:
        assert holder.stdout is not None
        session_id = holder.stdout.readline().strip()
        assert session_id, "the turn holder did not start"
        listed = subprocess.run(
            [sys.executable, "-m", "hermes", "sessions", "list", "--json"],
            check=False,
            env={**_clean_env(), "HERMES_HOME": str(db_path.parent)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        with SyncStateDb(db_path) as store:
            assert store.get_session(session_id).end_reason is None
            assert [t.session_id for t in store.open_turns()] == [session_id]
            holder.kill()
            holder.wait(timeout=10)
            [repaired] = store.repair_abandoned_turns()
            assert (repaired.session_id, repaired.kept_text) == (session_id, True)
            assert store.get_messages(session_id)[-1].content == "streaming"
    finally:
        holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}


def test_two_repairers_add_one_placeholder(db_path: Path, dead_owner: ProcessOwner) -> None:
    with SyncStateDb(db_path) as one, SyncStateDb(db_path) as two:
        session = one.create_session(source="api_server")
        turn = one.begin_turn(session.id, owner=dead_owner)
        one.append_message(session.id, NewMessage(role="user", content="go"), turn_id=turn.id)
        one.append_message(session.id, NewMessage(role="assistant", tool_calls=TOOL_CALLS[:1]), turn_id=turn.id)
        stale = one.open_turns()
        assert len(stale) == 1
        assert len(two.repair_abandoned_turns()) == 1
        assert one.repair_abandoned_turns() == []
        assert [m.role for m in one.get_messages(session.id)] == ["user", "assistant", "tool"]


# ---- checkpoint API ---------------------------------------------------------------------


def test_the_assistant_message_replaces_the_draft_in_place(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
    store.save_draft(turn.id, "Hel")
    [_, draft] = store.get_messages(session.id)
    final = store.append_message(session.id, NewMessage(role="assistant", content="Hello there"), turn_id=turn.id)
    assert final.id == draft.id
    assert [(m.role, m.content) for m in store.get_messages(session.id)] == [
        ("user", "hi"),
        ("assistant", "Hello there"),
    ]
    assert [hit.message_id for hit in store.search("there")] == [draft.id]  # the index follows the update
    store.end_turn(turn.id, "completed")
    store.save_draft(turn.id, "late")  # an ended turn takes no draft
    assert store.get_session(session.id).message_count == 2
    assert store.integrity_check() == "ok"


def test_ending_a_turn_keeps_its_leftover_draft(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
    store.save_draft(turn.id, "partial")
    store.end_turn(turn.id, "failed")
    assert [(m.content, m.finish_reason) for m in store.get_messages(session.id)][-1] == ("partial", "failed")
    assert store.history(session.id)[-1] == {"role": "assistant", "content": "partial"}


def test_a_fork_leaves_a_live_draft_out(store: SyncStateDb) -> None:
    session = store.create_session(source="cli", title="t")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="hi"), turn_id=turn.id)
    store.save_draft(turn.id, "stream")
    child = store.fork_session(session.id)
    assert [m.role for m in store.get_messages(child.id)] == ["user"]
    assert store.get_session(child.id).message_count == 1


def test_turn_messages_stop_at_the_next_turn(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    first = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="one"), turn_id=first.id)
    store.append_message(session.id, NewMessage(role="assistant", content="1"), turn_id=first.id)
    store.end_turn(first.id, "completed")
    second = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="two"), turn_id=second.id)
    assert [m.content for m in store.turn_messages(first.id)] == ["one", "1"]
    assert [m.content for m in store.turn_messages(second.id)] == ["two"]
    assert store.find_turn(session.id, started_at_or_after=first.started_at) == store.get_turn(first.id)
    assert store.find_turn(session.id, started_at_or_after=second.started_at).id == second.id  # type: ignore[union-attr]


def test_history_closes_calls_left_open_by_an_older_crash(store: SyncStateDb) -> None:
    """Rows written before turns were tracked: history() still sends a valid transcript."""
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="go"))
    store.append_message(session.id, NewMessage(role="assistant", tool_calls=TOOL_CALLS))
    store.append_message(session.id, NewMessage(role="tool", content="ok", tool_call_id="call_a"))
    store.append_message(session.id, NewMessage(role="tool", content="stray", tool_call_id="call_zzz"))
    store.append_message(session.id, NewMessage(role="user", content="again"))
    history = store.history(session.id)
    assert transcript_problems(history) == []
    assert [(m["role"], m.get("tool_call_id")) for m in history] == [
        ("user", None), ("assistant", None), ("tool", "call_a"), ("tool", "call_b"), ("user", None),
    ]  # fmt: skip


# ---- responses and runs -----------------------------------------------------------------


def _in_progress(session_id: str, created_at: int) -> dict[str, object]:
    return {
        "response": {"id": "resp_x", "object": "response", "status": "in_progress", "created_at": created_at,
                     "output": [], "incomplete_details": None},
        "conversation_history": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"},
                                 {"role": "user", "content": "write"}],
        "instructions": None,
        "session_id": session_id,
    }  # fmt: skip


def test_an_in_progress_response_of_a_dead_writer_becomes_incomplete(
    store: SyncStateDb, tmp_path: Path, dead_owner: ProcessOwner, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.create_session(source="api_server")
    created = int(time.time())
    rules = Responses(store.executor, store.dialect)
    responses = SyncCalls(rules)
    try:
        # Written by the dead process: its owner is recorded by put().
        monkeypatch.setattr("hermes.store.rules.responses.current_owner", lambda: dead_owner)
        responses.put("resp_x", _in_progress(session.id, created))
        monkeypatch.undo()
        responses.put("resp_live", {**_in_progress(session.id, created), "session_id": "other"})
        turn = store.begin_turn(session.id, owner=dead_owner)
        store.append_message(session.id, NewMessage(role="user", content="write"), turn_id=turn.id)
        store.append_message(session.id, NewMessage(role="assistant", tool_calls=TOOL_CALLS[:1]), turn_id=turn.id)

        report = run_now(repair_after_crash(store.sessions, rules))
        assert [t.turn_id for t in report.turns] == [turn.id]
        assert report.responses == ["resp_x"]
        record = responses.get("resp_x")
        assert record is not None
        response = record["response"]
        assert (response["status"], response["incomplete_details"]) == ("incomplete", {"reason": "interrupted"})
        assert [item["type"] for item in response["output"]] == ["function_call", "function_call_output"]
        assert response["output"][1]["output"] == SERVER_STOPPED_TOOL_RESULT
        history = record["conversation_history"]
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "tool"]
        assert transcript_problems(history) == []
        live = responses.get("resp_live")
        assert live is not None and live["response"]["status"] == "in_progress"  # this process wrote it
        assert run_now(repair_after_crash(store.sessions, rules)).empty
    finally:
        store.close()


def test_runs_of_a_dead_owner_are_interrupted_even_when_the_pid_is_reused(tmp_path: Path) -> None:
    state = SyncStateDb(tmp_path / "state.db")
    rules = Runs(state.executor, state.dialect)
    store = SyncCalls(rules)
    try:
        now = time.time()
        mine = RunRecord(
            run_id="run_mine", status="running", created_at=now, updated_at=now, owner_pid=current_owner().pid
        )
        store.put(mine)
        # The same pid recorded by a process that started at another time: not us.
        with state.transaction():
            state.executor.connection().execute(
                "UPDATE runs SET owner_started = owner_started || '0' WHERE run_id = 'run_mine'"
            )
        store.put(
            RunRecord(
                run_id="run_live", status="running", created_at=now, updated_at=now, owner_pid=current_owner().pid
            )
        )
        assert run_now(repair_after_crash(state.sessions, runs=rules)).runs == 1
        assert store.get("run_mine").status == "interrupted"
        assert store.get("run_live").status == "running"
    finally:
        state.close()


def test_repair_creates_no_runs_file(store: SyncStateDb, tmp_path: Path) -> None:
    runs = Runs(store.executor, store.dialect)
    responses = Responses(store.executor, store.dialect)
    assert run_now(repair_after_crash(store.sessions, responses, runs)).empty
    assert not (tmp_path / "runs.db").exists()


def test_opening_state_db_repairs_nothing_by_itself(db_path: Path, dead_owner: ProcessOwner) -> None:
    store = open_sync_state(db_path)
    session = store.create_session(source="cli")
    store.begin_turn(session.id, owner=dead_owner)
    store.close()
    with SyncStateDb(db_path) as reopened:
        assert len(reopened.open_turns()) == 1
