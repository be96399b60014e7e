"""Secrets and the file tools: hidden paths are never read in any mode; private keys elsewhere
are read in server mode only with approval, and freely by local front ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from approvers import Approver

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.file_search import search_files
from hermes.agent.tools.files import patch, read_file
from hermes.agent.types import ApprovalDecision

KEY_TEXT = "-----BEGIN RSA PRIVATE KEY-----\nMIIEneedle\n-----END RSA PRIVATE KEY-----\n"


def server_ctx(cwd: Path, approve: Approver | None = None) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd, approve=approve, source="api_server")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "server.pem").write_text(KEY_TEXT)
    (folder / "notes.txt").write_text("a needle in the notes\n")
    return folder


async def test_server_read_of_a_private_key_is_denied_without_approval(project: Path) -> None:
    out = await read_file({"path": "server.pem"}, server_ctx(project))

    assert out.startswith(f"DENIED: reading {project / 'server.pem'} was not done (nothing was read).")
    assert "[rule: private_key_read]" in out and "MIIE" not in out


async def test_server_read_with_approval_returns_the_file(project: Path) -> None:
    approver = Approver(ApprovalDecision.ONCE)

    out = await read_file({"path": "server.pem"}, server_ctx(project, approver))

    assert "MIIEneedle" in out
    assert [(r.tool_name, r.rule) for r in approver.requests] == [("read_file", "private_key_read")]
    assert approver.requests[0].reason == "read a private key (server.pem)"


async def test_denied_approval_keeps_the_file_unread(project: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)

    out = await read_file({"path": "server.pem"}, server_ctx(project, approver))

    assert out.startswith("DENIED:") and "the user denied it" in out and "MIIE" not in out


async def test_local_front_ends_read_freely(project: Path) -> None:
    out = await read_file({"path": "server.pem"}, ToolContext(session_id="s", cwd=project, source="cli"))

    assert "MIIEneedle" in out


@pytest.mark.parametrize("source", ["api_server", "cli"])
async def test_etc_shadow_is_hidden_in_every_mode(tmp_path: Path, source: str) -> None:
    ctx = ToolContext(session_id="s", cwd=tmp_path, approve=Approver(ApprovalDecision.ONCE), source=source)
    out = await read_file({"path": "/etc/shadow"}, ctx)

    assert out.startswith("BLOCKED by the safety policy: reading /etc/shadow") and "[rule: hidden_path]" in out
    assert "root:" not in out


@pytest.mark.parametrize("source", ["api_server", "cli"])
async def test_hermes_home_is_hidden_also_through_links(tmp_path: Path, hermes_home: Path, source: str) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text('api_key = "sk-stored"\n')
    (tmp_path / "innocent.txt").symlink_to(hermes_home / "config.toml")
    (tmp_path / "id_ed25519").write_text("not even PEM, but an SSH key by name\n")
    ctx = ToolContext(session_id="s", cwd=tmp_path, source=source, yolo=True)

    direct = await read_file({"path": str(hermes_home / "config.toml")}, ctx)
    linked = await read_file({"path": "innocent.txt"}, ctx)
    by_name = await read_file({"path": "id_ed25519"}, server_ctx(tmp_path))

    assert "[rule: hidden_path]" in direct and "[rule: hidden_path]" in linked
    assert "sk-stored" not in direct + linked
    assert "[rule: private_key_read]" in by_name


async def test_search_skips_secrets_in_server_mode_and_refuses_hermes_home(project: Path, hermes_home: Path) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text("needle\n")

    found = await search_files({"pattern": "needle"}, server_ctx(project))
    refused = await search_files({"pattern": "needle", "path": str(hermes_home)}, server_ctx(project))
    local = await search_files({"pattern": "needle"}, ToolContext(session_id="s", cwd=project))

    assert "notes.txt:1: a needle in the notes" in found and "server.pem" not in found
    assert refused.startswith("BLOCKED") and "[rule: hidden_path]" in refused and "config.toml" not in refused
    assert "server.pem:2: MIIEneedle" in local


async def test_server_patch_of_a_key_is_denied(project: Path) -> None:
    out = await patch({"path": "server.pem", "old_string": "needle", "new_string": "pin"}, server_ctx(project))

    assert out.startswith("DENIED:") and "[rule: private_key_read]" in out
    assert (project / "server.pem").read_text() == KEY_TEXT
