"""write_file and patch while another process flips a folder between a real folder and a
symlink to a folder outside the workspace: no write ever lands outside.

The flip is an atomic exchange (renameat2 RENAME_EXCHANGE), so `d` always exists and is,
at any instant, either the real folder or the symlink. Nobody can approve a write outside,
so every write either lands in the real folder or is refused. Run with openat2 and with the
O_NOFOLLOW walk.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from approvers import Approver

from hermes import beneath
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, write_file
from hermes.agent.types import ApprovalDecision
from hermes.errors import ToolError

ROUNDS = 200
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@pytest.fixture(params=["openat2", "fallback"])
def beneath_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(beneath, "USE_OPENAT2", request.param == "openat2")
    return str(request.param)


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    done = libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if done != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


@pytest.fixture
def flipping(tmp_path: Path) -> Iterator[tuple[Path, Path, list[int], Callable[[], None]]]:
    """(workspace, outside, [flips], stop): `workspace/d` flips between a folder and a symlink
    to `outside` until `stop()` (which waits for the flipping thread to end)."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "d").mkdir(parents=True)
    outside.mkdir()
    (work / "d" / "p.txt").write_text("line\n")
    (outside / "p.txt").write_text("line\n")
    os.symlink(outside, work / "swap")
    _exchange(work / "d", work / "swap")  # probe: the kernel and file system can exchange
    _exchange(work / "d", work / "swap")
    stop = threading.Event()
    flips = [0]

    def flip() -> None:
        while not stop.is_set():
            _exchange(work / "d", work / "swap")
            flips[0] += 1

    thread = threading.Thread(target=flip, daemon=True)

    def stop_flipping() -> None:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()

    thread.start()
    try:
        yield work, outside, flips, stop_flipping
    finally:
        stop_flipping()


def _ctx(work: Path) -> ToolContext:
    return ToolContext(session_id="race", cwd=work)  # no approver: a write outside is refused


def _outcome(result: str) -> str:
    if result.startswith(("Created", "Overwrote", "Patched")):
        return "written"
    assert result.startswith(("DENIED", "BLOCKED")), result
    return "refused"


async def test_write_file_never_lands_outside_while_a_folder_flips(beneath_mode, flipping) -> None:
    work, outside, flips, stop_flipping = flipping
    outcomes = {"written": 0, "refused": 0}
    errors: list[str] = []
    for n in range(ROUNDS):
        try:
            result = await write_file({"path": f"d/f{n}.txt", "content": f"{n}\n"}, _ctx(work))
            outcomes[_outcome(result)] += 1
        except (ToolError, OSError) as exc:  # an OSError fails below, after the check of outside
            errors.append(f"{type(exc).__name__}: {exc}")
    assert sorted(p.name for p in outside.iterdir()) == ["p.txt"]
    assert (outside / "p.txt").read_text() == "line\n"
    assert all(e.startswith("ToolError: could not write") and "nothing was written" in e for e in errors), errors
    outcomes["error"] = len(errors)
    assert flips[0] > ROUNDS
    assert outcomes["written"] > 0 and sum(outcomes.values()) == ROUNDS
    stop_flipping()  # the count below reads `d` or `swap`, so neither may move under it
    real = work / "d" if (work / "d").is_dir() and not (work / "d").is_symlink() else work / "swap"
    assert len([p for p in real.iterdir() if p.name.startswith("f")]) == outcomes["written"]


async def test_patch_never_lands_outside_while_a_folder_flips(beneath_mode, flipping) -> None:
    work, outside, flips, _ = flipping
    written = 0
    errors: list[str] = []
    for n in range(ROUNDS):
        try:
            result = await patch({"path": "d/p.txt", "old_string": "line\n", "new_string": f"line\n{n}\n"}, _ctx(work))
            written += _outcome(result) == "written"
        except (ToolError, OSError) as exc:  # an OSError fails below, after the check of outside
            errors.append(f"{type(exc).__name__}: {exc}")
    assert sorted(p.name for p in outside.iterdir()) == ["p.txt"]
    assert (outside / "p.txt").read_text() == "line\n"
    assert all(e.startswith("ToolError") and ("nothing was written" in e or "not found" in e) for e in errors), errors
    assert flips[0] > ROUNDS and written > 0


async def test_an_approved_write_outside_still_works(beneath_mode, tmp_path: Path) -> None:
    """The write is approved for one resolved path: that path's folders are opened from `/`."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    approver = Approver(ApprovalDecision.ONCE)
    ctx = ToolContext(session_id="ok", cwd=work, approve=approver)
    result = await write_file({"path": str(elsewhere / "new" / "f.txt"), "content": "ok\n"}, ctx)
    assert result.startswith("Created"), result
    assert (elsewhere / "new" / "f.txt").read_text() == "ok\n"
    assert [r.command for r in approver.requests] == [str(elsewhere / "new" / "f.txt")]
