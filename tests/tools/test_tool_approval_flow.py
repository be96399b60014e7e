"""Approval as the tools live it: ONCE / SESSION / DENY answers, no approver, yolo, hard blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from approvers import Approver

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, write_file
from hermes.agent.tools.terminal import terminal
from hermes.agent.types import ApprovalDecision, ApprovalRequest


def _ctx(cwd: Path, approver: Approver | None = None, *, yolo: bool = False) -> ToolContext:
    return ToolContext(session_id="sess", cwd=cwd, call_id="call-1", approve=approver, yolo=yolo)


def _victim(tmp_path: Path, name: str = "victim") -> Path:
    folder = tmp_path / name
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "file.txt").write_text("data")
    return folder


async def test_once_runs_the_command_and_asks_again_next_time(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.ONCE)
    ctx = _ctx(tmp_path, approver)
    first, second = _victim(tmp_path, "a"), _victim(tmp_path, "b")

    result = await terminal({"command": "rm -r a"}, ctx)
    assert result.startswith("exit code: 0")
    assert not first.exists()
    [request] = approver.requests
    assert request.tool_name == "terminal"
    assert request.command == "rm -r a"
    assert request.rule == "recursive_delete"
    assert "recursive delete" in request.reason
    assert (request.session_id, request.call_id) == ("sess", "call-1")

    await terminal({"command": "rm -r b"}, ctx)
    assert not second.exists()
    assert len(approver.requests) == 2
    assert ctx.session_approvals == set()


async def test_session_answer_covers_the_exact_command_only(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.SESSION)
    ctx = _ctx(tmp_path, approver)
    first = _victim(tmp_path, "a")

    await terminal({"command": "rm -rf a"}, ctx)
    assert not first.exists()
    [request] = approver.requests
    assert request.grant == f"this exact command in {tmp_path}: rm -rf a"

    approver.decision = ApprovalDecision.DENY  # would refuse if it were asked again
    _victim(tmp_path, "a")
    result = await terminal({"command": "rm -rf a"}, ctx)
    assert not (tmp_path / "a").exists(), result
    assert len(approver.requests) == 1  # the same command in the same folder: granted

    second = _victim(tmp_path, "b")
    other = await terminal({"command": "rm -rf b"}, ctx)
    assert len(approver.requests) == 2  # same rule, another command: asked again
    assert other.startswith("DENIED") and second.exists()

    (tmp_path / "x.tmp").write_text("")
    other = await terminal({"command": "find . -name '*.tmp' -delete"}, ctx)
    assert len(approver.requests) == 3
    assert approver.requests[-1].rule == "find_delete"
    assert other.startswith("DENIED")
    assert (tmp_path / "x.tmp").exists()


async def test_deny_does_not_run_and_tells_the_model_not_to_retry(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)
    folder = _victim(tmp_path)
    result = await terminal({"command": "rm -rf victim"}, _ctx(tmp_path, approver))
    assert folder.exists()
    assert len(approver.requests) == 1
    assert result.startswith("DENIED")
    assert "was not run" in result
    assert "the user denied it" in result
    assert "Do not retry" in result
    assert "recursive_delete" in result


async def test_without_an_approver_risky_commands_are_denied(tmp_path: Path) -> None:
    folder = _victim(tmp_path)
    result = await terminal({"command": "rm -rf victim"}, _ctx(tmp_path))
    assert folder.exists()
    assert result.startswith("DENIED")
    assert "no one can approve it" in result
    assert "Do not retry" in result


async def test_approval_request_hook_sees_the_request(tmp_path: Path) -> None:
    seen: list[ApprovalRequest] = []
    ctx = _ctx(tmp_path, Approver(ApprovalDecision.DENY))
    ctx.on_approval_request = seen.append
    await terminal({"command": "git reset --hard"}, ctx)
    assert [r.rule for r in seen] == ["git_reset_hard"]


async def test_yolo_runs_approval_level_commands_without_asking(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)
    folder = _victim(tmp_path)
    result = await terminal({"command": "rm -rf victim"}, _ctx(tmp_path, approver, yolo=True))
    assert not folder.exists(), result
    assert approver.requests == []


# Hard-blocked commands chosen so that, should the policy ever fail, running them is harmless:
# the programs do not exist, and the marker file proves whether anything ran.
HARMLESS_BLOCKED = [
    "mkfs.hermes-test-missing disk.img; touch MARKER",
    "/nonexistent/reboot; touch MARKER",
    "bash -c 'mkfs.hermes-test-missing x'; touch MARKER",
]


@pytest.mark.parametrize("command", HARMLESS_BLOCKED)
async def test_blocked_commands_never_run_even_with_yolo_or_session(tmp_path: Path, command: str) -> None:
    approver = Approver(ApprovalDecision.ONCE)
    ctx = _ctx(tmp_path, approver, yolo=True)
    ctx.session_approvals.update({"format_filesystem", "shutdown"})
    result = await terminal({"command": command}, ctx)
    assert result.startswith("BLOCKED by the safety policy")
    assert "never will be" in result
    assert "Do not retry" in result
    assert approver.requests == []
    assert not (tmp_path / "MARKER").exists()


async def test_block_is_reported_without_asking(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.ONCE)
    result = await terminal({"command": "rm -rf / ; touch MARKER"}, _ctx(tmp_path, approver))
    assert result.startswith("BLOCKED")
    assert "rm_critical" in result
    assert approver.requests == []
    assert not (tmp_path / "MARKER").exists()


async def test_write_file_to_shell_rc_needs_approval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    rc = home / ".bashrc"

    denier = Approver(ApprovalDecision.DENY)
    result = await write_file({"path": "~/.bashrc", "content": "alias x=y\n"}, _ctx(tmp_path, denier))
    assert result.startswith("DENIED")
    assert "the file is unchanged" in result
    assert "Do not retry" in result
    assert not rc.exists()
    [request] = denier.requests
    assert (request.tool_name, request.command, request.rule) == ("write_file", str(rc), "shell_rc_write")

    granter = Approver(ApprovalDecision.ONCE)
    result = await write_file({"path": "~/.bashrc", "content": "alias x=y\n"}, _ctx(tmp_path, granter))
    assert result.startswith("Created")
    assert rc.read_text() == "alias x=y\n"


async def test_the_ssh_folder_is_hidden_from_patch_even_with_yolo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config = home / ".ssh" / "config"
    config.write_text("Host a\n  User old\n")
    args = {"path": str(config), "old_string": "User old", "new_string": "User new"}

    for ctx in (_ctx(tmp_path), _ctx(tmp_path, yolo=True)):
        result = await patch(args, ctx)
        assert result.startswith("BLOCKED") and "[rule: hidden_path]" in result
    assert config.read_text() == "Host a\n  User old\n"


async def test_ordinary_writes_do_not_ask(tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)
    result = await write_file({"path": "notes/a.txt", "content": "hi"}, _ctx(tmp_path, approver))
    assert result.startswith("Created")
    assert approver.requests == []
