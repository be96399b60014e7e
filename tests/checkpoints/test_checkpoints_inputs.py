"""Snapshot inputs an attacker (or an unlucky user) controls: session ids that are not valid
git refs, file names holding newlines, credential stores under the working directory,
`/` or a folder above $HOME as the working directory, trees past the caps."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest
from checkpoint_helpers import git

from hermes.agent.events import Status
from hermes.agent.types import TurnRequest
from hermes.checkpoints import undo as undo_mod
from hermes.checkpoints.refs import legacy_ref_prefix, session_id_of_ref, session_ref_prefix
from hermes.checkpoints.scope import SnapshotLimits, SnapshotRefused, SnapshotTooLarge
from hermes.checkpoints.shadow import ShadowRepo, prune_session
from hermes.checkpoints.turn import CheckpointConfig
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import call, text_reply, tool_reply

ODD_IDS = ["x.lock", "a:b", "a..b", "-x", "has space", "a@{1}", "trail.", "héllo", "a/b", "%41", "@"]


def notices(events, *kinds: str) -> list[str]:
    kinds = kinds or ("checkpoint", "files_changed")
    return [e.text for e in events if isinstance(e, Status) and e.kind in kinds]


def shadow_git(repo: ShadowRepo, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", f"--git-dir={repo.git_dir}", *args], check=True, capture_output=True, env=env).stdout


# ---- session ids -----------------------------------------------------------------------


@pytest.mark.parametrize("session_id", [*ODD_IDS, "", "x" * 300, "é" * 120, "a." * 150 + "b", "20250101_120000_abcdef"])
def test_every_session_id_encodes_to_a_valid_ref_and_back(session_id):
    ref = session_ref_prefix(session_id) + "12-after"
    assert subprocess.run(["git", "check-ref-format", ref], check=False).returncode == 0, ref
    assert session_id_of_ref(ref) == session_id


def test_valid_ids_keep_their_ref_names_and_encodings_never_collide():
    assert session_ref_prefix("20250101_120000_abcdef") == "refs/hermes/20250101_120000_abcdef/"
    assert session_ref_prefix("api-0123456789abcdef") == "refs/hermes/api-0123456789abcdef/"
    prefixes = [session_ref_prefix(i) for i in [*ODD_IDS, "A", "a%2Fb", "a%252Fb", "x" * 300, "x" * 199]]
    for i, p in enumerate(prefixes):
        assert not any(q.startswith(p) for j, q in enumerate(prefixes) if j != i), p
    assert legacy_ref_prefix("a%b") is None  # never another id's encoded prefix


@pytest.mark.parametrize("session_id", ODD_IDS)
async def test_an_odd_session_id_gets_checkpoints_and_a_working_undo(session_id, upstream, make_agent, store, home,
                                                                     work):  # fmt: skip
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "changed\n"})]), text_reply("ok"))
    events, result = await collect_turn(make_agent(), TurnRequest(input="e", cwd=str(work), yolo=True,
                                                                  session_id=session_id))  # fmt: skip
    assert result.session_id == session_id
    assert notices(events) == ["1 file changed, +1 −3"]
    repo = ShadowRepo.for_worktree(home, work)
    refs = shadow_git(repo, "for-each-ref", "--format=%(refname)").decode().split()
    assert len(refs) == 2 and all(session_id_of_ref(r) == session_id for r in refs)
    await undo_mod.undo(store, home, session_id)
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    await undo_mod.redo(store, home, session_id)
    assert (work / "a.txt").read_text() == "changed\n"
    assert await prune_session(home, session_id) == 2


async def test_refs_of_an_id_written_before_encoding_are_still_pruned(home, work):
    repo = ShadowRepo.for_worktree(home, work)
    snap = await repo.snapshot()
    await repo.git("update-ref", "refs/hermes/-x/3-after", snap.commit)  # the old name of id "-x"
    await repo.git("update-ref", "refs/hermes/x/3-after", snap.commit)  # another session: kept
    assert await prune_session(home, "-x") == 1
    assert shadow_git(repo, "for-each-ref", "--format=%(refname)").decode().split() == ["refs/hermes/x/3-after"]


# ---- file names ------------------------------------------------------------------------


async def test_a_newline_file_name_hides_no_other_file(upstream, make_agent, store, home, work):
    # An over-the-cap file named "big\nfoo" once wrote the exclude lines "/big" and "foo".
    (work / "foo").write_text("foo 1\n")
    (work / "big\nfoo").write_bytes(b"\0" * 3000)
    (work / "two\nlines.txt").write_text("nl 1\n")
    (work / "tab\tand\x01ctl").write_text("ctl 1\n")
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "echo 'foo 2' > foo"
                                                 " && printf 'nl 2\\n' > \"$(printf 'two\\nlines.txt')\""
                                                 " && echo 'ctl 2' > \"$(printf 'tab\\tand\\001ctl')\""})]),
        text_reply("ok"),
    )  # fmt: skip
    events, result = await collect_turn(make_agent(max_file_kb=2), TurnRequest(input="e", cwd=str(work), yolo=True))
    assert notices(events, "files_changed") == ["3 files changed, +3 −3"]
    assert notices(events, "checkpoint") == ["checkpoint left out 1 file over 2 KB: big\nfoo"]
    (row,) = await store.turn_checkpoints(result.session_id)
    listed = shadow_git(ShadowRepo.for_worktree(home, work), "ls-tree", "-r", "-z", "--name-only", row.before)
    names = set(listed.decode().split("\0"))
    assert {"foo", "two\nlines.txt", "tab\tand\x01ctl", "a.txt"} <= names and "big\nfoo" not in names
    outcome = await undo_mod.undo(store, home, result.session_id)
    assert sorted(outcome.files) == ["foo", "tab\tand\x01ctl", "two\nlines.txt"]
    assert (work / "foo").read_text() == "foo 1\n"
    assert (work / "two\nlines.txt").read_text() == "nl 1\n"
    assert (work / "tab\tand\x01ctl").read_text() == "ctl 1\n"
    assert (work / "big\nfoo").read_bytes() == b"\0" * 3000


# ---- hidden paths ----------------------------------------------------------------------


def credential_home(root: Path) -> Path:
    """A home folder with credential stores and a project."""
    user_home = root / "userhome"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_rsa").write_text("SECRET-SSH-KEY\n")
    (user_home / ".aws").mkdir()
    (user_home / ".aws" / "credentials").write_text("SECRET-AWS-KEY\n")
    (user_home / ".netrc").write_text("machine x password SECRET-NETRC\n")
    (user_home / ".config" / "gh").mkdir(parents=True)
    (user_home / ".config" / "gh" / "hosts.yml").write_text("SECRET-GH\n")
    (user_home / "notes.txt").write_text("mine\n")
    return user_home


def every_object(repo: ShadowRepo) -> bytes:
    return shadow_git(repo, "cat-file", "--batch-all-objects", "--batch", "--unordered")


async def test_a_turn_at_home_never_copies_the_credential_stores(upstream, make_agent, store, home, tmp_path,
                                                                 monkeypatch):  # fmt: skip
    user_home = credential_home(tmp_path)
    hermes_home = user_home / ".hermes"  # $HERMES_HOME under the working directory too
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text("api_key = 'SECRET-HERMES'\n")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    agent = make_agent(checkpoints=CheckpointConfig(hermes_home))
    upstream.enqueue(tool_reply([call("write_file", {"path": "notes.txt", "content": "edited\n"})]), text_reply("ok"))
    events, result = await collect_turn(agent, TurnRequest(input="e", cwd=str(user_home), yolo=True))
    assert notices(events) == ["1 file changed, +1 −1"]
    repo = ShadowRepo.for_worktree(hermes_home, user_home)
    (row,) = await store.turn_checkpoints(result.session_id)
    for commit in (row.before, row.after):
        names = shadow_git(repo, "ls-tree", "-r", "-z", "--name-only", commit).decode().split("\0")
        assert "notes.txt" in names
        assert not [n for n in names if n.startswith((".ssh", ".aws", ".netrc", ".config/gh", ".hermes"))], names
    await undo_mod.undo(store, hermes_home, result.session_id)  # undo snapshots too
    assert (user_home / "notes.txt").read_text() == "mine\n"
    objects = every_object(repo)
    assert b"mine\n" in objects and b"edited\n" in objects
    assert not [s for s in (b"SECRET-SSH", b"SECRET-AWS", b"SECRET-NETRC", b"SECRET-GH", b"SECRET-HERMES")
                if s in objects]  # fmt: skip


async def test_copies_an_older_snapshot_took_of_a_credential_store_are_dropped(home, tmp_path, monkeypatch):
    user_home = credential_home(tmp_path)
    monkeypatch.setenv("HOME", str(user_home))
    from hermes.agent.safety.confinement import Confinement

    old = ShadowRepo.for_worktree(home, user_home, hidden=())  # as before hidden paths were left out
    await old.snapshot()
    repo = ShadowRepo.for_worktree(home, user_home, hidden=Confinement.default().hidden)
    names = shadow_git(repo, "ls-tree", "-r", "--name-only", (await repo.snapshot()).commit).decode().split()
    assert names == ["notes.txt"]

    # A snapshot taken without the hidden paths (undo's) leaves out the ones the last was given.
    (user_home / ".ssh" / "id_ed25519").write_text("SECRET-NEW-KEY\n")
    undo_side = ShadowRepo.for_worktree(home, user_home)
    names = shadow_git(undo_side, "ls-tree", "-r", "--name-only", (await undo_side.snapshot()).commit).decode().split()
    assert names == ["notes.txt"]
    assert b"SECRET-NEW-KEY" not in every_object(undo_side)


async def test_a_working_directory_inside_a_credential_store_gets_no_snapshots(upstream, make_agent, tmp_path,
                                                                               monkeypatch):  # fmt: skip
    user_home = credential_home(tmp_path)
    monkeypatch.setenv("HOME", str(user_home))
    upstream.enqueue(tool_reply([call("write_file", {"path": "x", "content": "x\n"})]), text_reply("ok"))
    events, result = await collect_turn(make_agent(), TurnRequest(input="e", cwd=str(user_home / ".ssh"), yolo=True))
    assert result.status == "completed"
    assert notices(events) == [
        f"no file checkpoints this session: the working directory is inside {user_home / '.ssh'}, "
        "which tools may not see"
    ]


# ---- / and folders above $HOME -------------------------------------------------------


async def test_slash_as_the_working_directory_gets_one_notice_and_no_hang(upstream, make_agent, store, tmp_path):
    agent = make_agent()
    harmless = tool_reply([call("terminal", {"command": "true"})])
    upstream.enqueue(harmless, text_reply("ok"))
    started = time.monotonic()
    events, result = await collect_turn(agent, TurnRequest(input="e", cwd="/", yolo=True))
    assert time.monotonic() - started < 20
    assert result.status == "completed"
    assert notices(events) == ["no file checkpoints this session: the working directory is / (the whole machine)"]
    upstream.enqueue(harmless, text_reply("ok"))
    events, _ = await collect_turn(agent, TurnRequest(input="e", cwd="/", yolo=True, session_id=result.session_id))
    assert notices(events) == []  # once per session
    assert [r.before for r in await store.turn_checkpoints(result.session_id)] == [None, None]


async def test_a_folder_holding_home_gets_no_snapshots(upstream, make_agent, tmp_path, monkeypatch):
    user_home = credential_home(tmp_path / "homes")
    monkeypatch.setenv("HOME", str(user_home))
    upstream.enqueue(tool_reply([call("terminal", {"command": "true"})]), text_reply("ok"))
    events, _ = await collect_turn(make_agent(), TurnRequest(input="e", cwd=str(tmp_path), yolo=True))
    assert notices(events) == [
        f"no file checkpoints this session: the working directory {tmp_path.resolve()} holds the home folder "
        f"{user_home.resolve()}"
    ]


async def test_the_snapshot_api_refuses_slash_at_once(home):
    repo = ShadowRepo.for_worktree(home, Path("/"), limits=SnapshotLimits())
    with pytest.raises(SnapshotRefused):
        await asyncio.wait_for(repo.snapshot(), timeout=5)
    assert not repo.git_dir.exists()


# ---- caps ------------------------------------------------------------------------------


async def test_past_the_file_cap_the_turn_goes_on_with_one_notice(upstream, make_agent, store, home, work):
    for i in range(10):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    agent = make_agent(checkpoints=CheckpointConfig(home, max_files=5))
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "x\n"})]), text_reply("ok"))
    events, result = await collect_turn(agent, TurnRequest(input="e", cwd=str(work), yolo=True))
    assert result.status == "completed" and (work / "a.txt").read_text() == "x\n"
    assert notices(events) == [
        "no file checkpoints in this folder this session: the folder holds more than 5 files "
        "(settings checkpoint_max_files, checkpoint_timeout)"
    ]
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "y\n"})]), text_reply("ok"))
    events, _ = await collect_turn(agent, TurnRequest(input="e", cwd=str(work), yolo=True,
                                                      session_id=result.session_id))  # fmt: skip
    assert notices(events) == []
    assert [r.before for r in await store.turn_checkpoints(result.session_id)] == [None, None]


async def test_past_the_time_cap_the_turn_goes_on_and_the_repo_stays_usable(upstream, make_agent, store, home,
                                                                            work):  # fmt: skip
    agent = make_agent(checkpoints=CheckpointConfig(home, timeout=0.001))
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "x\n"})]), text_reply("ok"))
    started = time.monotonic()
    events, result = await collect_turn(agent, TurnRequest(input="e", cwd=str(work), yolo=True))
    assert time.monotonic() - started < 20
    assert result.status == "completed" and (work / "a.txt").read_text() == "x\n"
    assert notices(events) == [
        "no file checkpoints in this folder this session: it took longer than 0.001 s "
        "(settings checkpoint_max_files, checkpoint_timeout)"
    ]
    repo = ShadowRepo.for_worktree(home, work)
    assert not (repo.git_dir / "index.lock").exists()
    # A later snapshot with room to finish works (no lock left behind by the killed git).
    snap = await ShadowRepo.for_worktree(home, work, limits=SnapshotLimits()).snapshot()
    assert "a.txt" in await repo.entries(snap.commit)


async def test_the_file_cap_stops_the_listing_early(home, tmp_path):
    tree = tmp_path / "many"
    tree.mkdir()
    for i in range(50):
        (tree / f"{i}").write_text("x")
    repo = ShadowRepo.for_worktree(home, tree, limits=SnapshotLimits(max_files=10, timeout=30))
    with pytest.raises(SnapshotTooLarge, match="more than 10 files"):
        await repo.snapshot()
    assert git(tmp_path, "--git-dir", str(repo.git_dir), "for-each-ref") == ""

