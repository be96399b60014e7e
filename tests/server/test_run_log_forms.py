"""One run log, read in every form: the /v1/runs frames, the session chat frames and the
engine's own events are each translated from the same journal when a stream is read, and
logs written in the old vocabularies still read as they were written."""

from __future__ import annotations

from typing import Any

from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)
from _runs_fixtures import Frame, parse_frames, read_frames

from hermes.agent.events import (
    AgentEvent,
    ReasoningDelta,
    SegmentEnd,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    event_from_dict,
)
from hermes.agent.types import TurnRequest, TurnResult, Usage
from hermes.remote.agent import RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.runs.run_log import RunOpened, RunSettled, entry_data, event_data
from hermes.server.http.state import STORAGE
from hermes.server.rest.background_runs import kind_of_stream
from hermes.server.rest.run_frames import LEGACY_ENGINE_ERROR, LogReader, message_id_of, turn_messages
from hermes.store.records import StoredRunEvent
from hermes.testing.upstream import call, text_reply, tool_reply

RUN_ID = "run_" + "a" * 32
MID = message_id_of(RUN_ID)
RESULT = TurnResult(
    session_id="s1",
    status="completed",
    final_text="Done.",
    messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": '{"text": "q"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "echo", "content": "echo:q"},
        {"role": "assistant", "content": "Done."},
    ],  # fmt: skip
    usage=Usage(10, 5, 15),
    model="m",
    context_tokens=321,
)
EVENTS: list[AgentEvent] = [
    TurnStarted(session_id="s1", model="m"),
    ReasoningDelta("think"),
    TextDelta("Let me"),
    SegmentEnd(),
    ToolStarted(call_id="c1", name="echo", arguments={"text": "q"}, preview="q"),
    ToolCompleted(call_id="c1", name="echo", result="echo:q", duration=0.1234, is_error=False,
                  arguments={"text": "q"}),  # fmt: skip
    TextDelta("Done."),
    TurnCompleted(RESULT),
]


def _log(entries: list[tuple[str, dict[str, Any]]]) -> list[StoredRunEvent]:
    return [
        StoredRunEvent(RUN_ID, seq, name, data, 1000.0 + seq, final=seq == len(entries))
        for seq, (name, data) in enumerate(entries, start=1)
    ]


def _journal() -> list[StoredRunEvent]:
    """What the driver journals for a completed session chat turn."""
    return _log([
        entry_data(RunOpened("session_chat", "m", "hi")),
        *(event_data(event) for event in EVENTS),
        entry_data(RunSettled("completed", "s1", from_result=True)),
    ])  # fmt: skip


def _read(log: list[StoredRunEvent], form: Any, after: int = 0) -> list[Frame]:
    reader = LogReader(RUN_ID, "s1", form, after=after)
    return parse_frames(b"".join(reader.read(stored) for stored in log).decode())


def _named(frames: list[Frame], *stamps: str) -> list[tuple[str | None, dict[str, Any]]]:
    return [(f.event or f.data["event"], {k: v for k, v in f.data.items() if k not in stamps}) for f in frames]


SESSION_GOLDEN = [
    ("run.started", {"user_message": {"role": "user", "content": "hi"}, "runtime": {"model": "m"}}),
    ("message.started", {"message": {"id": MID, "role": "assistant"}}),
    ("tool.progress", {"message_id": MID, "tool_name": "_thinking", "delta": "think"}),
    ("assistant.delta", {"message_id": MID, "delta": "Let me"}),
    ("assistant.commentary", {"message_id": MID, "text": "Let me", "already_streamed": True}),
    ("tool.started", {"message_id": MID, "tool_name": "echo", "call_id": "c1", "preview": "q", "args": {"text": "q"}}),
    ("tool.completed", {"message_id": MID, "tool_name": "echo", "call_id": "c1", "preview": "q",
                        "args": {"text": "q"}, "duration": 0.123, "is_error": False, "result": "echo:q"}),
    ("assistant.delta", {"message_id": MID, "delta": "Done."}),
    ("assistant.completed", {"message_id": MID, "content": "Done.", "status": "completed", "completed": True}),
    ("run.completed", {"message_id": MID, "status": "completed", "completed": True,
                       "messages": turn_messages(RESULT),
                       "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                       "turn_status": "completed", "context_tokens": 321}),
    ("done", {}),
]  # fmt: skip

RUN_GOLDEN = [
    ("run.started", {"session_id": "s1", "model": "m"}),
    ("reasoning.delta", {"delta": "think"}),
    ("message.delta", {"delta": "Let me"}),
    ("tool.started", {"tool": "echo", "call_id": "c1", "preview": "q", "arguments": {"text": "q"}}),
    ("tool.completed", {"tool": "echo", "call_id": "c1", "duration": 0.123, "is_error": False}),
    ("message.delta", {"delta": "Done."}),
    ("run.completed", {"status": "completed", "session_id": "s1", "output": "Done.",
                       "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
]  # fmt: skip


def test_one_journal_reads_as_session_frames() -> None:
    frames = _read(_journal(), "session_chat")
    assert _named(frames, "session_id", "run_id", "seq", "ts") == SESSION_GOLDEN
    assert [f.id for f in frames] == list(range(1, len(SESSION_GOLDEN) + 1))
    assert all(f.data["seq"] == f.id and f.data["run_id"] == RUN_ID and f.data["session_id"] == "s1"
               for f in frames)  # fmt: skip
    assert MID.startswith("msg_") and len(MID) == 36


def test_the_same_journal_reads_as_runs_frames() -> None:
    frames = _read(_journal(), "run")
    assert all(f.event is None for f in frames)
    assert _named(frames, "event", "run_id", "timestamp") == RUN_GOLDEN
    assert [f.id for f in frames] == list(range(1, len(RUN_GOLDEN) + 1))
    assert frames[0].data["run_id"] == RUN_ID and frames[0].data["timestamp"] == 1002.0


def test_the_same_journal_reads_as_the_engines_own_events() -> None:
    frames = _read(_journal(), "engine")
    assert [event_from_dict(f.data) for f in frames] == EVENTS
    assert [f.event for f in frames] == [event.type for event in EVENTS]
    assert [f.id for f in frames] == list(range(2, 2 + len(EVENTS)))  # the entries' own seqs


def test_a_resumed_stream_gets_the_frames_after_its_last_event_id() -> None:
    assert [f.id for f in _read(_journal(), "session_chat", after=5)] == list(range(6, len(SESSION_GOLDEN) + 1))
    assert _named(_read(_journal(), "run", after=6), "event", "run_id", "timestamp") == RUN_GOLDEN[6:]
    assert [f.id for f in _read(_journal(), "engine", after=8)] == [9]


def test_a_run_that_failed_without_a_result_ends_every_form() -> None:
    log = _log([
        entry_data(RunOpened("run", "m", "hi")),
        event_data(TurnStarted(session_id="s1", model="m")),
        entry_data(RunSettled("failed", "s1", error="boom", error_code="internal_error", reports_error=True)),
    ])  # fmt: skip
    assert _named(_read(log, "run"), "event", "run_id", "timestamp") == [
        ("run.started", {"session_id": "s1", "model": "m"}),
        ("run.failed", {"status": "failed", "error": "boom", "error_code": "internal_error"}),
    ]
    session = _read(log, "session_chat")
    assert [f.event for f in session] == ["run.started", "message.started", "error", "done"]
    assert session[2].data["message"] == "boom"
    last = event_from_dict(_read(log, "engine")[-1].data)
    assert isinstance(last, TurnCompleted)
    assert (last.result.status, last.result.error, last.result.error_code) == ("failed", "boom", "internal_error")
    assert last.result.model == "m" and last.result.session_id == "s1"


def test_a_stopped_run_reads_as_interrupted_in_the_engines_form() -> None:
    log = _log([entry_data(RunSettled("cancelled", "s1"))])
    assert _named(_read(log, "run"), "event", "run_id", "timestamp") == [("run.cancelled", {"status": "cancelled"})]
    assert [f.event for f in _read(log, "session_chat")] == ["run.cancelled", "done"]
    (ended,) = [event_from_dict(f.data) for f in _read(log, "engine")]
    assert isinstance(ended, TurnCompleted) and ended.result.status == "interrupted"


def test_a_damaged_entry_is_skipped_and_the_rest_of_the_log_still_reads(caplog) -> None:
    log = _log([
        entry_data(RunOpened("run", "m", "hi")),
        ("text.delta", {"txt": "wrong field"}),
        ("no.such.event", {}),
        event_data(TextDelta("ok")),
        entry_data(RunSettled("cancelled", "s1")),
    ])  # fmt: skip
    names = _named(_read(log, "run"), "event", "run_id", "timestamp")
    assert names == [("message.delta", {"delta": "ok"}), ("run.cancelled", {"status": "cancelled"})]
    assert [f.id for f in _read(log, "engine")] == [4, 5]
    assert "entry 2 is unreadable" in caplog.text


LEGACY_SESSION_LOG = [
    ("run.started", {"user_message": {"role": "user", "content": "hi"}, "runtime": {"model": "m"}}),
    ("message.started", {"message": {"id": "msg_old", "role": "assistant"}}),
    ("tool.progress", {"message_id": "msg_old", "tool_name": "_thinking", "delta": "think"}),
    ("assistant.delta", {"message_id": "msg_old", "delta": "Hello"}),
    ("done", {}),
]


def test_a_log_in_the_old_session_vocabulary_reads_as_it_was_written() -> None:
    log = _log(LEGACY_SESSION_LOG)
    assert kind_of_stream(log[0]) == "session_chat"
    frames = _read(log, "session_chat")
    assert _named(frames, "session_id", "run_id", "seq", "ts") == LEGACY_SESSION_LOG
    assert [f.id for f in frames] == [1, 2, 3, 4, 5]
    assert [f.id for f in _read(log, "session_chat", after=3)] == [4, 5]
    (ended,) = [event_from_dict(f.data) for f in _read(log, "engine")]
    assert isinstance(ended, TurnCompleted) and ended.result.error == LEGACY_ENGINE_ERROR


def test_an_old_runs_log_ended_by_a_new_orphan_sweep_reads_as_run_interrupted() -> None:
    settled = RunSettled("interrupted", "s1", error="owner gone", error_code="interrupted", reports_error=True)
    log = _log([("run.started", {"session_id": "s1", "model": "m"}), ("message.delta", {"delta": "a"}),
                entry_data(settled)])  # fmt: skip
    assert kind_of_stream(log[0]) == "run"
    assert _named(_read(log, "run"), "event", "run_id", "timestamp") == [
        ("run.started", {"session_id": "s1", "model": "m"}),
        ("message.delta", {"delta": "a"}),
        ("run.interrupted", {"status": "interrupted", "error": "owner gone", "error_code": "interrupted"}),
    ]


def test_the_kind_of_a_new_log_is_in_its_first_entry() -> None:
    assert kind_of_stream(_journal()[0]) == "session_chat"
    assert kind_of_stream(_log([entry_data(RunOpened("run", None, "x"))])[0]) == "run"
    assert kind_of_stream(None) == "run"


# ---- over HTTP: one real run's journal, read three ways ---------------------------------------


def _seed(db) -> str:
    return str(db.create_session(source="api_server", title="Chat").id)


async def test_a_real_runs_journal_reads_the_same_in_every_form(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    upstream.enqueue(
        tool_reply([call("echo", {"text": "q"}, id="call_1")], text="Let me look:"),
        text_reply("Hello world", reasoning="thinking hard"),
    )
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream", json={"message": "go"})
    run_id = resp.headers["X-Hermes-Run-Id"]
    session = parse_frames(await resp.text())
    assert session[-1].event == "done"

    engine_resp = await client.get(f"/v1/runs/{run_id}/events?events=engine")
    assert engine_resp.status == 200
    events = [event_from_dict(f.data) for f in await read_frames(engine_resp)]
    assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnCompleted)
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "thinking hard"  # reasoning, no tool
    assert not any(isinstance(e, ToolStarted) and e.name.startswith("_") for e in events)
    assert events[-1].result.final_text == "Hello world"

    stored = await client.server.app[STORAGE].run_events.read_after(run_id)
    assert stored and stored[-1].final
    runs = _read_real(stored, run_id, session_id, "run")
    session_text = "".join(f.data["delta"] for f in session if f.event == "assistant.delta")
    runs_text = "".join(f.data["delta"] for f in runs if f.data["event"] == "message.delta")
    engine_text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert session_text == runs_text == engine_text == "Let me look:Hello world"
    assert [f.data["event"] for f in runs][-1] == "run.completed"
    assert runs[-1].data["output"] == "Hello world"
    # The stream the client read is the translation of the stored log.
    again = _read_real(stored, run_id, session_id, "session_chat")
    assert _named(again, "ts") == _named(session, "ts")


def _read_real(stored: list[StoredRunEvent], run_id: str, session_id: str, form: Any) -> list[Frame]:
    reader = LogReader(run_id, session_id, form)
    return parse_frames(b"".join(reader.read(entry) for entry in stored).decode())


async def test_an_unknown_events_form_is_refused_before_a_turn_starts(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    client = await serve()
    resp = await client.post(f"/api/sessions/{session_id}/chat/stream?events=frames", json={"message": "go"})
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "invalid_events_form"
    assert upstream.requests == []


# ---- the remote client reads the engine's own events ---------------------------------------------


async def test_the_remote_client_gets_reasoning_as_reasoning_and_the_engines_result(serve, upstream, sessions_db):
    session_id = _seed(sessions_db)
    upstream.enqueue(
        tool_reply([call("echo", {"text": "q"}, id="call_1")], text="Looking:"),
        text_reply("Found it.", reasoning="weighing options"),
    )
    client = await serve()
    url = str(client.server.make_url("")).rstrip("/")
    async with RemoteClient(url) as remote:
        turn = RemoteAgent(remote).start(TurnRequest(input="find", session_id=session_id))
        try:
            events = [event async for event in turn.events()]
        finally:
            await turn.aclose()
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "weighing options"
    assert not any(isinstance(e, ToolStarted) and e.name == "_thinking" for e in events)
    tools = [(e.name, e.arguments) for e in events if isinstance(e, ToolStarted)]
    assert tools == [("echo", {"text": "q"})]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [c.result for c in completed] == ["echo:q"]
    assert isinstance(events[-1], TurnCompleted) and [e for e in events if isinstance(e, TurnCompleted)] == events[-1:]
    result = events[-1].result
    assert (result.status, result.final_text, result.session_id) == ("completed", "Found it.", session_id)
    assert result.usage.total_tokens > 0 and turn.run_id is not None
