"""Images over ACP: the agent advertises them, passes an editor's image block to the model as an
`image_url` data URL, stores it, gives it back on session/load, and refuses a non-image."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from _acp_harness import EditorClient, Transcript, capabilities, hermes_acp
from acp import PROTOCOL_VERSION, RequestError, image_block, text_block

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, text_reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x03" * 30
PNG64 = base64.b64encode(PNG).decode()


async def test_an_image_block_reaches_the_model_and_comes_back_on_load(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("A tiny PNG."))
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream, Transcript()) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities.image is True
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("what is this?"), image_block(PNG64, "image/png")]
        )
        assert response.stop_reason == "end_turn"
        sent = upstream.requests[0].body["messages"][-1]
        assert sent["content"] == [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
        ]
        store = open_sync_state(hermes_home / "state.db")
        try:
            (user,) = [m for m in store.history(session.session_id) if m["role"] == "user"]
        finally:
            store.close()
        assert user["content"] == sent["content"]

        # a block that is no image (by its bytes, whatever its MIME type says) is refused
        with pytest.raises(RequestError) as refused:
            await conn.prompt(
                session_id=session.session_id,
                prompt=[text_block("and this?"), image_block(base64.b64encode(b"<svg/>").decode(), "image/png")],
            )
        assert "not a PNG, JPEG, GIF or WebP image" in str(refused.value.data)
        assert len(upstream.requests) == 1

    loader = EditorClient()
    async with hermes_acp(loader, hermes_home, upstream, Transcript()) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        await conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
    chunks = [u.content for _, u in loader.updates if u.session_update == "user_message_chunk"]
    images = [chunk for chunk in chunks if chunk.type == "image"]
    assert [(i.mime_type, i.data) for i in images] == [("image/png", PNG64)]


async def test_mentions_and_resource_links_attach_files_and_refusals_are_said(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    from acp import resource_link_block

    from hermes.attachment_blocks import split

    (tmp_path / "notes.md").write_text("the notes\n")
    (tmp_path / "app.py").write_text("print('app')\n")
    (tmp_path / ".env").write_text("TOKEN=ZQX-SECRET\n")
    upstream.enqueue(text_reply("Read."))
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream, Transcript()) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        link = resource_link_block("app.py", (tmp_path / "app.py").as_uri())
        await conn.prompt(session_id=session.session_id, prompt=[text_block("read @notes.md and @.env"), link])
    sent = upstream.requests[0].body["messages"][-1]["content"]
    typed, attachments = split(sent)
    assert typed.startswith("read @notes.md and @.env")
    assert [(a.path, a.body) for a in attachments] == [
        ("notes.md", "the notes\n"),
        (str(tmp_path / "app.py"), "print('app')\n"),
    ]
    assert "ZQX-SECRET" not in sent
    assert client.text().startswith("⚠ @.env was not attached")
