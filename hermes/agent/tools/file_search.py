"""list_files and search_files: read-only walks of a folder tree.

Invariants:
- the walk runs in a worker thread (asyncio.to_thread) so the event loop stays responsive;
  cancelling the tool sets a stop flag the walk checks before every file;
- junk folders (fsutil.SKIP_DIRS) are never entered; search_files skips binary files
  (NUL in the first 8 KB) and files over MAX_SEARCH_BYTES;
- paths the confinement policy hides (credential stores, $HERMES_HOME, …) are neither
  listed nor searched, also when a symlink leads there; the result says how many were skipped;
- results are sorted and capped, and a capped result says so.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from hermes.agent.safety.secret_reads import guards_reads, hidden_refusal, is_secret_file, read_refusal
from hermes.agent.tools.args import check_object, optional_int, optional_str, require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.agent.tools.fsutil import SNIFF_BYTES, glob_matcher, iter_files, not_found, resolve
from hermes.errors import ToolError

MAX_LISTED = 500
MAX_SCANNED = 200_000
"""Files visited before a walk gives up (and says so)."""
MAX_SEARCH_BYTES = 2 * 1024 * 1024
MAX_MATCH_CHARS = 300
DEFAULT_MATCH_LIMIT = 100
MAX_MATCH_LIMIT = 1000

T = TypeVar("T")


async def _in_thread(work: Callable[[threading.Event], T]) -> T:
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    except asyncio.CancelledError:
        stop.set()  # the thread cannot be cancelled; tell it to finish early
        raise


def _folder(ctx: ToolContext, raw: str | None) -> Path:
    top = resolve(ctx, raw or ".")
    if not top.exists():
        raise not_found(top, ctx.cwd)
    if not top.is_dir():
        raise ToolError(f"{top} is a file, not a folder; use read_file to read it")
    return top


def _scan_note(scanned: int) -> str:
    return f"[Stopped after scanning {scanned} files; narrow the path or pattern.]"


class _HiddenSkip:
    """The walk's filter: true for paths the turn's policy hides; counts what it skipped.

    Entries are checked as walked (os.walk does not follow symlinked folders) and, for
    symlinks, where they lead.
    """

    def __init__(self, ctx: ToolContext) -> None:
        self.policy = ctx.policy
        self.cwd = ctx.cwd
        self.skipped = 0

    def __call__(self, path: Path) -> bool:
        if self.policy.hidden_entry(path, self.cwd, resolve=os.path.islink(path)) is None:
            return False
        self.skipped += 1
        return True

    def note(self) -> str | None:
        if not self.skipped:
            return None
        noun = "path" if self.skipped == 1 else "paths"
        return f"[{self.skipped} hidden {noun} skipped (credential stores or hermes's own files).]"


# --- list_files ------------------------------------------------------------------------


async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    pattern = optional_str(args, "pattern") or "**/*"
    top = resolve(ctx, optional_str(args, "path") or ".")
    refusal = hidden_refusal(ctx, top, verb="listing")
    if refusal is not None:
        return refusal
    top = _folder(ctx, str(top))
    matches = glob_matcher(pattern)
    skip = _HiddenSkip(ctx)

    def work(stop: threading.Event) -> tuple[list[str], int]:
        found: list[str] = []
        scanned = 0
        for rel, _ in iter_files(top, skip):
            if stop.is_set() or scanned >= MAX_SCANNED:
                break
            scanned += 1
            if matches(rel):
                found.append(rel)
        return sorted(found), scanned

    found, scanned = await _in_thread(work)
    hidden_note = skip.note()
    if not found:
        return " ".join(filter(None, (f"No files under {top} match {pattern!r}.", hidden_note)))
    lines = [f"{len(found)} files under {top} matching {pattern!r}:", *found[:MAX_LISTED]]
    if len(found) > MAX_LISTED:
        lines.append(f"[… and {len(found) - MAX_LISTED} more; narrow the pattern or path to see them.]")
    if scanned >= MAX_SCANNED:
        lines.append(_scan_note(scanned))
    if hidden_note:
        lines.append(hidden_note)
    return "\n".join(lines)


LIST_FILES_TOOL = Tool(
    name="list_files",
    description=(
        "List files under a folder whose relative path matches a glob, sorted. '*' matches within one "
        "folder level, '**' across levels ('src/**/*.py'); a pattern without '/' matches file names at "
        "any depth ('*.py'). Skips .git, node_modules, __pycache__, .venv and similar folders. "
        f"Shows at most {MAX_LISTED} paths."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob for relative paths (default '**/*': every file)."},
            "path": {"type": "string", "description": "Folder to list (default: the working directory)."},
        },
        "required": [],
        "additionalProperties": False,
    },
    handler=list_files,
    read_only=True,
    preview_key="pattern",
)


# --- search_files ----------------------------------------------------------------------


def _candidates(top: Path, skip: Callable[[Path], bool]) -> Iterator[tuple[str, Path]]:
    if top.is_file():
        yield top.name, top
    else:
        yield from iter_files(top, skip)


def _text_of(path: Path) -> str | None:
    """Decoded content of a searchable file, or None for binaries, huge files and unreadable ones."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SEARCH_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    return data.decode("utf-8", errors="replace")


async def search_files(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    pattern = require_str(args, "pattern")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    top = resolve(ctx, optional_str(args, "path") or ".")
    refusal = hidden_refusal(ctx, top, verb="searching")
    if refusal is not None:
        return refusal
    if not top.exists():
        raise not_found(top, ctx.cwd)
    refusal = await read_refusal(ctx, "search_files", top)
    if refusal is not None:
        return refusal
    skip = _HiddenSkip(ctx)
    guarded = guards_reads(ctx)
    file_glob = optional_str(args, "glob")
    matches_glob = glob_matcher(file_glob) if file_glob else None
    limit = optional_int(args, "limit", DEFAULT_MATCH_LIMIT, minimum=1, maximum=MAX_MATCH_LIMIT)

    def work(stop: threading.Event) -> tuple[list[str], bool, int, int]:
        hits: list[str] = []
        more, scanned, searched = False, 0, 0
        for rel, path in _candidates(top, skip):
            if stop.is_set() or more or scanned >= MAX_SCANNED:
                break
            scanned += 1
            if matches_glob is not None and not matches_glob(rel):
                continue
            text = _text_of(path)
            if text is None or (guarded and path != top and is_secret_file(path, text)):
                continue
            searched += 1
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    if len(hits) >= limit:
                        more = True
                        break
                    shown = line.strip()
                    if len(shown) > MAX_MATCH_CHARS:
                        shown = shown[:MAX_MATCH_CHARS] + "…"
                    hits.append(f"{rel}:{number}: {shown}")
        return hits, more, scanned, searched

    hits, more, scanned, searched = await _in_thread(work)
    where = f"{top}" + (f" (files matching {file_glob!r})" if file_glob else "")
    hidden_note = skip.note()
    if not hits:
        found_none = f"No matches for /{pattern}/ in {where}; {searched} files searched."
        return " ".join(filter(None, (found_none, hidden_note)))
    base = "" if top.is_file() else f" (paths relative to {top})"
    lines = [f"{len(hits)} matches for /{pattern}/ in {where}{base}:", *hits]
    if more:
        lines.append(
            f"[Stopped at limit={limit}; more matches exist. Narrow the pattern, path or glob, or raise limit.]"
        )
    if scanned >= MAX_SCANNED:
        lines.append(_scan_note(scanned))
    if hidden_note:
        lines.append(hidden_note)
    return "\n".join(lines)


SEARCH_FILES_TOOL = Tool(
    name="search_files",
    description=(
        "Search the contents of text files for a Python regular expression (case-sensitive; prefix "
        "'(?i)' to ignore case). Returns 'path:line: text' lines. Searches a folder recursively (or one "
        "file), skipping .git, node_modules, __pycache__, .venv, binary files and files over 2 MB."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression to look for in each line."},
            "path": {"type": "string", "description": "Folder or file to search (default: the working directory)."},
            "glob": {
                "type": "string",
                "description": "Only search files whose relative path matches this glob, e.g. '*.py' or 'src/**/*.ts'.",
            },
            "limit": {
                "type": "integer",
                "description": (
                    f"Maximum matching lines to return (default {DEFAULT_MATCH_LIMIT}, at most {MAX_MATCH_LIMIT})."
                ),
                "minimum": 1,
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    handler=search_files,
    read_only=True,
    preview_key="pattern",
)
