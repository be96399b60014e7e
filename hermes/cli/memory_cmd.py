"""`hermes memory show|edit`: the memory new sessions start with ($HERMES_HOME/memories/).

    hermes memory show            both files, or that they are empty (or that memory is off)
    hermes memory edit [--user]   MEMORY.md (USER.md with --user) in $VISUAL / $EDITOR

`show` prints the files with their control characters made visible (the model wrote them).
`edit` makes the folder and the file when missing (refusing a symlinked folder or file,
hermes/agent/memory/files.py), then runs the editor on the file and waits for it; no
editor set, or one that cannot start or fails, is a one-line error with a non-zero exit.
"""

from __future__ import annotations

import os
import shlex
import subprocess

import typer

from hermes.cli._common import load_settings
from hermes.errors import HermesError, UsageError

app = typer.Typer(help="Show and edit what hermes remembers across sessions.", no_args_is_help=True)

NO_EDITOR = "no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=nano) to edit the memory"


@app.command("show")
def show() -> None:
    """Print MEMORY.md and USER.md as new sessions will read them."""
    from hermes.agent.factory import memory_files
    from hermes.agent.memory.files import CAP_SETTINGS, FILE_NAMES, TARGETS
    from hermes.terminal_text import for_terminal

    settings = load_settings()
    files = memory_files(settings)
    if files is None:
        typer.echo("memory is off (memory = false): new sessions get no memory and no memory tool")
        return
    empty = True
    for target in TARGETS:
        text = files.read(target).strip()
        if not text:
            continue
        if not empty:
            typer.echo("")
        empty = False
        cap = files.caps.of(target)
        over = f", over its cap: new sessions read the first {cap:,}" if len(text) > cap else ""
        typer.echo(f"== {files.path(target)} ({len(text):,} of {cap:,} characters, {CAP_SETTINGS[target]}{over})")
        typer.echo(for_terminal(text))
    if empty:
        names = " and ".join(FILE_NAMES[t] for t in TARGETS)
        typer.echo(f"memory is empty ({names} in {files.folder} hold nothing yet)")


@app.command("edit")
def edit(user: bool = typer.Option(False, "--user", help="Edit USER.md (who you are) instead of MEMORY.md.")) -> None:
    """Open MEMORY.md (or USER.md) in $VISUAL / $EDITOR, creating it when missing."""
    from hermes.agent.factory import memory_files
    from hermes.agent.memory.files import CAP_SETTINGS, MemoryCaps, MemoryFiles, Target

    settings = load_settings()
    argv = editor_command()
    target: Target = "user" if user else "memory"
    files = memory_files(settings) or MemoryFiles(
        settings.home, MemoryCaps(settings.memory_max_chars, settings.user_memory_max_chars)
    )
    path = files.ensure(target)
    try:
        code = subprocess.run([*argv, str(path)], check=False).returncode
    except OSError as exc:
        raise HermesError(f"cannot start the editor {argv[0]}: {exc.strerror or exc}") from None
    if code != 0:
        raise HermesError(f"the editor ({shlex.join(argv)}) exited with status {code}")
    text = files.read(target)
    cap = files.caps.of(target)
    note = (
        f"; over its cap of {cap:,} ({CAP_SETTINGS[target]}): new sessions read the first {cap:,}"
        if len(text.strip()) > cap
        else ""
    )
    off = "" if settings.memory else " (memory = false: no session reads it until memory is on)"
    typer.echo(f"{path}: {len(text.strip()):,} characters{note}{off}")


def editor_command() -> list[str]:
    """The editor's argv from $VISUAL, else $EDITOR; UsageError when neither is set or valid."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if not value:
            continue
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"${name} is not a valid command line ({exc})") from None
        if argv:
            return argv
    raise UsageError(NO_EDITOR)
