"""Context compaction against the scripted upstream with a small context window.

The upstream answers summary requests (recognised by the summariser's system prompt) with
numbered summaries and plays the scripted replies for every other request, so each test
sees exactly what the engine sent.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes.agent.context import (
    SUMMARIZER_PROMPT,
    SUMMARY_HEADER,
    estimate_tokens,
    resume_history,
)
from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import ContextCompacted
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.testing.state_db import SyncStateDb
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import (
    RecordedRequest,
    Reply,
    ScriptedUpstream,
    call,
    error_reply,
    text_reply,
    tool_reply,
)

WINDOW = 1500
SYSTEM = "You are a test agent."


class RoutedUpstream(ScriptedUpstream):
    """Summary requests get "SUMMARY-<n> …" answers; other requests take `main` replies in order."""

    def __init__(self) -> None:
        super().__init__()
        self.main: deque[Reply] = deque()
        self.summaries = 0

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if is_summary_request(body):
            self.summaries += 1
            self.replies.appendleft(text_reply(f"SUMMARY-{self.summaries}: the task is the lighthouse log."))
        elif self.main:
            self.replies.appendleft(self.main.popleft())
        return await super()._chat(request)

    def summary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if is_summary_request(r.body)]

    def turn_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if not is_summary_request(r.body)]


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SUMMARIZER_PROMPT


async def _blob(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"<{args.get('tag', '')}>" + "z" * int(args.get("size", 800))


TOOLS = ToolRegistry(
    [Tool("blob", "returns a blob", {"type": "object", "properties": {}}, _blob, read_only=True)]
)


@pytest.fixture
async def routed() -> AsyncIterator[RoutedUpstream]:
    async with RoutedUpstream() as server:
        yield server


_OPEN_AGENTS: list[Agent] = []


@pytest.fixture(autouse=True)
async def _close_agents() -> AsyncIterator[None]:
    """Every agent a test made is closed (its HTTP connections) before the loop ends."""
    yield
    while _OPEN_AGENTS:
        await _OPEN_AGENTS.pop().aclose()


def make_agent(upstream: ScriptedUpstream, store: SyncStateDb, *, window: int = WINDOW) -> Agent:
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url, api_key="k"),
        store=store.sessions if isinstance(store, SyncStateDb) else store,
        model="scripted-model",
        tools=TOOLS,
        options=EngineOptions(stale_timeout=5.0, retry_base_delay=0.01, context_window=window, compact_at=0.8),
        system_prompt=SYSTEM,
    )
    _OPEN_AGENTS.append(agent)
    return agent


def assert_pairs_intact(messages: list[dict[str, Any]]) -> None:
    """Every tool call's results follow it directly, and every tool result has its call."""
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message["role"] != "tool", f"tool result without its call at {i}: {message}"
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        i += 1
        answered = []
        while i < len(messages) and messages[i]["role"] == "tool":
            answered.append(messages[i]["tool_call_id"])
            i += 1
        assert answered == calls, f"calls {calls} answered by {answered}"


def request_size(request: RecordedRequest) -> int:
    return estimate_tokens(request.messages, request.body.get("tools"))


def turn_script(turn: int, tool_rounds: int = 2) -> list[Reply]:
    replies = [
        tool_reply([call("blob", {"tag": f"t{turn}r{r}", "size": 900}, id=f"c{turn}_{r}")])
        for r in range(tool_rounds)
    ]
    return [*replies, text_reply(f"answer {turn}")]


async def test_long_session_stays_under_the_window_and_the_store_keeps_everything(routed, store):
    agent = make_agent(routed, store)
    session_id = None
    compactions: list[ContextCompacted] = []
    for turn in range(6):
        routed.main.extend(turn_script(turn))
        events, result = await collect_turn(agent, TurnRequest(input=f"question {turn}", session_id=session_id))
        assert result.status == "completed", result.error
        assert result.final_text == f"answer {turn}"
        session_id = session_id or result.session_id
        assert result.session_id == session_id  # compaction never starts a new session
        compactions += [e for e in events if isinstance(e, ContextCompacted)]
    routed.assert_complete()
    assert not routed.main

    # Every request stayed under the window, by the engine's own estimate.
    for request in routed.requests:
        assert request_size(request) <= WINDOW, request_size(request)
    assert len(compactions) >= 2
    assert all(c.after_tokens < c.before_tokens for c in compactions)
    assert all(c.reason == "threshold" for c in compactions)

    # No request splits a tool call from its result.
    for request in routed.turn_requests():
        assert_pairs_intact(request.messages[1:])

    # Incremental: each summary request after the first carries the previous summary.
    summaries = routed.summary_requests()
    assert len(summaries) >= 2
    for n, request in enumerate(summaries[1:], start=1):
        assert f"SUMMARY-{n}:" in request.messages[1]["content"]
    # …and not the whole transcript: the first question is gone from later summary requests.
    assert "question 0" not in summaries[-1].messages[1]["content"]

    # Requests after a compaction: system prompt, summary, recent messages.
    last = routed.turn_requests()[-1].messages
    assert last[0] == {"role": "system", "content": SYSTEM}
    assert last[1]["role"] == "user" and last[1]["content"].startswith(SUMMARY_HEADER)
    assert "question 0" not in json.dumps(last)

    # The store keeps every original message, in order.
    stored = [(m.role, m.content) for m in store.get_messages(session_id)]
    expected: list[tuple[str, Any]] = []
    for turn in range(6):
        expected.append(("user", f"question {turn}"))
        for r in range(2):
            expected.append(("assistant", None))
            expected.append(("tool", f"<t{turn}r{r}>" + "z" * 900))
        expected.append(("assistant", f"answer {turn}"))
    assert stored == expected
    markers = store.compactions(session_id)
    assert len(markers) == len(compactions)
    assert markers[-1].summary.startswith(f"SUMMARY-{routed.summaries}:")


async def test_resuming_after_a_compaction_sends_the_summary_and_the_messages_after_the_marker(routed, store):
    agent = make_agent(routed, store)
    session_id = None
    for turn in range(4):
        routed.main.extend(turn_script(turn))
        _, result = await collect_turn(agent, TurnRequest(input=f"question {turn}", session_id=session_id))
        session_id = result.session_id
    marker = store.compactions(session_id)[-1]
    history = await resume_history(store.sessions, session_id)
    assert history[0]["content"] == SUMMARY_HEADER + marker.summary
    kept = [m for m in store.get_messages(session_id) if m.id >= marker.first_kept_message_id]
    assert history[1:] == [m.to_openai() for m in kept]

    # A fresh agent (a new process) continues from the summary, not the whole history.
    fresh = make_agent(routed, store)
    routed.main.append(text_reply("resumed"))
    before = len(routed.requests)
    _, result = await collect_turn(fresh, TurnRequest(input="and now?", session_id=session_id))
    assert result.status == "completed" and result.session_id == session_id
    sent = routed.requests[before].messages
    assert sent[1]["content"] == SUMMARY_HEADER + marker.summary
    assert sent[-1] == {"role": "user", "content": "and now?"}
    assert "question 0" not in json.dumps(sent)


async def test_a_context_length_error_compacts_once_and_retries(routed, store):
    # A big window: only the upstream's refusal can trigger the compaction.
    agent = make_agent(routed, store, window=100_000)
    routed.main.extend(turn_script(0))
    _, first = await collect_turn(agent, "question 0")
    overflow = error_reply(
        400,
        "This model's maximum context length is 1500 tokens. However, your messages resulted in 2100 tokens.",
        type="invalid_request_error",
        code="context_length_exceeded",
    )
    routed.main.extend([overflow, text_reply("fits now")])
    events, result = await collect_turn(agent, TurnRequest(input="question 1", session_id=first.session_id))
    assert result.status == "completed" and result.final_text == "fits now"
    compacted = [e for e in events if isinstance(e, ContextCompacted)]
    assert [c.reason for c in compacted] == ["overflow"]
    kinds = ["summary" if is_summary_request(r.body) else "turn" for r in routed.requests]
    assert kinds[-3:] == ["turn", "summary", "turn"]
    retried = routed.requests[-1].messages
    assert retried[1]["content"].startswith(SUMMARY_HEADER)
    assert retried[-1] == {"role": "user", "content": "question 1"}

    # A second refusal in the same turn is not retried again: the turn fails with the code.
    routed.main.extend([overflow, overflow])
    _, failed = await collect_turn(agent, TurnRequest(input="question 2", session_id=first.session_id))
    assert failed.status == "failed"
    assert failed.error_code == "context_length_exceeded"
    assert routed.summaries == 2


async def test_the_providers_prompt_tokens_count_when_larger_than_the_estimate(routed, store):
    agent = make_agent(routed, store)
    # Tiny messages, but the upstream reports a prompt of 1300 tokens (over 0.8 × 1500).
    routed.main.extend([text_reply("one", usage=(1300, 5)), text_reply("two")])
    _, first = await collect_turn(agent, "hi")
    events, second = await collect_turn(agent, TurnRequest(input="again", session_id=first.session_id))
    assert second.status == "completed"
    assert [e.reason for e in events if isinstance(e, ContextCompacted)] == ["threshold"]
    assert first.context_tokens == 1300


async def test_a_summary_request_too_big_for_the_window_is_made_in_chunks(routed, store):
    agent = make_agent(routed, store)
    # One turn with many tool rounds: the older part is far larger than the window.
    routed.main.extend(turn_script(0, tool_rounds=8))
    _, result = await collect_turn(agent, "question 0")
    assert result.status == "completed"
    summaries = routed.summary_requests()
    assert summaries
    for request in routed.requests:
        assert request_size(request) <= WINDOW
    # Chunks of one compaction are folded: each later chunk carries the running summary.
    assert any("PREVIOUS SUMMARY:\nSUMMARY-" in r.messages[1]["content"] for r in summaries[1:])
    assert len([m for m in store.get_messages(result.session_id) if m.role == "tool"]) == 8


async def test_manual_compaction_of_a_stored_session(routed, store, tmp_path: Path):
    agent = make_agent(routed, store, window=100_000)
    routed.main.extend(turn_script(0))
    _, result = await collect_turn(agent, "question 0")
    event = await agent.compact(result.session_id)
    assert event is not None and event.reason == "manual"
    assert event.summarized_messages == 5 and event.kept_messages == 1
    marker = store.compactions(result.session_id)[-1]
    kept = [m for m in store.get_messages(result.session_id) if m.id >= marker.first_kept_message_id]
    assert [(m.role, m.content) for m in kept] == [("assistant", "answer 0")]
    assert len(store.get_messages(result.session_id)) == 6


def test_estimate_is_at_least_a_quarter_of_the_characters():
    messages = [
        {"role": "user", "content": "a" * 4000},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "n" * 400, "arguments": "b" * 4000}}
        ]},
        {"role": "tool", "tool_call_id": "c", "content": "r" * 800},
    ]  # fmt: skip
    assert estimate_tokens(messages) >= (4000 + 400 + 4000 + 800) // 4


async def test_sessions_show_displays_the_marker_with_every_message(routed, hermes_home: Path):
    from typer.testing import CliRunner

    from hermes.cli.main import app
    from hermes.testing.state_db import open_sync_state

    db = open_sync_state(hermes_home / "state.db")
    try:
        agent = make_agent(routed, db)
        session_id = None
        for turn in range(3):
            routed.main.extend(turn_script(turn))
            _, result = await collect_turn(agent, TurnRequest(input=f"question {turn}", session_id=session_id))
            session_id = result.session_id
        markers = db.compactions(session_id)
        messages = db.get_messages(session_id)
    finally:
        db.close()
    assert markers
    runner = CliRunner()
    shown = runner.invoke(app, ["sessions", "show", session_id], catch_exceptions=False)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert all(f"#{m.id} {m.role}" in shown.stdout for m in messages)  # nothing is hidden
    first = next(i for i, line in enumerate(lines) if line.startswith("── context compacted"))
    kept_label = next(i for i, line in enumerate(lines) if line.startswith(f"#{markers[0].first_kept_message_id} "))
    assert first < kept_label
    assert lines[first + 1].strip() == markers[0].summary
    as_json = json.loads(runner.invoke(app, ["sessions", "show", session_id, "--json"]).stdout)
    assert [c["first_kept_message_id"] for c in as_json["compactions"]] == [m.first_kept_message_id for m in markers]
    assert len(as_json["messages"]) == len(messages)


def test_chat_q_compacts_a_resumed_session_with_the_configured_window(hermes_home: Path):
    import os
    import subprocess
    import sys

    from hermes.store.records import NewMessage
    from hermes.testing.state_db import open_sync_state

    db = open_sync_state(hermes_home / "state.db")
    try:
        session = db.create_session(source="cli", title="long one")
        for i in range(20):
            db.append_message(session.id, NewMessage(role="user", content=f"step {i}: " + "q" * 2000))
            db.append_message(session.id, NewMessage(role="assistant", content=f"did {i}: " + "a" * 2000))
    finally:
        db.close()
    with RoutedUpstream.in_thread() as upstream:
        assert isinstance(upstream, RoutedUpstream)
        upstream.main.append(text_reply("continued"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
        env.update(
            HERMES_HOME=str(hermes_home),
            HERMES_PROVIDER="openai",
            HERMES_BASE_URL=upstream.base_url,
            HERMES_MODEL="scripted-model",
            HERMES_CONTEXT_WINDOW="8000",
            HERMES_COMPACT_AT="0.8",
            PYTHONPATH=str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", ""),
        )
        done = subprocess.run(
            [sys.executable, "-m", "hermes", "chat", "-q", "what next?", "-r", session.id],
            capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        requests = list(upstream.requests)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "continued"
    assert "context compacted" in done.stderr
    assert any(is_summary_request(r.body) for r in requests)
    for request in requests:
        assert request_size(request) <= 8000
    db = open_sync_state(hermes_home / "state.db")
    try:
        assert len(db.get_messages(session.id)) == 42  # 40 seeded + the question + the answer
        assert db.compactions(session.id)
    finally:
        db.close()


def test_context_length_errors_are_recognised_by_code_or_typical_message():
    from hermes.agent.context import is_context_overflow
    from hermes.errors import ContextLengthExceeded, ProviderError

    assert is_context_overflow(ContextLengthExceeded("too long", status=400))
    llama = "the request exceeds the available context size, try increasing it"
    assert is_context_overflow(ProviderError(f"model endpoint rejected the request (400): {llama}", status=400))
    assert is_context_overflow(ProviderError("prompt is too long: 210000 tokens > 200000 maximum", status=400))
    assert not is_context_overflow(ProviderError("endpoint rejected the request (400): bad tool schema", status=400))
    assert not is_context_overflow(ProviderError("maximum context length (upstream busy)", status=503))
