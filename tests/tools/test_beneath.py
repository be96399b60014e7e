"""hermes/beneath.py on real folders: writes, links and deletes beneath an opened folder,
with openat2 and with the O_NOFOLLOW walk (each test runs both, and checks which ran)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes import beneath
from hermes.beneath import Folder, PathRefused, write_resolved


@pytest.fixture(params=["openat2", "fallback"])
def openat2_calls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths openat2 was called with: some in openat2 mode, none in the fallback."""
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(beneath, "USE_OPENAT2", request.param == "openat2")
    calls: list[str] = []
    real = beneath._openat2

    def spy(dir_fd: int, rel: str, flags: int) -> int:
        calls.append(rel)
        return real(dir_fd, rel, flags)

    monkeypatch.setattr(beneath, "_openat2", spy)
    yield calls
    assert bool(calls) == (request.param == "openat2")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tree").mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "tree" / "link")
    return tmp_path / "tree"


def test_write_makes_folders_sets_the_mode_and_replaces_a_symlink_not_its_target(openat2_calls, tree):
    (tree.parent / "outside" / "t").write_text("target\n")
    os.symlink(tree.parent / "outside" / "t", tree / "name")
    with Folder.open(tree) as folder:
        folder.write("a/b/c.sh", b"#!/bin/sh\n", mode=0o755)
        folder.write("name", b"mine\n")
    assert (tree / "a" / "b" / "c.sh").read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE((tree / "a" / "b" / "c.sh").stat().st_mode) == 0o755
    assert not (tree / "name").is_symlink() and (tree / "name").read_text() == "mine\n"
    assert (tree.parent / "outside" / "t").read_text() == "target\n"
    assert [p.name for p in tree.rglob(".*.tmp")] == []


@pytest.mark.parametrize(
    ("rel", "reason"),
    [("link/x", "its folder link is a symlink"), ("link/deep/x", "its folder link is a symlink"),
     ("../x", "'..'"), ("/etc/x", "absolute"), ("", "empty"), ("a//b", "empty component"),
     ("f/x", "its folder f is not a folder")],
)  # fmt: skip
def test_refused_paths_write_nothing(openat2_calls, tree, rel, reason):
    (tree / "f").write_text("a file\n")
    with Folder.open(tree) as folder:
        for act in (lambda: folder.check(rel), lambda: folder.write(rel, b"x"), lambda: folder.symlink(rel, "/"),
                    lambda: folder.remove(rel)):  # fmt: skip
            with pytest.raises(PathRefused) as refused:
                act()
            assert refused.value.path == rel and reason in refused.value.reason
    assert os.listdir(tree.parent / "outside") == []
    assert not (tree.parent / "x").exists()


def test_remove_and_prune_stay_beneath(openat2_calls, tree):
    (tree.parent / "outside" / "keep").write_text("keep\n")
    with Folder.open(tree) as folder:
        folder.write("a/b/x", b"x")
        folder.symlink("a/l", "/etc/passwd")
        assert folder.remove("a/l") and folder.remove("a/b/x")
        assert not folder.remove("a/b/x")  # already gone
        assert not folder.remove("a")  # a folder is never removed as a file
        folder.prune_empty("a/b")
    assert not (tree / "a").exists()
    assert (tree.parent / "outside" / "keep").read_text() == "keep\n"
    assert Path("/etc/passwd").exists()


def test_folder_open_refuses_a_symlinked_root(openat2_calls, tree):
    with pytest.raises(PathRefused, match="is a symlink"):
        Folder.open(tree / "link")
    with pytest.raises(PathRefused, match="normalised"):
        Folder.open(Path("relative/path"))


def test_write_resolved_refuses_a_symlink_on_the_way_and_keeps_the_mode(openat2_calls, tree):
    target = tree / "new" / "f.txt"
    write_resolved(target, b"one\n")
    os.chmod(target, 0o640)
    write_resolved(target, b"two\n")
    assert target.read_text() == "two\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(PathRefused, match=r"its folder /.*/tree/link is a symlink"):
        write_resolved(tree / "link" / "f.txt", b"x")
    assert os.listdir(tree.parent / "outside") == []
