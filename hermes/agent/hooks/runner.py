"""Running one hook command: JSON on stdin, in the working folder, under the tool launcher.

    run = await run_hook(hook, payload, cwd, launcher)

Invariants:
- the command runs with `bash -c` (else /bin/sh) through `ToolLauncher.argv`: the tool
  environment (never hermes' keys or database URL), the supervisor (nothing it starts
  outlives it) and the sandbox when it is on, in its own process group;
- it gets `payload` as one JSON object on stdin (stdin is then closed), and
  CLAUDE_PROJECT_DIR (the working folder) besides the tool environment;
- it runs at most `hook.timeout` seconds: then its whole process group is killed and the
  run is a non-blocking failure; cancelling the caller kills it the same way;
- it never raises (cancellation excepted): a command that cannot start is a failed run;
- stdout and stderr are kept up to OUTPUT_LIMIT characters each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.agent.safety.launch import ToolLauncher, end_call
from hermes.hooks_config import HookConfig

OUTPUT_LIMIT = 20_000
KILL_WAIT = 2.0
"""Seconds to wait for a killed hook's processes to be reaped."""
BLOCK_EXIT = 2
PROJECT_DIR_VARIABLE = "CLAUDE_PROJECT_DIR"
"""Set to the working folder for every hook, as Claude Code does: its hook examples start
their scripts as "$CLAUDE_PROJECT_DIR"/.claude/hooks/NAME."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """What one hook command did."""

    hook: HookConfig
    exit_code: int | None
    """None when it did not exit on its own (timed out) or did not start."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    """Why it could not be started, when it could not."""

    @property
    def blocked(self) -> bool:
        return self.exit_code == BLOCK_EXIT

    @property
    def failed(self) -> bool:
        """A non-blocking error: timed out, not started, or an exit code other than 0 and 2."""
        return self.exit_code not in (0, BLOCK_EXIT)

    def output_json(self) -> dict[str, Any] | None:
        """stdout as a JSON object, when it is one (exit code 0 only)."""
        text = self.stdout.strip()
        if self.exit_code != 0 or not text.startswith("{"):
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    def describe_failure(self) -> str:
        where = f"{self.hook.event} hook `{_short(self.hook.command)}`"
        if self.error is not None:
            return f"{where} could not start: {self.error}"
        if self.timed_out:
            return f"{where} timed out after {self.hook.timeout:g}s and was killed"
        detail = _short(self.stderr.strip() or self.stdout.strip(), 300)
        return f"{where} failed with exit code {self.exit_code}" + (f": {detail}" if detail else "")


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


async def run_hook(hook: HookConfig, payload: dict[str, Any], cwd: Path, launcher: ToolLauncher) -> HookRun:
    data = (json.dumps(payload, ensure_ascii=False, default=str) + "\n").encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            *launcher.argv([_shell(), "-c", hook.command], cwd, writable=cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env={**launcher.env(), PROJECT_DIR_VARIABLE: str(cwd)},
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(hook, None, error=str(exc))
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), hook.timeout)
    except TimeoutError:
        await _kill(proc)
        return HookRun(hook, None, timed_out=True)
    except asyncio.CancelledError:
        with contextlib.suppress(asyncio.CancelledError):
            await _kill(proc)
        raise
    return HookRun(hook, proc.returncode, _text(out), _text(err))


def _text(raw: bytes) -> str:
    return raw[: OUTPUT_LIMIT * 4].decode("utf-8", errors="replace")[:OUTPUT_LIMIT]


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """End the supervisor's call (it kills everything the hook started), then the group."""
    if proc.returncode is None:
        end_call(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_WAIT)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_WAIT)
    # Close our ends of the pipes: a grandchild that escaped cannot keep them (or us) waiting.
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.feed_eof()
    if proc.stdin is not None:
        proc.stdin.close()
