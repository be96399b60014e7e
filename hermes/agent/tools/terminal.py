"""The `terminal` tool: run one shell command in its own process group, under the approval policy.

Invariants:
- every command passes approval.classify_command first; "block" never runs, "approve"
  runs only when ctx.request_approval says yes;
- the command runs in a new session (start_new_session=True), so its process group id is
  its pid and every process it starts without leaving that group can be signalled at once;
- it starts through the ToolLauncher: an allowlisted environment (no secrets), a supervisor,
  the per-call limits and the bubblewrap sandbox when on. The supervisor (our child, the
  group leader) exits only after every process the command started is dead, also those
  that left the group (setsid, nohup, double forks, daemons): nothing outlives the call;
- with a host's command runner (ctx.host.commands, e.g. an editor's terminal over ACP) the
  approved command runs there instead, after the same approval and the classification of
  `sandbox = off` (no hermes sandbox applies there);
- "allow for this session" covers the exact command in the same folder (safety/grants.py);
- on timeout the group gets SIGTERM, then after a short grace the supervisor gets
  END_CALL (it SIGKILLs everything the command started); on cancellation (interrupt) it
  gets END_CALL at once and CancelledError is re-raised. Only if the supervisor does not
  exit in time is its group SIGKILLed directly;
- output is read through pipes we own into bounded buffers (head + tail), so memory stays
  bounded whatever the command prints; once the supervisor has exited no process of the
  call holds the pipes, and should one still (the supervisor was killed) it cannot hold
  the tool for more than PIPE_GRACE seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes.agent.safety.approval import blocked_message, classify_command, denied_message
from hermes.agent.safety.grants import command_grant
from hermes.agent.safety.launch import ToolLauncher, end_call
from hermes.agent.tools.args import check_object, optional_number, optional_str, require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.agent.tools.missing_command import missing_command_hint
from hermes.agent.tools.output_tail import OutputTail
from hermes.errors import ToolError

DEFAULT_TIMEOUT = 180.0
MAX_TIMEOUT = 3600.0
TERM_GRACE = 2.0
"""Seconds between SIGTERM and END_CALL after a timeout."""
PIPE_GRACE = 0.5
"""Seconds to wait for the output pipes to close once the supervisor has exited."""
END_WAIT = 5.0
"""Longest wait for the supervisor to end the call after END_CALL (it gives up after 3 s)."""
KILL_WAIT = 2.0
"""Longest wait for the group to die after the fallback SIGKILL."""
HEAD_BYTES = 8_000
TAIL_BYTES = 12_000
"""Each of stdout and stderr keeps its first HEAD_BYTES and last TAIL_BYTES."""


class _Capture(asyncio.Protocol):
    """Reads one pipe, keeping a bounded head and tail of what was written."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_data: Callable[[bytes], None] | None = None) -> None:
        self.on_data = on_data
        """Told every chunk as it arrives (live output for a front end); never holds it."""
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.closed: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        if self.on_data is not None:
            self.on_data(data)
        self.total += len(data)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL_BYTES:
                del self.tail[: len(self.tail) - TAIL_BYTES]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        if cut <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[… {cut} bytes cut …]\n{tail}"


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_running(pgid: int) -> bool | None:
    """Whether any process of group `pgid` still runs (zombies do not); None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def _group_gone(pgid: int, timeout: float) -> None:
    """Wait (at most `timeout` s) until every process of the killed group has exited."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while _group_running(pgid) and loop.time() < deadline:
        await asyncio.sleep(0.01)


async def _end_call(proc: asyncio.subprocess.Process) -> None:
    """Have the supervisor kill every process of the call and exit; SIGKILL its group if it does not.

    The group is signalled only while the supervisor is not reaped: its pid, the group id,
    cannot have been reused then."""
    if proc.returncode is None:
        end_call(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), END_WAIT)
    if proc.returncode is None:
        _signal_group(proc.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_WAIT)
            # SIGKILL is asynchronous and the sandboxed command is not our direct child:
            # wait until no member of the group is still running (Linux: /proc).
            await _group_gone(proc.pid, KILL_WAIT)


async def _open_pipe(
    loop: asyncio.AbstractEventLoop,
    child_fds: list[int],
    transports: list[asyncio.BaseTransport],
    on_data: Callable[[bytes], None] | None = None,
) -> _Capture:
    """A pipe whose read end feeds a _Capture; the write end (for the child) goes to `child_fds`."""
    read_fd, write_fd = os.pipe()
    child_fds.append(write_fd)
    capture = _Capture(loop, on_data)
    reader = os.fdopen(read_fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: capture, reader)
    except BaseException:
        reader.close()
        raise
    transports.append(transport)
    return capture


def _fan_out(*listeners: Callable[[bytes], None] | None) -> Callable[[bytes], None] | None:
    """One listener telling each of `listeners` (None when there is none)."""
    present = [listener for listener in listeners if listener is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]

    def tell(data: bytes) -> None:
        for listener in present:
            listener(data)

    return tell


async def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    launcher: ToolLauncher | None = None,
    *,
    writable: Path | None = None,
    on_data: Callable[[bytes], None] | None = None,
    on_output: Callable[[str], None] | None = None,
) -> str:
    """Run `command` with the shell in `cwd`; return the formatted result. Kills the group on cancel.

    In the sandbox only `writable` (default: `cwd`) may be changed. `on_data` is told each
    chunk of stdout and stderr as it arrives (`!` shows them all); `on_output` is given the
    newest lines while it runs (output_tail.OutputTail: a few a second, for a tool card).
    The result still holds both, bounded.
    """
    launcher = launcher or ToolLauncher()
    env = launcher.env()
    loop = asyncio.get_running_loop()
    child_fds: list[int] = []
    transports: list[asyncio.BaseTransport] = []
    tail = OutputTail(on_output) if on_output is not None else None
    listener = _fan_out(on_data, tail.feed if tail is not None else None)
    try:
        out = await _open_pipe(loop, child_fds, transports, listener)
        err = await _open_pipe(loop, child_fds, transports, listener)
        try:
            proc = await asyncio.create_subprocess_exec(
                *launcher.argv([_shell(), "-c", command], cwd, writable=writable),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=child_fds[0],
                stderr=child_fds[1],
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"could not start the shell: {exc}") from exc
        finally:
            # The child holds its own copies; ours would keep the pipes open forever.
            while child_fds:
                os.close(child_fds.pop())

        timed_out = False
        try:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                timed_out = True
                _signal_group(proc.pid, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), TERM_GRACE)
                await _end_call(proc)  # also children that ignored SIGTERM or left the group
            _, still_open = await asyncio.wait([out.closed, err.closed], timeout=PIPE_GRACE)
        except asyncio.CancelledError:
            with contextlib.suppress(asyncio.CancelledError):
                await _end_call(proc)
            raise
    finally:
        for fd in child_fds:
            os.close(fd)
        for transport in transports:
            transport.close()
        if tail is not None:
            tail.close()  # the result carries the rest
    hint = missing_command_hint(err.text(), proc.returncode, cwd, env.get("PATH"))
    return _format(proc.returncode, out, err, timeout if timed_out else None, bool(still_open), hint)


def _format(
    returncode: int | None, out: _Capture, err: _Capture, timed_out: float | None, held_open: bool, hint: str | None
) -> str:
    lines: list[str] = []
    if timed_out is not None:
        lines.append(f"Command timed out after {timed_out:g} s; it and its child processes were killed.")
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        lines.append(f"exit code: {returncode} (killed by {name})")
    else:
        lines.append(f"exit code: {returncode}")
    stdout, stderr = out.text(), err.text()
    if stdout:
        lines += ["--- stdout ---", stdout.rstrip("\n")]
    if stderr:
        lines += ["--- stderr ---", stderr.rstrip("\n")]
    if not stdout and not stderr:
        lines.append("(no output)")
    if hint is not None:
        lines.append(hint)
    if held_open:
        lines.append(
            "[Note: processes started by the command still held its output open after it ended; "
            "their further output is not captured.]"
        )
    return "\n".join(lines)


def _workdir(ctx: ToolContext, raw: str | None) -> Path:
    if raw is None:
        if not Path(ctx.cwd).is_dir():
            raise ToolError(f"the working directory {str(ctx.cwd)!r} no longer exists; pass an existing workdir")
        return Path(ctx.cwd)
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else Path(ctx.cwd) / path
    if not path.is_dir():
        raise ToolError(f"workdir {str(path)!r} does not exist or is not a directory")
    return path


async def terminal(args: dict[str, Any], ctx: ToolContext, launcher: ToolLauncher | None = None) -> str:
    args = check_object(args)
    command = require_str(args, "command")
    timeout = optional_number(args, "timeout", DEFAULT_TIMEOUT, minimum=1, maximum=MAX_TIMEOUT)
    cwd = _workdir(ctx, optional_str(args, "workdir"))

    policy = launcher.confinement if launcher is not None else None
    commands = ctx.host.commands if ctx.host is not None else None
    # A host's terminal (an editor's, over ACP) runs the command outside hermes' sandbox:
    # it is classified as with `sandbox = off` whatever the setting.
    sandboxed = launcher is not None and launcher.sandbox.active and commands is None
    verdict = classify_command(command, cwd=cwd, sandboxed=sandboxed, policy=policy or ctx.policy)
    if verdict.level == "block":
        return blocked_message("this command", verdict)
    if verdict.level == "approve":
        grant = command_grant("terminal", command, cwd)
        approved = await ctx.request_approval("terminal", command, verdict.reason, verdict.rule, grant)
        if not approved:
            return denied_message("this command", verdict, approver_available=ctx.approve is not None)
    if commands is not None:
        return await commands.run(command, cwd, timeout)  # the host's terminal (an editor's, over ACP)
    # The sandbox's writable root is the session's folder, never a `workdir` the model picks.
    report = ctx.on_output
    call_id = ctx.call_id
    on_output = None if report is None else (lambda text: report(call_id, text))
    return await run_command(command, cwd, timeout, launcher, writable=Path(ctx.cwd), on_output=on_output)


def make_terminal_tool(launcher: ToolLauncher) -> Tool:
    """The terminal tool starting its commands through `launcher` (sandbox, environment).

    With the sandbox on, the description tells the model what the sandbox allows, so it
    does not retry what cannot work (writes outside the working directory, daemons).
    """

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        return await terminal(args, ctx, launcher)

    description = TERMINAL_TOOL.description
    if launcher.sandbox.active:
        network = "available" if launcher.sandbox.network else "off"
        description += (
            " Commands run in a sandbox: only the working directory and $TMPDIR are writable (the rest of "
            "the file system is read-only, and so are .git/config, .git/hooks, .git/info, .envrc and shell "
            "start-up files in it), credential folders and hermes's own files are hidden, /tmp is "
            f"private to each command, and the network is {network}."
        )
    return dataclasses.replace(TERMINAL_TOOL, handler=handler, description=description)


TERMINAL_TOOL = Tool(
    name="terminal",
    description=(
        "Run a shell command (bash) on the user's machine and return its exit code, stdout and stderr. "
        "Non-interactive: stdin is closed, so never run commands that wait for input or open an "
        "editor or pager; pass flags like -y or --no-pager instead. Each call starts a fresh shell in "
        "the working directory (cd does not persist; use `workdir` or `cd dir && cmd`). Background "
        "processes (`&`, nohup, setsid, daemons) are killed when the command ends. Long output "
        "is cut in the middle. Prefer read_file, list_files and search_files over cat, find and grep. "
        "Dangerous commands (recursive deletes, force pushes, sudo, …) need the user's approval; "
        "commands that could destroy the system are blocked and never run."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command line to run."},
            "timeout": {
                "type": "number",
                "description": (
                    f"Seconds before the command and its child processes are killed "
                    f"(default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})."
                ),
            },
            "workdir": {
                "type": "string",
                "description": "Directory to run in; relative paths start at the session's working directory.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    handler=terminal,
    read_only=False,
    preview_key="command",
)
