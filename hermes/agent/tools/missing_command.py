"""A hint for a "command not found" result: a close command that exists.

    hint = missing_command_hint(stderr, returncode, cwd, path)   # None, or one line for the model

Invariants: only an exit status of 127 with the shell's own "not found" line gives a hint;
the hint names a program that exists and is executable (the project's virtual environment
first, then the same name with a `3`, then the closest name on PATH), never one that
does not; PATH folders are listed only on such a failure.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

__all__ = ["missing_command_hint"]

_NOT_FOUND = re.compile(
    r"^(?:\S*?: (?:line \d+: |\d+: )?)?(?P<name>[^\s:/]+): (?:command )?not found$", re.MULTILINE
)
"""bash (`bash: line 1: NAME: command not found`), dash (`sh: 1: NAME: not found`), zsh-style."""

_PROJECT_ENVS = (".venv", "venv", "env")
_MAX_LISTED = 20_000


def missing_command_hint(stderr: str, returncode: int | None, cwd: Path, path: str | None) -> str | None:
    """One line naming a close command that exists, when `stderr` says a command was not found."""
    if returncode != 127:
        return None
    match = _NOT_FOUND.search(stderr)
    if match is None:
        return None
    name = match.group("name")
    suggestion = _suggest(name, cwd, path or "")
    if suggestion is None:
        return None
    return f"hint: `{name}` is not installed here; `{suggestion}` exists and may be what you meant."


def _suggest(name: str, cwd: Path, path: str) -> str | None:
    for env in _PROJECT_ENVS:
        program = cwd / env / "bin" / name
        if _runnable(program):
            return f"{env}/bin/{name}"
    folders = [Path(p) for p in path.split(os.pathsep) if p]
    for variant in (f"{name}3", name.rstrip("3") if name.endswith("3") else None):
        if variant and variant != name and any(_runnable(folder / variant) for folder in folders):
            return variant
    close = difflib.get_close_matches(name, _programs(folders), n=1, cutoff=0.8)
    return close[0] if close else None


def _programs(folders: list[Path]) -> list[str]:
    found: dict[str, None] = {}
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if len(found) >= _MAX_LISTED:
                        return list(found)
                    if entry.name not in found and _runnable(Path(entry.path)):
                        found[entry.name] = None
        except OSError:
            continue
    return list(found)


def _runnable(program: Path) -> bool:
    return program.is_file() and os.access(program, os.X_OK)
