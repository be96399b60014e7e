"""The files of a working folder, for the `@` picker, and a fuzzy ranking over them.

In a git work tree the list is `git ls-files --cached --others --exclude-standard` (so
`.gitignore` is respected); elsewhere a walk that skips hidden entries, `.venv` and
`node_modules`. Both are bounded by a count and a time, so a home folder or a huge
repository never stalls the prompt: `FileIndex.truncated` says the list was cut.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 20_000
TIME_BUDGET = 2.0
"""Seconds the listing may take before it stops with what it has."""
SKIPPED_DIRS = frozenset({".venv", "venv", "node_modules", "__pycache__", ".git", ".hg", ".svn"})


@dataclass(frozen=True, slots=True)
class FileIndex:
    paths: tuple[str, ...]
    """Relative to the folder, `/`-separated; folders end with `/`."""
    truncated: bool = False


def _git_files(cwd: Path, limit: int, budget: float) -> FileIndex | None:
    """The git listing, or None when `cwd` is not in a work tree (or git is missing or slow)."""
    command = [
        "git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
        "ls-files", "--cached", "--others", "--exclude-standard", "-z",
    ]  # fmt: skip
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, timeout=budget, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = [name for name in done.stdout.decode("utf-8", errors="replace").split("\0") if name]
    folders: dict[str, None] = {}
    for name in names:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folders["/".join(parts[:depth]) + "/"] = None
    every = [*folders, *dict.fromkeys(names)]
    return FileIndex(tuple(every[:limit]), truncated=len(every) > limit)


def _walk(cwd: Path, limit: int, budget: float) -> FileIndex:
    deadline = time.monotonic() + budget
    found: list[str] = []
    pending = [""]
    while pending:
        relative = pending.pop(0)
        try:
            entries = sorted(os.scandir(cwd / relative) if relative else os.scandir(cwd), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            name = f"{relative}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            found.append(name + "/" if is_dir else name)
            if is_dir:
                pending.append(name + "/")
            if len(found) >= limit or time.monotonic() > deadline:
                return FileIndex(tuple(found), truncated=True)
    return FileIndex(tuple(found))


def list_files(cwd: Path, *, limit: int = MAX_FILES, budget: float = TIME_BUDGET) -> FileIndex:
    """The folder's files and folders (see the module docstring). Blocking: run it in a thread."""
    listed = _git_files(cwd, limit, budget)
    return listed if listed is not None else _walk(cwd, limit, budget)


def _score(query: str, path: str) -> int | None:
    """A subsequence match's score (higher is better), None when `query` is not a subsequence."""
    if not query:
        return 0
    lowered = path.lower()
    name_start = lowered.rstrip("/").rfind("/") + 1
    score = 0
    at = 0
    previous = -2
    for char in query.lower():
        found = lowered.find(char, at)
        if found < 0:
            return None
        score += 1
        if found == previous + 1:
            score += 5  # consecutive characters
        if found >= name_start:
            score += 3  # in the file name rather than its folders
        if found == 0 or lowered[found - 1] in "/._-":
            score += 4  # at the start of a word
        previous = found
        at = found + 1
    if lowered.rstrip("/").endswith(query.lower()):
        score += 10
    return score * 100 - len(path)


def fuzzy_rank(query: str, paths: tuple[str, ...] | list[str], limit: int = 50) -> list[str]:
    """The best `limit` of `paths` for `query` (a subsequence match, file names first)."""
    scored = [(score, path) for path in paths if (score := _score(query, path)) is not None]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [path for _, path in scored[:limit]]
