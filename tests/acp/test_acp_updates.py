"""The pure parts of hermes/acp: events and stored messages as updates, prompt text, the host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes.acp.agent import prompt_text
from hermes.acp.updates import history_updates, stop_reason, tool_kind, tool_title, turn_updates
from hermes.agent.events import ModelProgress, ReasoningDelta, TextDelta, ToolCompleted, ToolStarted
from hermes.agent.types import TurnResult
from hermes.error_codes import MAX_ITERATIONS, OUTPUT_TRUNCATED, STREAM_STALLED


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("read_file", "read"),
        ("write_file", "edit"),
        ("patch", "edit"),
        ("terminal", "execute"),
        ("list_files", "search"),
        ("search_files", "search"),
        ("mcp__web__fetch_page", "fetch"),
        ("mcp__x__y", "other"),
    ],
)
def test_tool_kinds(name: str, kind: str) -> None:
    assert tool_kind(name) == kind


def test_titles_name_the_command_or_the_file() -> None:
    assert tool_title("terminal", {"command": "pytest -q"}) == "pytest -q"
    assert tool_title("write_file", {"path": "a.py", "content": ""}) == "Write a.py"
    assert tool_title("search_files", {"pattern": "TODO"}) == "Search TODO"


@pytest.mark.parametrize(
    ("status", "code", "reason"),
    [
        ("completed", None, "end_turn"),
        ("interrupted", "interrupted", "cancelled"),
        ("partial", OUTPUT_TRUNCATED, "max_tokens"),
        ("partial", MAX_ITERATIONS, "max_turn_requests"),
        ("partial", STREAM_STALLED, "end_turn"),
    ],
)
def test_stop_reasons(status: str, code: str | None, reason: str) -> None:
    result = TurnResult(session_id="s", status=status, final_text="", error_code=code)
    assert stop_reason(result) == reason


def test_live_events_map_in_order_and_status_events_make_none(tmp_path: Path) -> None:
    arguments = {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    events = [
        ReasoningDelta("think"),
        TextDelta("hi"),
        ModelProgress("generating", 3),
        ToolStarted("c1", "patch", arguments, "src/a.py"),
        ToolCompleted("c1", "patch", "Patched", 0.1, False, arguments),
    ]
    updates = [update for event in events for update in turn_updates(event, tmp_path)]
    assert [u.session_update for u in updates] == [
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ]
    start = updates[2]
    assert start.locations is not None and start.locations[0].path == str(tmp_path / "src" / "a.py")
    assert start.content is not None
    (diff,) = start.content
    assert (diff.type, diff.old_text, diff.new_text) == ("diff", "x = 1", "x = 2")


def test_a_replayed_refused_call_is_failed(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "clean"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{bad"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "DENIED: this command was not run."},
    ]
    user, start, done = history_updates(messages, tmp_path)
    assert user.content.text == "clean"
    assert (start.tool_call_id, start.kind, start.raw_input) == ("c1", "execute", {})
    assert done.status == "failed"


def test_prompt_text_keeps_text_and_names_resources() -> None:
    from acp import resource_link_block, text_block
    from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

    embedded = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///a.py", text="x = 1")
    )
    text = prompt_text([text_block("explain"), resource_link_block("a.py", "file:///a.py"), embedded])
    assert text == 'explain\n\n@file:///a.py\n\n<context uri="file:///a.py">\nx = 1\n</context>'


def test_the_host_follows_the_clients_capabilities_and_sandbox_on_keeps_commands_here() -> None:
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    from hermes.acp.client_host import client_host

    conn: Any = object()  # never called: the host is only assembled here
    both = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
    host = client_host(conn, "s", both)
    assert host is not None and host.files is not None and host.commands is not None
    sandboxed = client_host(conn, "s", both, terminals=False)
    assert sandboxed is not None and sandboxed.files is not None and sandboxed.commands is None
    assert client_host(conn, "s", ClientCapabilities()) is None
    assert client_host(conn, "s", ClientCapabilities(), terminals=True) is None
