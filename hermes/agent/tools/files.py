"""File tools: read_file, write_file and patch here; list_files and search_files (re-exported) in file_search.

Invariants:
- every path argument is resolved against ctx.cwd with ~ expanded (fsutil.resolve);
- paths are checked against the turn's confinement policy (hermes/agent/safety/confinement.py):
  hidden paths are never read; a write outside the writable roots needs approval, one to
  hermes's own files never happens; anywhere approval.check_write_path still asks for
  ~/.ssh, /etc and the files that run code later (.git/config, .git/hooks, .envrc, shell
  startup files, ~/.config: safety/runs_later.py); "allow for this session" covers the one path;
- a write goes to the path's real path as resolved once before the checks, and both forms
  are checked; its folders are then opened from `/` with no symlink followed
  (hermes/beneath.py), so a folder swapped for a symlink after the check refuses the write
  (a ToolError) instead of writing elsewhere;
- writes are atomic (temp file + rename in the opened folder); a refused write changes
  nothing and returns a result text, not an error;
- with a host's file access (ctx.host.files, e.g. an editor over ACP) the text is read from
  and written through the host (its unsaved buffers), after the same checks;
- patch changes a file only when old_string stands for exactly one place (or replace_all is
  set): as written, else as fitted by edit_match (N| prefixes, indentation, a near match);
  a failed match shows the file's nearest lines; an edit that changes nothing writes nothing;
  a patch that would undo the turn's own earlier edit is refused once (edit_history);
- patch's result and an overwriting write_file's result end with the unified diff of the
  change against the file as it was (real line numbers): front ends show that diff, never one
  rebuilt from the arguments.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path
from typing import Any

from hermes.agent.safety.approval import blocked_message, check_write_path, denied_message
from hermes.agent.safety.grants import path_grant
from hermes.agent.safety.secret_reads import hidden_refusal, read_refusal
from hermes.agent.safety.verdict import Verdict
from hermes.agent.tools.args import check_object, optional_bool, optional_int, require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.agent.tools.edit_history import undoing_refusal
from hermes.agent.tools.edit_match import as_addition, fit_edit, nearest_run
from hermes.agent.tools.file_search import LIST_FILES_TOOL, SEARCH_FILES_TOOL
from hermes.agent.tools.fsutil import existing_text_file, resolve
from hermes.beneath import PathRefused, write_resolved
from hermes.errors import ToolError

__all__ = ["LIST_FILES_TOOL", "PATCH_TOOL", "READ_FILE_TOOL", "SEARCH_FILES_TOOL", "WRITE_FILE_TOOL"]

DEFAULT_LIMIT = 500
MAX_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 100_000
"""read_file stops adding lines once its output reaches this size (and says where to continue)."""
MAX_DIFF_LINES = 120


# --- read_file -------------------------------------------------------------------------


def _read_lines(path: Path, offset: int, limit: int) -> tuple[list[str], int]:
    """Lines offset..offset+limit-1 (1-based, newline stripped) and the file's total line count."""
    selected: list[str] = []
    total = 0
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            total = number
            if offset <= number < offset + limit:
                selected.append(line.rstrip("\n"))
    return selected, total


def _select_lines(text: str, offset: int, limit: int) -> tuple[list[str], int]:
    """`_read_lines` over a text already read (a host's buffer)."""
    lines = text.splitlines()
    return lines[offset - 1 : offset - 1 + limit], len(lines)


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    path = resolve(ctx, require_str(args, "path"))
    offset = optional_int(args, "offset", 1, minimum=1)
    limit = optional_int(args, "limit", DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    refusal = hidden_refusal(ctx, path) or await read_refusal(
        ctx, "read_file", existing_text_file(path, ctx.cwd)
    )
    if refusal is not None:
        return refusal
    files = ctx.host.files if ctx.host is not None else None
    try:
        if files is not None:
            lines, total = _select_lines(await files.read_text(path), offset, limit)
        else:
            lines, total = await asyncio.to_thread(_read_lines, path, offset, limit)
    except PermissionError:
        raise ToolError(f"permission denied reading {path}") from None
    if total == 0:
        return f"{path} is empty (0 lines)."
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {path}, which has {total} lines")
    out: list[str] = []
    size = 0
    for number, text in enumerate(lines, offset):
        if len(text) > MAX_LINE_CHARS:
            text = f"{text[:MAX_LINE_CHARS]}… [line cut: {len(text)} characters]"
        if out and size + len(text) > MAX_READ_CHARS:
            break  # output budget spent; the footer says where to continue
        out.append(f"{number}|{text}")
        size += len(out[-1]) + 1
    last = offset + len(out) - 1
    if last < total:
        out.append(f"[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to read more.]")
    elif offset > 1:
        out.append(f"[Showing lines {offset}-{last} of {total}; end of file.]")
    return "\n".join(out)


READ_FILE_TOOL = Tool(
    name="read_file",
    description=(
        "Read a text file. Each line is returned as 'N|text' where N is the 1-based line number "
        "(the 'N|' prefix is not part of the file: leave it out when you copy text into patch). "
        f"Reads up to {DEFAULT_LIMIT} lines by default; use offset and limit to page through long files."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to read; relative paths start at the working directory."},
            "offset": {"type": "integer", "description": "First line to return, 1-based (default 1).", "minimum": 1},
            "limit": {
                "type": "integer",
                "description": f"How many lines to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
                "minimum": 1,
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=read_file,
    read_only=True,
    preview_key="path",
)


# --- approval for writes -----------------------------------------------------------------


_NOT_WRITTEN = "was not made (the file is unchanged)"


def _verdict(ctx: ToolContext, path: Path) -> Verdict:
    try:
        return _write_verdict(ctx, path)
    except OSError as exc:  # a symlink on the way changed while it was read
        raise _changing(path, exc) from None


def _changing(path: Path, exc: OSError) -> ToolError:
    return ToolError(f"could not write {path}: it changed while it was checked ({exc.strerror or exc}); "
                     "nothing was written")  # fmt: skip


async def _write_refusal(ctx: ToolContext, tool_name: str, path: Path, target: Path) -> str | None:
    """None when the write may go ahead; otherwise the result text explaining the refusal.

    `target` is `path`'s real path, resolved once before the checks: the write goes to that
    file only (`_write`), so both are checked and the stricter answer wins.
    """
    verdicts = [_verdict(ctx, path), _verdict(ctx, target)]
    verdict = max(verdicts, key=lambda v: _STRICTNESS[v.level])
    if verdict.level == "block":
        return blocked_message(f"the write to {path}", verdict, outcome=_NOT_WRITTEN)
    if verdict.level == "approve" and not await ctx.request_approval(
        tool_name, str(path), verdict.reason, verdict.rule, path_grant("write", path)
    ):
        message = denied_message(
            f"the write to {path}", verdict, approver_available=ctx.approve is not None, outcome=_NOT_WRITTEN
        )
        if "outside_write" in verdict.rule.split("+"):
            message += f" Files can be written in the working directory {ctx.cwd} or in {ctx.policy.tmp_dir}."
        return message
    return None


_STRICTNESS = {"allow": 0, "approve": 1, "block": 2}


def _target(ctx: ToolContext, path: Path, verb: str) -> tuple[Path, str | None]:
    """`path`'s real path (the one file a write may change) and, when that is hidden, the refusal."""
    try:
        target = Path(os.path.realpath(path))
        return target, hidden_refusal(ctx, path, verb=verb) or hidden_refusal(ctx, target, verb=verb)
    except OSError as exc:  # a symlink on the way changed while it was read
        raise _changing(path, exc) from None


def _write_verdict(ctx: ToolContext, path: Path) -> Verdict:
    """The confinement's answer merged with the sensitive-path one, so a write outside the roots
    to ~/.bashrc carries both rules (and never a grant of an outside write alone)."""
    confined = ctx.policy.write_check(path, ctx.cwd)
    if confined.level == "block":
        return confined
    sensitive = check_write_path(path)
    if confined.level == "allow":
        return sensitive
    if sensitive.level == "allow":
        return confined
    return Verdict("approve", f"{confined.reason}; {sensitive.reason}", f"{confined.rule}+{sensitive.rule}")


def _encode(text: str, name: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        raise ToolError(f"argument '{name}' contains characters that cannot be written as UTF-8") from None


async def _read_text(ctx: ToolContext, path: Path) -> str:
    """The file's text, from the host when there is one (an editor's buffer), else from disk."""
    files = ctx.host.files if ctx.host is not None else None
    if files is not None:
        return await files.read_text(path)
    return (await asyncio.to_thread(path.read_bytes)).decode("utf-8", errors="surrogateescape")


async def _write(path: Path, target: Path, data: bytes, ctx: ToolContext | None = None) -> None:
    """Write `data` to `target`, the real path of `path` that the checks approved.

    On disk the folders of `target` are opened from `/` with no symlink followed
    (hermes/beneath.py): a symlink swapped in since the check is a refusal, never a write
    elsewhere. A host (an editor) is given `target` too.
    """
    files = ctx.host.files if ctx is not None and ctx.host is not None else None
    if files is not None:
        await files.write_text(target, data.decode("utf-8", errors="surrogateescape"))
        return
    try:
        await asyncio.to_thread(write_resolved, target, data)
    except PathRefused as exc:
        raise ToolError(
            f"could not write {path}: {exc.reason} (a symlink is never followed once the write was checked); "
            "nothing was written"
        ) from None
    except OSError as exc:
        raise ToolError(f"could not write {path}: {exc.strerror or exc}") from None


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- write_file ------------------------------------------------------------------------


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    path = resolve(ctx, require_str(args, "path"))
    content = require_str(args, "content", allow_empty=True)
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give a file path")
    data = _encode(content, "content")
    target, refusal = _target(ctx, path, "writing")
    refusal = refusal or await _write_refusal(ctx, "write_file", path, target)
    if refusal is not None:
        return refusal
    existed = path.exists()
    before = await _read_text(ctx, path) if existed and path.is_file() else None
    if before is not None and _encode(before, "content") == data:
        return f"No change: {path} already has exactly this content; nothing was written."
    await _write(path, target, data, ctx)
    diagnostics = await _diagnostics(ctx, target, before, content)
    if before is None:
        return f"Created {path}: wrote {len(data)} bytes ({_count_lines(content)} lines).{diagnostics}"
    # The change against the file as it was: what the model and the tool card both see.
    change = await asyncio.to_thread(_overwrite_diff, path, before, content)
    return f"Overwrote {path}: wrote {len(data)} bytes ({_count_lines(content)} lines).\n{change}{diagnostics}"


MAX_DIFF_INPUT = 1_000_000
"""Characters on either side above which an overwrite's change is summed up, not diffed."""


MAX_DIFF_LINE = 500
"""Characters of one diff line shown; the rest of a longer line is summed up."""


def _overwrite_diff(path: Path, before: str, after: str) -> str:
    if "\x00" in before:
        return "[diff not shown: the file held binary data before]"
    if len(before) > MAX_DIFF_INPUT or len(after) > MAX_DIFF_INPUT:
        return f"[diff not shown: the file is over {MAX_DIFF_INPUT:,} characters]"
    return "\n".join(_cut_line(line) for line in _diff(path, before, after).split("\n"))


def _cut_line(line: str) -> str:
    if len(line) <= MAX_DIFF_LINE:
        return line
    return f"{line[:MAX_DIFF_LINE]}… [{len(line) - MAX_DIFF_LINE:,} more characters]"


WRITE_FILE_TOOL = Tool(
    name="write_file",
    description=(
        "Create a file or replace its whole content. Parent folders are created. "
        "To change part of an existing file, prefer patch."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to write; relative paths start at the working directory."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    handler=write_file,
    read_only=False,
    preview_key="path",
)


# --- patch -----------------------------------------------------------------------------


def _no_match(path: Path, text: str, old: str) -> ToolError:
    """The error for an old_string found nowhere: it shows the file's lines most like it."""
    lines = text.split("\n")
    near = nearest_run(lines, old)
    shown = ""
    if near is not None:
        first, last = max(0, near[0] - 1), min(len(lines), near[1] + 1)
        numbered = "\n".join(f"{n}|{lines[n - 1]}" for n in range(first + 1, last + 1))
        shown = f" The lines of the file most like it are:\n{numbered}\nCopy the text to change from them exactly."
    return ToolError(
        f"no match for old_string in {path}; copy the exact text, including whitespace and indentation, "
        f"without read_file's 'N|' line prefixes.{shown}"
    )


def _diff(path: Path, before: str, after: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{path.name}", f"b/{path.name}", n=2, lineterm=""
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"[… {cut} more diff lines not shown]"]
    return "\n".join(lines)


async def patch(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    path = resolve(ctx, require_str(args, "path"))
    old = require_str(args, "old_string", allow_empty=True)
    new = require_str(args, "new_string", allow_empty=True)
    replace_all = optional_bool(args, "replace_all", False)
    if not old:
        raise ToolError("old_string must not be empty; to create or overwrite a whole file use write_file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    target, refusal = _target(ctx, path, "editing")
    refusal = refusal or await read_refusal(ctx, "patch", existing_text_file(path, ctx.cwd))
    if refusal is not None:
        return refusal
    undoing = undoing_refusal(ctx, path, old, new)
    if undoing is not None:
        return undoing
    text = await _read_text(ctx, path)

    count, how = text.count(old), "exact"
    if count == 0:
        # read_file shows CRLF files with plain newlines: fit against that view, then write
        # in the file's own style.
        crlf = "\r\n" in text
        view = text.replace("\r\n", "\n") if crlf else text
        fit = fit_edit(view.split("\n"), old.replace("\r\n", "\n"), new.replace("\r\n", "\n"))
        if fit is None:
            addition = as_addition(view.split("\n"), old, new)
            if addition is None:
                raise _no_match(path, view, old)
            return await _append(ctx, path, target, text, addition)
        old, new, how = fit.old, fit.new, fit.how
        if crlf:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count > 1 and not replace_all:
        raise ToolError(
            f"{count} matches for old_string in {path}; add surrounding lines to make it unique, "
            "or set replace_all=true to replace every occurrence"
        )
    _encode(new, "new_string")  # fail on unwritable text before asking for approval
    refusal = await _write_refusal(ctx, "patch", path, target)
    if refusal is not None:
        return refusal
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    if after == text:
        return f"No change: {path} already reads that way (new_string equals what it replaces); nothing was written."
    await _write(path, target, after.encode("utf-8", errors="surrogateescape"), ctx)
    diff = await asyncio.to_thread(_diff, path, text, after)
    noun = "occurrence" if count == 1 else "occurrences"
    matched = _MATCHED.get(how, "")
    return f"Patched {path}: replaced {count} {noun}{matched}.\n{diff}" + await _diagnostics(ctx, target, text, after)


async def _append(ctx: ToolContext, path: Path, target: Path, text: str, addition: str) -> str:
    """Add `addition` at the end of the file (after one blank line), as patch's reading of an
    old_string that names new code (see edit_match.as_addition)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text if not text or text.endswith("\n") else text + newline
    separator = newline if body.strip() and not body.endswith(newline * 2) else ""
    after = body + separator + addition.replace("\n", newline).rstrip("\r\n") + newline
    _encode(addition, "new_string")
    refusal = await _write_refusal(ctx, "patch", path, target)
    if refusal is not None:
        return refusal
    await _write(path, target, after.encode("utf-8", errors="surrogateescape"), ctx)
    diff = await asyncio.to_thread(_diff, path, text, after)
    return (
        f"Patched {path}: old_string is not in the file and new_string begins with it, so new_string "
        f"was added at the end of the file as new code.\n{diff}"
    ) + await _diagnostics(ctx, target, text, after)


async def _diagnostics(ctx: ToolContext, target: Path, before: str | None, after: str) -> str:
    """The language server's word on the edit, as lines after the result ("" without one).

    Only for this machine's files: an editor (ACP) keeps its own diagnostics."""
    if ctx.diagnostics is None or ctx.host is not None:
        return ""
    found = await ctx.diagnostics.after_edit(target, before, after, ctx.cwd)
    return f"\n{found}" if found else ""


_MATCHED = {
    "prefixes": " (old_string matched once read_file's N| prefixes were dropped)",
    "loose": " (old_string matched ignoring indentation and spaces; new_string was indented like the file)",
    "similar": " (old_string matched a nearly identical passage; check the diff)",
}


PATCH_TOOL = Tool(
    name="patch",
    description=(
        "Edit a file by replacing an exact piece of text. old_string must match the file exactly "
        "(whitespace and indentation included, without read_file's 'N|' prefixes) and exactly once, "
        "unless replace_all is true; include enough surrounding lines to make it unique. "
        "Returns a unified diff of the change."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to edit; relative paths start at the working directory."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The replacement text (may be empty to delete)."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of requiring exactly one (default false).",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
    handler=patch,
    read_only=False,
    preview_key="path",
)
