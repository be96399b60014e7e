"""hermes' own git is isolated: a hostile git setup (the user's ~/.gitconfig, XDG config,
the worktree's own .git/config, .gitattributes, GIT_* variables) never makes the
checkpoint git run a command, and snapshots stay byte-exact.

Every attack arms a script that touches a marker file; a control run of the user's own
`git` shows the trap is live, then a real turn (snapshots), its diff, undo and redo go
through the real checkpoint code and the marker must never appear.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from checkpoint_helpers import make_work_repo

from hermes.agent.events import Status
from hermes.agent.types import TurnRequest
from hermes.checkpoints import undo as undo_mod
from hermes.checkpoints.isolated_git import git_env
from hermes.checkpoints.shadow import ShadowRepo
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import call, text_reply, tool_reply

HOOKS = ("pre-commit", "post-commit", "post-index-change", "reference-transaction", "pre-auto-gc", "post-checkout",
         "fsmonitor-watchman")  # fmt: skip


def trap(folder: Path, name: str, markers: Path) -> Path:
    """An executable script that records it ran (a file in `markers`), and fails."""
    script = folder / name
    script.write_text(f"#!/bin/sh\ntouch '{markers}/{name}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def hostile_config(traps: Path, markers: Path) -> str:
    hooks = traps / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in HOOKS:
        trap(hooks, hook, markers)
    attributes = traps / "attributes"
    attributes.write_text("* filter=x diff=x merge=x\n")
    names = ("fsmonitor", "clean", "smudge", "textconv", "diffcmd", "external", "pager", "editor", "ssh", "askpass")
    t = {name: trap(traps, name, markers) for name in names}
    return (
        f"[core]\n\tfsmonitor = {t['fsmonitor']}\n\thooksPath = {hooks}\n\tattributesFile = {attributes}\n"
        f"\tpager = {t['pager']}\n\teditor = {t['editor']}\n\tsshCommand = {t['ssh']}\n\taskPass = {t['askpass']}\n"
        f'[filter "x"]\n\tclean = {t["clean"]}\n\tsmudge = {t["smudge"]}\n\trequired = true\n'
        f'[diff "x"]\n\ttextconv = {t["textconv"]}\n\tcommand = {t["diffcmd"]}\n'
        f"[diff]\n\texternal = {t['external']}\n"
        f"[commit]\n\tgpgSign = true\n"
    )


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(extra)
    return env


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


async def edit_and_undo(agent, store, home: Path, project: Path) -> None:
    """A real turn that edits (write_file, patch, terminal), its diff, undo and redo."""
    events, result = await collect_turn(agent, TurnRequest(input="edit", cwd=str(project), yolo=True))
    assert result.status == "completed", result
    changed = [e.text for e in events if isinstance(e, Status) and e.kind in ("files_changed", "checkpoint")]
    assert len(changed) == 1 and changed[0].startswith("3 files changed"), changed
    patch = await undo_mod.turn_diff(store, home, result.session_id)
    assert "+NEW" in patch and "+print('hi')" in patch
    colored = await undo_mod.turn_changes(store, home, result.session_id, color=True)
    assert colored.files
    await undo_mod.undo(store, home, result.session_id)
    await undo_mod.redo(store, home, result.session_id)
    await undo_mod.undo(store, home, result.session_id)


def enqueue_edit(upstream) -> None:
    upstream.enqueue(
        tool_reply([
            call("write_file", {"path": "new.py", "content": "print('hi')\n"}, id="w"),
            call("patch", {"path": "a.txt", "old_string": "beta", "new_string": "NEW"}, id="p"),
        ]),
        tool_reply([call("terminal", {"command": "printf 'x\\r\\ny\\n' > crlf.txt"}, id="t")]),
        text_reply("done"),
    )  # fmt: skip


def hostile_project(root: Path) -> Path:
    """The user's project: a git repository whose .gitattributes names the hostile drivers
    and asks for conversions that would change bytes (eol, ident, an encoding)."""
    project = make_work_repo(root)
    (project / ".gitattributes").write_text(
        "* filter=x diff=x merge=x text eol=crlf ident\n*.txt working-tree-encoding=UTF-16\n"
    )
    (project / "crlf.txt").write_bytes(b"one\r\ntwo\n$Id$\n")
    return project


@pytest.mark.parametrize("where", ["home", "xdg"])
async def test_a_hostile_user_git_config_runs_nothing(where, upstream, make_agent, store, home, tmp_path,
                                                       monkeypatch):  # fmt: skip
    user_home = tmp_path / "userhome"
    user_home.mkdir()
    markers, traps = tmp_path / "markers", tmp_path / "traps"
    markers.mkdir()
    traps.mkdir()
    config = hostile_config(traps, markers)
    if where == "home":
        (user_home / ".gitconfig").write_text(config)
    else:
        (user_home / ".config" / "git").mkdir(parents=True)
        (user_home / ".config" / "git" / "config").write_text(config)
    project = hostile_project(user_home / "project")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)

    # The control: the user's own git, run as a tool would, does run the fsmonitor trap.
    subprocess.run(["git", "status", "--short"], cwd=project, env=clean_env(HOME=str(user_home)),
                   capture_output=True, check=False)  # fmt: skip
    assert "fsmonitor" in ran(markers)
    for marker in markers.iterdir():
        marker.unlink()

    # Inherited GIT_* variables that would name commands or other repositories.
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{traps / 'fsmonitor'}'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(traps / "hooks"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(traps / "external"))
    monkeypatch.setenv("GIT_PAGER", str(traps / "pager"))
    monkeypatch.setenv("GIT_EDITOR", str(traps / "editor"))
    monkeypatch.setenv("GIT_ASKPASS", str(traps / "askpass"))
    monkeypatch.setenv("GIT_SSH_COMMAND", str(traps / "ssh"))
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "stolen-index"))

    enqueue_edit(upstream)
    crlf_before = (project / "crlf.txt").read_bytes()
    await edit_and_undo(make_agent(), store, home, project)
    assert ran(markers) == []
    # Byte-exact despite the attributes: no eol, ident or encoding conversion either way.
    assert (project / "crlf.txt").read_bytes() == crlf_before
    assert not (tmp_path / "stolen-index").exists()
    assert "filter" not in (ShadowRepo.for_worktree(home, project).git_dir / "config").read_text()


async def test_the_worktrees_own_git_config_is_never_read(upstream, make_agent, store, home, tmp_path):
    markers, traps = tmp_path / "markers", tmp_path / "traps"
    markers.mkdir()
    traps.mkdir()
    project = hostile_project(tmp_path / "project")
    with (project / ".git" / "config").open("a") as handle:
        handle.write(hostile_config(traps, markers))
    for hook in HOOKS:
        trap(project / ".git" / "hooks", hook, markers)
    subprocess.run(["git", "status", "--short"], cwd=project, env=clean_env(), capture_output=True, check=False)
    assert "fsmonitor" in ran(markers)  # the control: the trap is live for the user's git
    for marker in markers.iterdir():
        marker.unlink()

    enqueue_edit(upstream)
    await edit_and_undo(make_agent(), store, home, project)
    assert ran(markers) == []
    # The shadow repository is hermes' own git dir, not the worktree's.
    shadow = ShadowRepo.for_worktree(home, project).git_dir
    assert shadow.is_relative_to(home) and (shadow / "HEAD").is_file()
    assert (shadow / "info" / "attributes").read_text().startswith("* -text")
    assert not (shadow / "hooks").exists()


def test_the_environment_of_hermes_git_keeps_no_inherited_git_variable(monkeypatch):
    inherited = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                 "GIT_EXEC_PATH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL")
    for name in inherited:
        monkeypatch.setenv(name, "/attacker")
    env = git_env()
    assert {k: v for k, v in env.items() if k.startswith("GIT_") and v == "/attacker"} == {}
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


async def test_the_users_global_excludes_file_still_counts_and_cannot_block(upstream, make_agent, store, home,
                                                                           tmp_path, monkeypatch):  # fmt: skip
    user_home = tmp_path / "userhome"
    user_home.mkdir()
    (user_home / ".gitignore_global").write_text("*.mine\n")
    (user_home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/.gitignore_global\n")
    monkeypatch.setenv("HOME", str(user_home))
    project = make_work_repo(user_home / "project")
    (project / "notes.mine").write_text("private\n")
    writes = [call("write_file", {"path": "n.mine", "content": "x\n"}),
              call("write_file", {"path": "n.txt", "content": "x\n"})]  # fmt: skip
    upstream.enqueue(tool_reply(writes), text_reply("ok"))
    _, result = await collect_turn(make_agent(), TurnRequest(input="e", cwd=str(project), yolo=True))
    patch = await undo_mod.turn_diff(store, home, result.session_id)
    assert "n.txt" in patch and ".mine" not in patch

    # A FIFO named as the excludes file is not read (nothing blocks).
    os.mkfifo(user_home / "fifo")
    (user_home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {user_home / 'fifo'}\n")
    upstream.enqueue(tool_reply([call("write_file", {"path": "m.txt", "content": "y\n"})]), text_reply("ok"))
    events, result = await collect_turn(make_agent(), TurnRequest(input="e", cwd=str(project), yolo=True))
    assert [e.text for e in events if isinstance(e, Status) and e.kind == "files_changed"] == [
        "1 file changed, +1 −0"
    ]


async def test_snapshots_keep_exact_bytes_whatever_the_attributes_say(home, tmp_path):
    project = hostile_project(tmp_path / "project")
    (project / "enc.txt").write_bytes("héllo\r\n".encode())
    repo = ShadowRepo.for_worktree(home, project)
    snap = await repo.snapshot()
    for name in ("crlf.txt", "enc.txt", "a.txt"):
        blob = (await repo.entries(snap.commit))[name].blob
        assert await repo.git("cat-file", "blob", blob) == (project / name).read_bytes()
