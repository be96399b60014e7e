"""Compose the prompt in `$VISUAL` / `$EDITOR` (Ctrl+X Ctrl+E, `/editor`).

The prompt text goes to a private temporary file (mode 0600, suffix .md), the editor runs
on it with the app suspended (Textual's `App.suspend()`: the terminal is the editor's until
it exits), and the file's text comes back as the new prompt.

Invariants:

- `$VISUAL` wins over `$EDITOR`; the value is split like a shell word list
  (`code --wait`), and the file path is the last argument. Neither set: no editor (the
  caller shows a one-line notice).
- Where the driver cannot suspend (the headless test driver, Textual Web), the editor
  still runs, without suspending, so a non-interactive editor works everywhere.
- An editor that exits non-zero, or cannot be started, leaves the prompt as it was
  (`EditorFailed` says why); one trailing newline that editors add is dropped.
- The temporary file is removed in every case.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from textual.app import App, SuspendNotSupported

from hermes.errors import HermesError

__all__ = ["EditorFailed", "editor_command", "edit_in_editor"]


class EditorFailed(HermesError):
    """The editor could not run, or exited with an error; the prompt is unchanged."""


def editor_command(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The editor's argv (without the file) from $VISUAL or $EDITOR; None when neither is set."""
    env = os.environ if env is None else env
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as exc:
                raise EditorFailed(f"${name} is not a valid command line ({exc})") from None
            if argv:
                return argv
    return None


def edit_in_editor(app: App[object], text: str, argv: list[str]) -> str:
    """Run `argv` on a file holding `text`, the app suspended; return the edited text."""
    fd, name = tempfile.mkstemp(prefix="hermes-prompt-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            with app.suspend():
                code = _run(argv, path)
        except SuspendNotSupported:
            code = _run(argv, path)
        if code != 0:
            raise EditorFailed(f"{shlex.join(argv)} exited with status {code}; the prompt is unchanged")
        edited = path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)
    return edited[:-1] if edited.endswith("\n") else edited


def _run(argv: list[str], path: Path) -> int:
    try:
        return subprocess.run([*argv, str(path)], check=False).returncode
    except OSError as exc:
        raise EditorFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
