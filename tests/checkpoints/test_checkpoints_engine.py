"""Turn checkpoints with real git: what the engine snapshots, undo, redo, diffs, pruning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from checkpoint_helpers import git

from hermes.agent.events import Status, ToolStarted
from hermes.agent.types import TurnRequest
from hermes.checkpoints import undo as undo_mod
from hermes.checkpoints.shadow import ShadowRepo, prune_session
from hermes.errors import FilesChangedOutside, NothingToUndo, TurnInProgress
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import call, text_reply, tool_reply


def edit_turn(upstream, *, text: str = "done") -> None:
    """One turn that edits with write_file, patch and terminal (sed -i, a new file, rm)."""
    upstream.enqueue(
        tool_reply([
            call("write_file", {"path": "new.py", "content": "print('hi')\n"}, id="w"),
            call("patch", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"}, id="p"),
        ]),
        tool_reply([call("terminal", {"command": "sed -i 's/gamma/GAMMA/' a.txt && echo made > made.txt "
                                                 "&& rm doomed.txt && echo noise > run.log"}, id="t")]),
        text_reply(text),
    )  # fmt: skip


async def run(agent, work: Path, text: str = "edit", session_id: str | None = None):
    return await collect_turn(agent, TurnRequest(input=text, cwd=str(work), yolo=True, session_id=session_id))


def user_repo_state(work: Path) -> tuple[str, str, str, str]:
    return (
        git(work, "--no-optional-locks", "status", "--porcelain"),
        git(work, "stash", "list"),
        git(work, "rev-parse", "HEAD"),
        git(work, "ls-files", "--stage"),
    )


async def test_a_turn_that_edits_is_snapshotted_and_undo_redo_restore_files(upstream, make_agent, store, home, work):
    before_repo = user_repo_state(work)
    edit_turn(upstream)
    events, result = await run(make_agent(), work)
    assert result.status == "completed"
    summary = [e.text for e in events if isinstance(e, Status) and e.kind == "files_changed"]
    assert summary == ["4 files changed, +4 −3"]
    assert (work / "a.txt").read_text() == "alpha\nBETA\nGAMMA\n"
    assert not (work / "doomed.txt").exists()
    # The user's own repository: working tree changed by the tools, but index, HEAD and stash untouched.
    after_repo = user_repo_state(work)
    assert after_repo[1:] == before_repo[1:]

    (row,) = await store.turn_checkpoints(result.session_id)
    assert row.before and row.after and row.worktree == str(work.resolve())
    patch = await undo_mod.turn_diff(store, home, result.session_id)
    assert "+print('hi')" in patch and "run.log" not in patch  # .gitignore respected

    outcome = await undo_mod.undo(store, home, result.session_id)
    assert sorted(outcome.files) == ["a.txt", "doomed.txt", "made.txt", "new.py"]
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert (work / "doomed.txt").read_text() == "bye\n"
    assert not (work / "new.py").exists() and not (work / "made.txt").exists()
    assert (work / "run.log").exists()  # ignored: never ours to touch
    assert user_repo_state(work) == before_repo
    assert await store.history(result.session_id) == []

    await undo_mod.redo(store, home, result.session_id)
    assert (work / "a.txt").read_text() == "alpha\nBETA\nGAMMA\n"
    assert (work / "new.py").read_text() == "print('hi')\n"
    assert not (work / "doomed.txt").exists()
    assert [m["role"] for m in await store.history(result.session_id)][0] == "user"
    with pytest.raises(NothingToUndo):
        await undo_mod.redo(store, home, result.session_id)


async def test_undo_refuses_to_overwrite_a_file_edited_outside(upstream, make_agent, store, home, work):
    edit_turn(upstream)
    _, result = await run(make_agent(), work)
    (work / "a.txt").write_text("mine now\n")
    with pytest.raises(FilesChangedOutside) as refused:
        await undo_mod.undo(store, home, result.session_id)
    assert refused.value.paths == ["a.txt"]
    assert (work / "a.txt").read_text() == "mine now\n"
    assert (work / "new.py").exists()  # nothing at all was changed
    assert len(await store.history(result.session_id)) > 0
    await undo_mod.undo(store, home, result.session_id, force=True)
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n"


async def test_undo_of_two_turns_and_turns_without_edits(upstream, make_agent, store, home, work):
    agent = make_agent()
    edit_turn(upstream)
    _, first = await run(agent, work)
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "third\n"})]), text_reply("ok"))
    await run(agent, work, session_id=first.session_id)
    upstream.enqueue(text_reply("just talk"))
    events, _ = await run(agent, work, session_id=first.session_id)
    assert not [e for e in events if isinstance(e, Status) and e.kind == "files_changed"]
    rows = await store.turn_checkpoints(first.session_id)
    assert [r.before is not None for r in rows] == [True, True, False]
    outcome = await undo_mod.undo(store, home, first.session_id, turns=3)
    assert len(outcome.turns) == 3
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    with pytest.raises(NothingToUndo):
        await undo_mod.undo(store, home, first.session_id)


async def test_the_diff_applies_with_git_apply_on_a_fresh_copy(upstream, make_agent, store, home, work, tmp_path):
    fresh = tmp_path / "fresh"
    shutil.copytree(work, fresh)
    edit_turn(upstream)
    _, result = await run(make_agent(), work)
    patch = await undo_mod.turn_diff(store, home, result.session_id, 1)
    subprocess.run(["git", "apply", "-"], cwd=fresh, input=patch, text=True, check=True)
    for name in ("a.txt", "new.py", "made.txt"):
        assert (fresh / name).read_text() == (work / name).read_text()
    assert not (fresh / "doomed.txt").exists()


async def test_a_folder_that_is_not_a_git_repository_works(upstream, make_agent, store, home, tmp_path):
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / ".gitignore").write_text("secret*\n")  # a nested .gitignore counts
    (plain / "keep.txt").write_text("1\n")
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "echo 2 > keep.txt && echo s > sub/secret.txt && echo x > sub/x"})]),
        text_reply("ok"),
    )
    _, result = await run(make_agent(), plain)
    patch = await undo_mod.turn_diff(store, home, result.session_id)
    assert "keep.txt" in patch and "sub/x" in patch and "secret" not in patch
    await undo_mod.undo(store, home, result.session_id)
    assert (plain / "keep.txt").read_text() == "1\n"
    assert not (plain / "sub" / "x").exists() and (plain / "sub" / "secret.txt").exists()


async def test_files_over_the_cap_are_left_out_with_a_notice(upstream, make_agent, store, home, work):
    (work / "big.bin").write_bytes(b"\0" * 3000)
    upstream.enqueue(tool_reply([call("write_file", {"path": "small.txt", "content": "s\n"})]), text_reply("ok"))
    events, result = await run(make_agent(max_file_kb=2), work)
    notices = [e.text for e in events if isinstance(e, Status) and e.kind == "checkpoint"]
    assert notices == ["checkpoint left out 1 file over 2 KB: big.bin"]
    assert "big.bin" not in await undo_mod.turn_diff(store, home, result.session_id)


async def test_snapshots_are_pruned_with_their_session(upstream, make_agent, store, home, work):
    edit_turn(upstream)
    _, result = await run(make_agent(), work)
    repo = ShadowRepo.for_worktree(home, work)
    refs = git(repo.git_dir, "--git-dir", str(repo.git_dir), "for-each-ref", "--format=%(refname)")
    assert len(refs.split()) == 2
    assert await prune_session(home, result.session_id) == 2
    assert git(repo.git_dir, "--git-dir", str(repo.git_dir), "for-each-ref") == ""


async def test_undo_is_refused_while_a_turn_is_open(upstream, make_agent, store, home, work):
    session = await store.create_session(source="cli")
    from hermes.store.records import NewMessage

    await store.open_turn(session.id, NewMessage(role="user", content="running"))
    with pytest.raises(TurnInProgress):
        await undo_mod.undo(store, home, session.id)


def _bwrap_works() -> bool:
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    return resolve_sandbox(SandboxConfig(mode="auto")).active


@pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap is missing or does not work here")
async def test_snapshots_work_with_the_sandbox_on(upstream, make_agent, store, home, work):
    from hermes.agent.safety.launch import ToolLauncher
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    launcher = ToolLauncher(sandbox=resolve_sandbox(SandboxConfig(mode="on", hidden=(home,))))
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "sed -i 's/alpha/ALPHA/' a.txt && echo n > n.txt"})]),
        text_reply("ok"),
    )
    events, result = await run(make_agent(launcher=launcher), work)
    assert [e.text for e in events if isinstance(e, Status) and e.kind == "files_changed"] == [
        "2 files changed, +2 −1"
    ]
    await undo_mod.undo(store, home, result.session_id)
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n" and not (work / "n.txt").exists()


async def test_without_git_the_turn_says_so_once_and_goes_on(upstream, make_agent, store, home, work, monkeypatch):
    empty = work.parent / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    agent = make_agent()
    upstream.enqueue(tool_reply([call("write_file", {"path": "x.txt", "content": "x\n"})]), text_reply("ok"))
    events, result = await run(agent, work)
    assert [e.text for e in events if isinstance(e, Status) and e.kind in ("checkpoint", "files_changed")] == [
        "git is not installed: no file checkpoints this session (undo and diff need them)"
    ]
    assert (work / "x.txt").read_text() == "x\n" and result.status == "completed"
    upstream.enqueue(tool_reply([call("write_file", {"path": "y.txt", "content": "y\n"})]), text_reply("ok"))
    events, _ = await run(agent, work, session_id=result.session_id)
    assert not [e for e in events if isinstance(e, Status) and e.kind == "checkpoint"]  # said once
    assert (await store.turn_checkpoints(result.session_id))[0].before is None


async def test_a_turn_that_only_keeps_a_plan_takes_no_snapshot(upstream, make_agent, store, home, work):
    plan = [{"content": "edit a.txt", "status": "in_progress"}]
    upstream.enqueue(
        tool_reply([call("todo", {"todos": plan}), call("read_file", {"path": "a.txt"})]), text_reply("ok")
    )
    events, result = await run(make_agent(), work)
    assert result.status == "completed"
    assert not [e for e in events if isinstance(e, Status) and e.kind in ("checkpoint", "files_changed")]
    assert [r.before for r in await store.turn_checkpoints(result.session_id)] == [None]


async def test_a_turn_stopped_mid_tool_still_takes_its_end_snapshot(upstream, make_agent, store, home, work):
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "a.txt", "content": "rewritten\n"}, id="w")]),
        tool_reply([call("terminal", {"command": "sleep 300"}, id="t")]),  # runs until the stop
    )
    request = TurnRequest(input="edit, then wait", cwd=str(work), yolo=True)
    async with make_agent().start(request) as handle:
        events = []
        async for event in handle.events():
            events.append(event)
            if isinstance(event, ToolStarted) and event.call_id == "t":
                handle.stop()
    result = events[-1].result
    assert result.status == "interrupted"
    assert [e.text for e in events if isinstance(e, Status) and e.kind == "files_changed"] == ["1 file changed, +1 −3"]
    (row,) = await store.turn_checkpoints(result.session_id)
    assert row.ended and row.before and row.after and row.before != row.after
    assert (work / "a.txt").read_text() == "rewritten\n"
    outcome = await undo_mod.undo(store, home, result.session_id)
    assert outcome.files == ("a.txt",)
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
