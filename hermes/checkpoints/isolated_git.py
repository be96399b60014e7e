"""hermes' own `git`: every command the checkpoints run, isolated from the user's git setup.

    result = await run_git(["--git-dir=D", "--work-tree=W", "write-tree"], cwd=W, deadline=d)

Invariants (of every `git` hermes/checkpoints starts):

- No global or system configuration is read: `GIT_CONFIG_GLOBAL=/dev/null` (which also
  stands for `$XDG_CONFIG_HOME/git/config`), `GIT_CONFIG_SYSTEM=/dev/null` and
  `GIT_CONFIG_NOSYSTEM=1`. The only configuration left is the shadow repository's own
  (written by hermes, under `$HERMES_HOME`), and `ISOLATION_CONFIG` on the command line
  outranks it.
- Every `GIT_*` variable of the environment is dropped (`GIT_DIR`, `GIT_WORK_TREE`,
  `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT/KEY_n/VALUE_n`,
  `GIT_EXEC_PATH`, `GIT_EXTERNAL_DIFF`, `GIT_ASKPASS`, `GIT_SSH_COMMAND`, …); only the
  ones `git_env` sets are there.
- Nothing that a configuration, an attribute or a hook names is ever run: fsmonitor off,
  hooks looked up in `/dev/null`, no global attributes file, no pager (`--no-pager`), no
  editor, no terminal prompt, no transport (`protocol.allow=never`). With no global or
  system configuration, no filter, diff, textconv or merge driver is defined at all, so a
  `.gitattributes` that names one names nothing; the shadow repository's `info/attributes`
  (`ATTRIBUTES`) also resets them, and diffs pass `--no-textconv --no-ext-diff`.
- Every run has a deadline (event-loop time): past it the process is killed and
  `GitTimeout` raised; a run given `max_records` is killed as soon as its output holds
  more NUL-terminated records than that (`TooManyRecords`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import CheckpointError

__all__ = [
    "ATTRIBUTES", "GitResult", "GitTimeout", "ISOLATION_CONFIG", "TooManyRecords", "git_command", "git_env", "run_git",
]  # fmt: skip

ISOLATION_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.untrackedCache=false",
    "protocol.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "advice.addEmbeddedRepo=false",
)
"""`-c` settings of every run; they outrank the shadow repository's own configuration."""

ATTRIBUTES = "* -text !eol -ident !filter !diff !merge !working-tree-encoding\n"
"""The shadow repository's `info/attributes` (the highest-precedence attributes file): no
end-of-line, `ident` or encoding conversion, so a snapshot holds the file's exact bytes,
and no filter, diff or merge driver named by a `.gitattributes` of the worktree (`!diff`
leaves text/binary detection to git, so patches still show lines)."""

_ENV: dict[str, str] = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": ":",
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "hermes",
    "GIT_AUTHOR_EMAIL": "hermes@localhost",
    "GIT_COMMITTER_NAME": "hermes",
    "GIT_COMMITTER_EMAIL": "hermes@localhost",
}


class GitTimeout(CheckpointError):
    """A checkpoint `git` ran past its deadline and was killed."""


class TooManyRecords(CheckpointError):
    """A checkpoint `git` listed more records than allowed and was killed."""


@dataclass(frozen=True, slots=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: bytes


def git_env(*, literal_pathspecs: bool = True) -> dict[str, str]:
    """The environment of a checkpoint `git`: this process's, less every `GIT_*`, plus `_ENV`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_ENV)
    if literal_pathspecs:
        env["GIT_LITERAL_PATHSPECS"] = "1"
    return env


def git_command(args: Sequence[str]) -> list[str]:
    """`git` with the isolation options, then `args`."""
    command = ["git", "--no-pager"]
    for setting in ISOLATION_CONFIG:
        command += ["-c", setting]
    return [*command, *args]


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    stdin: bytes | None = None,
    deadline: float | None = None,
    max_records: int | None = None,
    literal_pathspecs: bool = True,
) -> GitResult:
    """Run one isolated `git` (see the module docstring); its exit status and output."""
    proc = await asyncio.create_subprocess_exec(
        *git_command(args),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=cwd, env=git_env(literal_pathspecs=literal_pathspecs),
    )  # fmt: skip
    try:
        async with asyncio.timeout_at(deadline):
            out, err = await _collect(proc, stdin, max_records)
            returncode = await proc.wait()
    except TimeoutError:
        await _kill(proc)
        raise GitTimeout(f"git {_name(args)} ran out of time and was stopped") from None
    except BaseException:
        await _kill(proc)
        raise
    return GitResult(returncode, out, err)


async def _collect(
    proc: asyncio.subprocess.Process, stdin: bytes | None, max_records: int | None
) -> tuple[bytes, bytes]:
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    feeding = asyncio.ensure_future(_feed(proc, stdin))
    try:
        chunks: list[bytes] = []
        records = 0
        while chunk := await proc.stdout.read(1 << 16):
            chunks.append(chunk)
            if max_records is not None:
                records += chunk.count(b"\0")
                if records > max_records:
                    raise TooManyRecords(f"more than {max_records} records")
        await feeding
        return b"".join(chunks), await errors
    finally:
        for task in (errors, feeding):
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


async def _feed(proc: asyncio.subprocess.Process, stdin: bytes | None) -> None:
    if stdin is None or proc.stdin is None:
        return
    try:
        proc.stdin.write(stdin)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # git stopped reading; its exit status tells why
    finally:
        proc.stdin.close()


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(BaseException):
        await asyncio.shield(proc.wait())


def _name(args: Sequence[str]) -> str:
    """The subcommand among `args` (after the `--git-dir=`/`--work-tree=` options)."""
    return next((a for a in args if not a.startswith("-")), "?")
