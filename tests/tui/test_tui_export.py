"""/export writes the same Markdown as `hermes sessions export -f markdown`, and content holding ``` survives it."""

from __future__ import annotations

import ast
from pathlib import Path

from markdown_it import MarkdownIt

import hermes.attachment_blocks
import hermes.transcript_markdown
from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb
from hermes.transcript_markdown import session_markdown
from hermes.tui.widgets.notice import Notice

from .conftest import type_and_send, until

TOOL_OUTPUT = "```python\nprint('inner')\n```\nthen ```` four"
ANSWER = "Here:\n\n```sh\nls\n```"


def seed_fences(store: SyncStateDb) -> str:
    record = store.create_session(source="tui", model="scripted-model", title="Fences")
    store.append_message(record.id, NewMessage(role="user", content="Show ``` in a file"))
    call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "cat x.md"}'}}
    store.append_message(record.id, NewMessage(role="assistant", content=None, tool_calls=[call]))
    store.append_message(record.id, NewMessage(role="tool", content=TOOL_OUTPUT, tool_call_id="c1", tool_name="shell"))
    store.append_message(record.id, NewMessage(role="assistant", content=ANSWER))
    return record.id


async def test_export_keeps_triple_backticks_inside_their_fence(make_tui, store, tmp_path: Path):
    sid = seed_fences(store)
    app = make_tui(session_id=sid)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/export")
        await until(pilot, lambda: any("exported to" in n.text for n in app.chat.transcript.query(Notice)))
    # Under $HERMES_HOME/exports (the settings' home here), never in the project folder.
    text = (tmp_path / "exports" / f"hermes-{sid}.md").read_text(encoding="utf-8")
    assert not (tmp_path / f"hermes-{sid}.md").exists()

    # One exporter: the TUI's file is what `hermes sessions export -f markdown` prints.
    assert text == session_markdown(store.get_session(sid), store.get_messages(sid))

    tokens = MarkdownIt().parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Fences", "User", "Assistant", "Tool result (shell)", "Assistant"]
    fences = [(t.info, t.content) for t in tokens if t.type == "fence"]
    assert fences == [
        ("json", '{"command": "cat x.md"}\n'),
        ("", TOOL_OUTPUT + "\n"),  # read back whole: its ``` and ```` did not close the fence
        ("sh", "ls\n"),
    ]


def test_the_exporter_sits_below_the_cli_and_the_tui():
    """Both front ends import it, so it may import only the store, the text form of attachments
    (which imports nothing from hermes) and the standard library."""
    source = Path(hermes.transcript_markdown.__file__).read_text(encoding="utf-8")
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    allowed = {"hermes.store.records", "hermes.attachment_blocks"}
    assert {name for name in imported if name.startswith(("hermes", "."))} <= allowed
    blocks = Path(hermes.attachment_blocks.__file__).read_text(encoding="utf-8")
    assert not [line for line in blocks.splitlines() if line.startswith(("from hermes", "import hermes"))]


async def test_export_to_a_given_path_writes_there(make_tui, store, tmp_path: Path):
    sid = seed_fences(store)
    app = make_tui(session_id=sid)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/export notes/out.md")
        await until(pilot, lambda: any("✗ cannot write" in n.text for n in app.chat.transcript.query(Notice)))
        (tmp_path / "notes").mkdir()
        await type_and_send(pilot, "/export notes/out.md")
        await until(pilot, lambda: any("exported to" in n.text for n in app.chat.transcript.query(Notice)))
    assert (tmp_path / "notes" / "out.md").read_text(encoding="utf-8").startswith("# Fences")
    assert not (tmp_path / "exports").exists()
