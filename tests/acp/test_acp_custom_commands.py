"""`hermes acp`: the session's custom commands and skills in available_commands_update, and a
`/name args` prompt expanded before it reaches the model (scripted upstream)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _acp_harness import EditorClient, capabilities, hermes_acp
from acp import PROTOCOL_VERSION, text_block

from hermes.testing.upstream import ScriptedUpstream, text_reply


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_commands_are_announced_and_expanded(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / ".claude/commands/explain.md",
          "---\ndescription: Explain code\nargument-hint: [path]\n---\nExplain $ARGUMENTS simply.\n")  # fmt: skip
    write(project / ".hermes/skills/style-guide/SKILL.md",
          "---\nname: style-guide\ndescription: The house style.\n---\nSTYLE-BODY\n")  # fmt: skip
    upstream.enqueue(text_reply("It adds."), text_reply("Styled."))
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream, cwd=project) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        async with asyncio.timeout(10):
            while "available_commands_update" not in client.kinds():
                await asyncio.sleep(0.02)
        (update,) = [u for _, u in client.updates if u.session_update == "available_commands_update"]
        offered = {c.name: (c.description, c.input.root.hint if c.input else None) for c in update.available_commands}
        assert offered == {
            "explain": ("Explain code", "[path]"),
            "style-guide": ("skill: The house style.", "request"),
        }
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/explain src/add.py")])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/style-guide the README")])
    assert upstream.requests[0].messages[-1]["content"] == "Explain src/add.py simply."
    assert "- style-guide: The house style." in upstream.requests[0].messages[0]["content"]
    assert "STYLE-BODY" not in upstream.requests[0].messages[0]["content"]
    assert upstream.requests[1].messages[-1]["content"].startswith('Use the skill "style-guide"')
