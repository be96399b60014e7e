"""The terminal tool with real subprocesses: output, exit codes, caps, workdir, timeout, interrupt."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.terminal import HEAD_BYTES, TAIL_BYTES, TERMINAL_TOOL, terminal
from hermes.errors import ToolError


def _ctx(cwd: Path) -> ToolContext:
    return ToolContext(session_id="s1", cwd=cwd)


def _alive(pid: int) -> bool:
    """True while `pid` is a live process (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


async def test_exit_code_and_stdout(tmp_path: Path) -> None:
    result = await terminal({"command": "echo hello; echo world; exit 3"}, _ctx(tmp_path))
    assert result.splitlines()[0] == "exit code: 3"
    assert "--- stdout ---\nhello\nworld" in result
    assert "--- stderr ---" not in result


async def test_stderr_is_reported_separately(tmp_path: Path) -> None:
    result = await terminal({"command": "echo out; echo oops >&2"}, _ctx(tmp_path))
    assert result.startswith("exit code: 0")
    assert "--- stdout ---\nout\n--- stderr ---\noops" in result


async def test_no_output(tmp_path: Path) -> None:
    assert await terminal({"command": "true"}, _ctx(tmp_path)) == "exit code: 0\n(no output)"


async def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    result = await terminal({"command": r"printf 'caf\xe9 ok'"}, _ctx(tmp_path))
    assert "caf\ufffd ok" in result


async def test_runs_in_bash(tmp_path: Path) -> None:
    result = await terminal({"command": "echo ${BASH_VERSION:+bash}; [[ 1 == 1 ]] && echo ok"}, _ctx(tmp_path))
    assert "bash\nok" in result


async def test_stdin_is_closed(tmp_path: Path) -> None:
    # `cat` on an open stdin would wait forever; the wait below is only a generous bound.
    result = await asyncio.wait_for(terminal({"command": "cat; echo done"}, _ctx(tmp_path)), 60)
    assert "done" in result


async def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    expected = "".join(f"{n}\n" for n in range(1, 50_001))
    result = await terminal({"command": "seq 1 50000"}, _ctx(tmp_path))
    cut = len(expected) - HEAD_BYTES - TAIL_BYTES
    assert f"[… {cut} bytes cut …]" in result
    assert "--- stdout ---\n1\n2\n3\n" in result
    assert result.endswith("49999\n50000")
    assert len(result) < HEAD_BYTES + TAIL_BYTES + 200


async def test_stderr_is_capped_too(tmp_path: Path) -> None:
    result = await terminal({"command": "seq 1 50000 >&2"}, _ctx(tmp_path))
    assert "--- stderr ---" in result
    assert "bytes cut" in result
    assert len(result) < HEAD_BYTES + TAIL_BYTES + 200


async def test_default_cwd_is_context_cwd(tmp_path: Path) -> None:
    result = await terminal({"command": "pwd"}, _ctx(tmp_path))
    assert f"--- stdout ---\n{tmp_path}" in result


async def test_relative_workdir_resolves_against_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    result = await terminal({"command": "pwd", "workdir": "sub/deeper"}, _ctx(tmp_path))
    assert f"{tmp_path}/sub/deeper" in result
    absolute = await terminal({"command": "pwd", "workdir": str(tmp_path / "sub")}, _ctx(Path("/")))
    assert f"--- stdout ---\n{tmp_path}/sub" in absolute


async def test_missing_workdir_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await terminal({"command": "pwd", "workdir": "nope"}, _ctx(tmp_path))


async def test_vanished_working_directory_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="no longer exists"):
        await terminal({"command": "pwd"}, _ctx(tmp_path / "gone"))


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    result = await asyncio.wait_for(
        terminal(
            {"command": f"echo before; sleep 100 & echo $! > {pid_file}; sleep 100", "timeout": 1}, _ctx(tmp_path)
        ),
        60,
    )
    assert "timed out after 1 s" in result
    assert "before" in result  # partial output is kept
    pid = _read_pid(pid_file)
    assert pid is not None
    assert await _wait_for(lambda: not _alive(pid), 10), "background child survived the timeout"


async def test_timeout_escalates_to_sigkill(tmp_path: Path) -> None:
    pid_file = tmp_path / "stubborn.pid"
    command = f"trap '' TERM; sleep 100 & echo $! > {pid_file}; sleep 100"
    result = await asyncio.wait_for(terminal({"command": command, "timeout": 1}, _ctx(tmp_path)), 60)
    assert "timed out after 1 s" in result
    assert "SIGKILL" in result
    pid = _read_pid(pid_file)
    assert pid is not None
    assert await _wait_for(lambda: not _alive(pid), 10)


async def test_cancellation_kills_children(tmp_path: Path) -> None:
    bg_file, inner_file, grandchild_file = tmp_path / "bg.pid", tmp_path / "inner.pid", tmp_path / "gc.pid"
    command = (
        f"sleep 100 & echo $! > {bg_file}; "
        f"bash -c 'echo $$ > {inner_file}; sleep 100 & echo $! > {grandchild_file}; wait'"
    )
    task = asyncio.create_task(terminal({"command": command}, _ctx(tmp_path)))
    files = (bg_file, inner_file, grandchild_file)
    assert await _wait_for(lambda: all(_read_pid(f) for f in files), 10), "command did not start"
    pids = [_read_pid(f) for f in files]
    assert all(pid is not None and _alive(pid) for pid in pids)

    task.cancel()
    # The children sleep 100 s: the task ends only because cancelling kills them.
    await asyncio.wait([task], timeout=60)
    assert task.cancelled()
    assert await _wait_for(lambda: not any(_alive(pid) for pid in pids if pid), 10), [
        pid for pid in pids if pid and _alive(pid)
    ]


async def test_cancellation_kills_processes_that_ignore_sigterm(tmp_path: Path) -> None:
    pid_file = tmp_path / "p.pid"
    task = asyncio.create_task(
        terminal({"command": f"trap '' TERM INT HUP; sleep 100 & echo $! > {pid_file}; wait"}, _ctx(tmp_path))
    )
    assert await _wait_for(lambda: _read_pid(pid_file) is not None, 10)
    pid = _read_pid(pid_file)
    assert pid is not None
    task.cancel()
    await asyncio.wait([task], timeout=60)
    assert task.cancelled()
    assert await _wait_for(lambda: not _alive(pid), 10)


async def test_background_process_holding_output_ends_with_the_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    # The background sleep outlives the generous wait: waiting for it to close its output would fail here.
    began = time.monotonic()
    result = await asyncio.wait_for(
        terminal({"command": f"sleep 300 & echo $! > {pid_file}; echo started"}, _ctx(tmp_path)), 60
    )
    pid = _read_pid(pid_file)
    assert pid is not None
    try:
        assert result == "exit code: 0\n--- stdout ---\nstarted"
        assert not _alive(pid), "the background process outlived the call"
        assert time.monotonic() - began < 10
    finally:
        if _alive(pid):
            os.kill(pid, 9)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'command'"),
        ({"command": 42}, "must be a string"),
        ({"command": "   "}, "must not be empty"),
        ({"command": "true", "timeout": "soon"}, "must be a number"),
        ({"command": "true", "timeout": 0}, "at least 1"),
        ({"command": "true", "timeout": True}, "must be a number"),
        ({"command": "true", "workdir": 5}, "must be a string"),
    ],
)
async def test_argument_errors(tmp_path: Path, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await terminal(args, _ctx(tmp_path))


async def test_huge_timeout_is_clamped_not_rejected(tmp_path: Path) -> None:
    assert (await terminal({"command": "echo ok", "timeout": 10**9}, _ctx(tmp_path))).endswith("ok")


def test_tool_metadata() -> None:
    schema = TERMINAL_TOOL.schema()["function"]
    assert schema["name"] == "terminal"
    assert schema["parameters"]["required"] == ["command"]
    assert set(schema["parameters"]["properties"]) == {"command", "timeout", "workdir"}
    assert TERMINAL_TOOL.read_only is False
    assert TERMINAL_TOOL.preview({"command": "ls -la"}) == "ls -la"
