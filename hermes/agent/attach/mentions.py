"""`@` mentions in a prompt: `@path` attaches a file's text, `@path#L20-45` those lines,
`@folder/` a listing of the folder. One expansion for every front end (the TUI, `chat -q`,
ACP), run where the person is: a remote turn carries the expanded text.

A mention whose path does not exist stays as typed and attaches nothing. A mention that
exists but may not be read (`read_policy`), is too large, is binary or would pass the
turn's limit attaches nothing and gives a note the front end shows. The attachments follow
the prompt in the text that is sent and stored (`hermes.attachment_blocks`), so the model
sees each one once, in the message it came with.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from hermes.agent.attach.file_index import list_files
from hermes.agent.attach.read_policy import open_regular, refusal
from hermes.agent.safety.confinement import Confinement
from hermes.attachment_blocks import Attachment, compose

MENTION = re.compile(r"(?<![^\s(\[{\"'])@(\S+)")
"""`@` at the start or after a space or an opening bracket or quote (so mail@example.com is no mention)."""
_LINES = re.compile(r"^(?P<path>.+?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")
_TRAILING = ".,;:!?)]}'\"`"
SNIFF = 8192


@dataclass(frozen=True, slots=True)
class MentionLimits:
    max_file_bytes: int = 256 * 1024
    """A whole file larger than this is refused (name a line range instead)."""
    max_range_source_bytes: int = 64 * 1024 * 1024
    """A line range is read from files up to this size."""
    max_turn_bytes: int = 1024 * 1024
    """All of a turn's attachments together."""
    max_attachments: int = 20
    max_listing_entries: int = 500


@dataclass(frozen=True, slots=True)
class Expansion:
    text: str
    """The prompt followed by its attachment blocks (the prompt itself when nothing was attached)."""
    prompt: str
    attachments: tuple[Attachment, ...] = ()
    notes: tuple[str, ...] = ()
    """Why a mention attached nothing (refused, too large, binary), one line each."""


class _Refused(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Mention:
    written: str
    path: Path
    lines: tuple[int, int | None] | None


def _resolve(token: str, cwd: Path) -> _Mention | None:
    """The mention `token` (without its `@`) names, or None when no such path exists."""
    candidates = [token]
    stripped = token.rstrip(_TRAILING)
    if stripped and stripped != token:
        candidates.append(stripped)
    for candidate in candidates:
        lines: tuple[int, int | None] | None = None
        if candidate.startswith("file:///"):  # an editor's resource link (ACP)
            candidate = unquote(candidate.removeprefix("file://"))
        written = candidate
        ranged = _LINES.match(candidate)
        if ranged is not None:
            written = ranged["path"]
            end = ranged["end"]
            lines = (int(ranged["start"]), int(end if end is not None else ranged["start"]))
        path = Path(written).expanduser()
        absolute = path if path.is_absolute() else cwd / path
        if os.path.lexists(absolute):
            return _Mention(written, Path(os.path.abspath(absolute)), lines)
    return None


def _check_text(data: bytes, written: str) -> str:
    if b"\0" in data[:SNIFF]:
        raise _Refused(f"@{written} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused(f"@{written} is a binary file (not UTF-8 text)") from None


def _read_file(mention: _Mention, limits: MentionLimits) -> Attachment:
    real = Path(os.path.realpath(mention.path))
    fd = open_regular(real)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if mention.lines is None:
            if size > limits.max_file_bytes:
                raise _Refused(
                    f"@{mention.written} is {size:,} bytes (the limit is {limits.max_file_bytes:,}); "
                    f"name a line range instead: @{mention.written}#L1-200"
                )
            data = handle.read(limits.max_file_bytes + 1)
            if len(data) > limits.max_file_bytes:
                raise _Refused(f"@{mention.written} grew past {limits.max_file_bytes:,} bytes while being read")
            return Attachment("file", mention.written, _check_text(data, mention.written))
        if size > limits.max_range_source_bytes:
            raise _Refused(f"@{mention.written} is {size:,} bytes, too large to take lines from")
        _check_text(handle.read(SNIFF), mention.written)
        handle.seek(0)
        start, end = mention.lines
        if start < 1 or (end is not None and end < start):
            raise _Refused(f"@{mention.written}#L{start}-{end}: lines run from 1, the first before the last")
        picked: list[bytes] = []
        taken = 0
        number = 0
        for number, line in enumerate(handle, start=1):  # noqa: B007 - the count after the loop is used
            if number < start:
                continue
            if end is not None and number > end:
                break
            taken += len(line)
            if taken > limits.max_file_bytes:
                raise _Refused(f"@{mention.written}: lines {start}-{end} pass {limits.max_file_bytes:,} bytes")
            picked.append(line)
        if not picked:
            raise _Refused(f"@{mention.written} has only {number} lines")
        last = start + len(picked) - 1
        body = _check_text(b"".join(picked), mention.written)
        return Attachment("file", mention.written, body, (start, last))


def _listing(mention: _Mention, limits: MentionLimits) -> Attachment:
    real = Path(os.path.realpath(mention.path))
    index = list_files(real, limit=limits.max_listing_entries)
    lines = list(index.paths)
    if index.truncated:
        lines.append(f"… (more entries; the first {len(index.paths)} are listed)")
    written = mention.written if mention.written.endswith("/") else mention.written + "/"
    return Attachment("folder", written, "\n".join(lines) if lines else "(empty folder)")


def expand_mentions(
    prompt: str, cwd: Path, confinement: Confinement, limits: MentionLimits | None = None
) -> Expansion:
    """The prompt with what its mentions attach (see the module docstring). Blocking file I/O."""
    limits = limits or MentionLimits()
    attachments: list[Attachment] = []
    notes: list[str] = []
    seen: set[tuple[str, tuple[int, int | None] | None]] = set()
    total = 0
    for match in MENTION.finditer(prompt):
        mention = _resolve(match.group(1), cwd)
        if mention is None:
            continue  # not a path: the text stays as typed
        key = (os.path.realpath(mention.path), mention.lines)
        if key in seen:
            continue
        seen.add(key)
        try:
            why = refusal(mention.path, mention.written, cwd, confinement)
            if why is not None:
                raise _Refused(f"@{mention.written} was not attached: {why}")
            if len(attachments) >= limits.max_attachments:
                raise _Refused(f"@{mention.written} was not attached: at most {limits.max_attachments} per prompt")
            if os.path.isdir(mention.path):
                if mention.lines is not None:
                    raise _Refused(f"@{mention.written} is a folder: it has no lines")
                attachment = _listing(mention, limits)
            else:
                attachment = _read_file(mention, limits)
            size = len(attachment.body.encode("utf-8"))
            if total + size > limits.max_turn_bytes:
                raise _Refused(
                    f"@{mention.written} was not attached: the prompt's attachments would pass "
                    f"{limits.max_turn_bytes:,} bytes"
                )
        except _Refused as refused:
            notes.append(str(refused))
            continue
        except OSError as exc:
            notes.append(f"@{mention.written} could not be read: {exc.strerror or exc}")
            continue
        total += size
        attachments.append(attachment)
    return Expansion(compose(prompt, attachments), prompt, tuple(attachments), tuple(notes))


async def expand_mentions_async(
    prompt: str, cwd: Path, confinement: Confinement, limits: MentionLimits | None = None
) -> Expansion:
    """`expand_mentions` in a thread (it reads files), for a front end's event loop."""
    if "@" not in prompt:
        return Expansion(prompt, prompt)
    return await asyncio.to_thread(expand_mentions, prompt, cwd, confinement, limits)
