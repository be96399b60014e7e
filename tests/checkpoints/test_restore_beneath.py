"""Undo and redo never write outside the worktree: the attacks of a hostile repository.

A turn edits `d/x`; then something the turn ran (a `make test`, an npm script) swaps the
folder `d/` for a symlink to a folder outside and hides it with a line in
`.git/info/exclude`. Undo, redo and forced undo must refuse, name the path and change
nothing, inside or outside. Each runs with openat2 and with the O_NOFOLLOW walk.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from checkpoint_helpers import git

from hermes import beneath
from hermes.agent.safety.restore_guard import restore_guard
from hermes.agent.types import TurnRequest
from hermes.checkpoints import undo as undo_mod
from hermes.checkpoints.shadow import Entry, ShadowRepo
from hermes.config import Settings
from hermes.errors import CheckpointError, RestoreRefused
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import call, text_reply, tool_reply


@pytest.fixture(params=["openat2", "fallback"])
def beneath_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(beneath, "USE_OPENAT2", request.param == "openat2")
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The folder the attacker points `d` at, holding a file of the victim's."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "x").write_text("victim\n")
    return folder


def listing(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def swap_for_symlink(work: Path, outside: Path) -> None:
    """What a hostile script run by the turn does: `d/` becomes a symlink, hidden from git."""
    if (work / "d").exists():
        os.rename(work / "d", work / "d.moved")
    os.symlink(outside, work / "d")
    with (work / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("d\n")


async def run_turn(upstream, agent, work: Path, *calls) -> str:
    upstream.enqueue(tool_reply(list(calls)), text_reply("done"))
    _, result = await collect_turn(agent, TurnRequest(input="edit", cwd=str(work), yolo=True))
    assert result.status == "completed"
    return result.session_id


async def test_undo_of_a_deleted_file_does_not_write_through_a_symlinked_folder(
    beneath_mode, upstream, make_agent, store, home, work, outside
):
    (work / "d").mkdir()
    (work / "d" / "x").write_text("old\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "d")
    (outside / "x").unlink()  # nothing there: undo would create out/x
    session = await run_turn(upstream, make_agent(), work, call("terminal", {"command": "rm d/x"}))
    swap_for_symlink(work, outside)

    with pytest.raises(RestoreRefused) as refused:
        await undo_mod.undo(store, home, session)
    assert refused.value.paths == ["d/x"]
    assert "d/x (its folder d is a symlink)" in str(refused.value)
    assert listing(outside) == {}
    assert len(await store.history(session)) > 0  # the turn is still shown: nothing changed


async def test_redo_does_not_write_through_a_symlinked_folder(
    beneath_mode, upstream, make_agent, store, home, work, outside
):
    session = await run_turn(upstream, make_agent(), work, call("write_file", {"path": "d/x", "content": "new\n"}))
    await undo_mod.undo(store, home, session)
    assert not (work / "d").exists()  # the emptied folder went too
    swap_for_symlink(work, outside)

    with pytest.raises(RestoreRefused, match=r"d/x \(its folder d is a symlink\)"):
        await undo_mod.redo(store, home, session)
    with pytest.raises(RestoreRefused):
        await undo_mod.redo(store, home, session, force=True)
    assert listing(outside) == {"x": "victim\n"}
    assert await store.history(session) == []  # still undone


async def test_forced_undo_does_not_delete_through_a_symlinked_folder(
    beneath_mode, upstream, make_agent, store, home, work, outside
):
    session = await run_turn(upstream, make_agent(), work, call("write_file", {"path": "d/x", "content": "new\n"}))
    swap_for_symlink(work, outside)

    for force in (False, True):
        with pytest.raises(RestoreRefused) as refused:
            await undo_mod.undo(store, home, session, force=force)
        assert refused.value.paths == ["d/x"]
    assert listing(outside) == {"x": "victim\n"}
    assert (work / "d.moved" / "x").read_text() == "new\n"

    # Put back as it was, the same undo goes through.
    os.unlink(work / "d")
    os.rename(work / "d.moved", work / "d")
    exclude = work / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text().replace("d\n", ""))
    outcome = await undo_mod.undo(store, home, session)
    assert outcome.files == ("d/x",) and not (work / "d").exists()


async def test_a_refused_path_means_no_partial_restore(beneath_mode, upstream, make_agent, store, home, work, outside):
    session = await run_turn(
        upstream, make_agent(), work,
        call("write_file", {"path": "a.txt", "content": "changed\n"}, id="a"),
        call("write_file", {"path": "d/x", "content": "new\n"}, id="b"),
    )  # fmt: skip
    swap_for_symlink(work, outside)
    with pytest.raises(RestoreRefused) as refused:
        await undo_mod.undo(store, home, session, force=True)
    assert refused.value.paths == ["d/x"]
    assert (work / "a.txt").read_text() == "changed\n"  # sorted before d/x, and still not written


async def test_the_worktree_itself_swapped_for_a_symlink_is_refused(
    beneath_mode, upstream, make_agent, store, home, work, outside
):
    session = await run_turn(upstream, make_agent(), work, call("write_file", {"path": "n.txt", "content": "n\n"}))
    os.rename(work, work.parent / "work.moved")
    os.symlink(outside, work)
    with pytest.raises(RestoreRefused, match="the worktree"):
        await undo_mod.undo(store, home, session, force=True)
    assert listing(outside) == {"x": "victim\n"}


async def _blob_entry(repo: ShadowRepo) -> Entry:
    entries = await repo.entries((await repo.snapshot()).commit)
    return entries["a.txt"]


@pytest.mark.parametrize("target", ["../escaped", "/tmp/escaped-absolute", "d/../../escaped", "./a.txt", "d//x"])
async def test_a_target_that_leaves_the_worktree_is_refused(beneath_mode, home, work, target):
    repo = ShadowRepo.for_worktree(home, work)
    entry = await _blob_entry(repo)
    with pytest.raises(RestoreRefused) as refused:
        await repo.restore({target: entry, "b.txt": entry})
    assert refused.value.paths == [target]
    assert target in str(refused.value)
    assert not (work / "b.txt").exists()  # checked before anything was written
    assert not (work.parent / "escaped").exists() and not Path("/tmp/escaped-absolute").exists()


@pytest.mark.parametrize("target", [".git/config", ".git/hooks/pre-commit", "sub/.git/hooks/x", ".git"])
async def test_git_internals_are_never_restored(beneath_mode, home, work, target):
    repo = ShadowRepo.for_worktree(home, work)
    entry = await _blob_entry(repo)
    config = (work / ".git" / "config").read_text()
    with pytest.raises(RestoreRefused, match=r"git's own files"):
        await repo.restore({target: entry}, refuse=undo_mod.path_refuser(home, repo.worktree, None))
    assert (work / ".git" / "config").read_text() == config
    assert not (work / ".git" / "hooks" / "pre-commit").exists()


async def test_a_protected_target_is_refused_even_with_force(
    beneath_mode, upstream, make_agent, store, home, work, monkeypatch
):
    """The worktree is the home folder: a turn wrote ~/.bashrc (approved); undo has nobody to
    ask, so the confinement's guard refuses it, force or not."""
    monkeypatch.setenv("HOME", str(work))
    session = await run_turn(upstream, make_agent(), work, call("write_file", {"path": ".bashrc", "content": "x\n"}))
    guard = restore_guard(Settings(home=home))
    for force in (False, True):
        with pytest.raises(RestoreRefused, match=r"\.bashrc \(the shell startup file ~/\.bashrc is never restored\)"):
            await undo_mod.undo(store, home, session, force=force, guard=guard)
    assert (work / ".bashrc").read_text() == "x\n"


async def test_hermes_own_files_are_never_restored(beneath_mode, home, work):
    repo = ShadowRepo.for_worktree(home, work)
    entry = await _blob_entry(repo)
    inside_home = ShadowRepo.for_worktree(home, home.parent)
    refuse = undo_mod.path_refuser(home, inside_home.worktree, None)
    with pytest.raises(RestoreRefused, match="hermes's own files"):
        await inside_home.restore({f"{home.name}/config.toml": entry}, refuse=refuse)
    assert not (home / "config.toml").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files as another user")
async def test_a_worktree_of_another_user_cannot_turn_roots_redo_into_a_write_elsewhere(
    beneath_mode, upstream, make_agent, store, home, work, tmp_path
):
    """The worktree belongs to another local user (nobody), who swaps `d/` for a symlink to a
    folder only root may write; root's redo refuses, whoever owns the link."""
    session = await run_turn(upstream, make_agent(), work, call("write_file", {"path": "d/x", "content": "new\n"}))
    await undo_mod.undo(store, home, session)
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    for path in (work, *work.rglob("*")):
        os.lchown(path, 65534, 65534)
    os.symlink(root_only, work / "d")
    os.lchown(work / "d", 65534, 65534)
    with (work / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("d\n")
    with pytest.raises(RestoreRefused, match=r"d/x \(its folder d is a symlink\)"):
        await undo_mod.redo(store, home, session, force=True)
    assert os.listdir(root_only) == []


async def test_a_folder_where_a_file_goes_changes_nothing(beneath_mode, home, work):
    repo = ShadowRepo.for_worktree(home, work)
    entry = await _blob_entry(repo)
    (work / "sub").mkdir()
    with pytest.raises(CheckpointError, match="could not restore sub: a folder stands there; nothing was changed"):
        await repo.restore({"b.txt": entry, "sub": entry})
    assert not (work / "b.txt").exists()
