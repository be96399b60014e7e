"""ACP session modes: session/new advertises hermes' modes, session/set_mode switches the
session's next turns (plan: writes refused, the model told), an unknown mode id is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from _acp_harness import EditorClient, capabilities, hermes_acp
from acp import PROTOCOL_VERSION, RequestError, text_block

from hermes.agent.modes import PLAN_NOTE
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


async def test_modes_are_advertised_and_set_mode_makes_a_plan_turn(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\n")
    upstream.enqueue(
        tool_reply(
            [
                call("write_file", {"path": str(notes), "content": "pwned"}, id="w"),
                call("terminal", {"command": "echo x > made.txt"}, id="t"),
            ]
        ),
        text_reply("Plan: 1. edit notes"),
        text_reply("Edited."),
    )
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert session.modes is not None
        assert session.modes.current_mode_id == "default"
        assert [m.id for m in session.modes.available_modes] == ["default", "accept-edits", "plan"]
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix the notes")])
        assert response.stop_reason == "end_turn"
        assert notes.read_text() == "alpha\n" and not (tmp_path / "made.txt").exists()
        assert upstream.requests[0].body["messages"][-1]["content"] == f"fix the notes\n\n{PLAN_NOTE}"
        sent = upstream.requests[1].body["messages"]
        results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
        assert all(results[key].startswith("DENIED: plan mode is on") for key in ("w", "t"))
        failed = [u for _, u in client.updates if u.session_update == "tool_call_update" and u.status == "failed"]
        assert len(failed) == 2

        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert "default, accept-edits, plan" in str(refused.value.data)

        await conn.set_session_mode(session_id=session.session_id, mode_id="default")
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        assert upstream.requests[2].body["messages"][-1]["content"] == "go"

        loaded = await conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "default"
