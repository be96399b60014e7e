"""The entries of one memory file, and the edits the `memory` tool makes to them.

A file is Markdown. Its entries, in order:

- a line starting a bullet (`- `, `* `, `+ ` at column 0) starts an entry;
- a line after a blank line starts an entry (a paragraph, a heading);
- an indented line, or any other line right after a non-blank one, continues the entry.

Invariants:

- An edit rewrites only the lines of the entry it touches (add appends), so what the
  person wrote elsewhere in the file stays byte for byte; runs of blank lines an edit
  leaves behind are folded into one.
- Text from the model (`clean_entry`) holds no control character but newline and tab
  (hermes/terminal_text.py's stand-ins), no CR, and no credential of a URL (masked by
  hermes/redact.py, as everything hermes prints); an added entry is one bullet whose further
  lines are indented, so it never starts a heading or a second entry of its own.
- A change that would take the file over its cap (`cap` characters) is refused with
  `MemoryFull`, which says to consolidate first; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.errors import ToolError
from hermes.redact import redact_text
from hermes.terminal_text import for_terminal

BULLETS = ("- ", "* ", "+ ")


class MemoryFull(ToolError):
    """A change that would take a memory file over its cap."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry: lines[start:end] of its file."""

    start: int
    end: int
    text: str


def clean_text(text: str) -> str:
    """`text` with CRs made newlines and every other control character (but tab) made visible."""
    return for_terminal(text.replace("\r\n", "\n").replace("\r", "\n"))


def clean_entry(content: str) -> str:
    """The model's `content` as one bullet entry ("" when it holds nothing but spaces)."""
    lines = [line.rstrip() for line in clean_text(redact_text(content)).strip().split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        return ""
    first = lines[0].lstrip()
    if first.startswith(BULLETS):
        first = first[2:].lstrip()
    return "\n".join([f"- {first}", *(f"  {line.strip()}" for line in lines[1:])])


def parse_entries(text: str) -> list[Entry]:
    """The entries of a file's text (see the module docstring)."""
    lines = text.split("\n")
    entries: list[Entry] = []
    start: int | None = None
    previous_blank = True
    for index, line in enumerate(lines):
        blank = not line.strip()
        begins = not blank and (line.startswith(BULLETS) or (previous_blank and not line[:1].isspace()))
        if start is not None and (blank or begins):
            entries.append(Entry(start, index, "\n".join(lines[start:index])))
            start = None
        if start is None and not blank:
            start = index
        previous_blank = blank
    if start is not None:
        entries.append(Entry(start, len(lines), "\n".join(lines[start:])))
    return entries


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def find_entry(text: str, old: str, name: str) -> Entry:
    """The one entry of `text` that contains `old` (spaces and case aside); ToolError otherwise."""
    wanted = _normal(clean_text(old))
    if not wanted:
        raise ToolError("argument 'old' must be a non-empty part of the entry to change")
    entries = parse_entries(text)
    found = [entry for entry in entries if wanted in _normal(entry.text)]
    if len(found) == 1:
        return found[0]
    if not found:
        listing = _listing(entries) or "  (the file is empty)"
        raise ToolError(f"no entry of {name} contains {old!r}; its entries are:\n{listing}")
    raise ToolError(
        f"{len(found)} entries of {name} contain {old!r}; give a longer 'old' that names one of them:\n"
        + _listing(found)
    )


def _listing(entries: list[Entry], width: int = 160) -> str:
    shown = []
    for entry in entries:
        line = " ".join(entry.text.split())
        shown.append("  " + (line if len(line) <= width else line[: width - 1] + "…"))
    return "\n".join(shown)


def _joined(lines: list[str]) -> str:
    """Lines as file text: no leading or trailing blank lines, no run of blank lines, one final newline."""
    out: list[str] = []
    for line in lines:
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def add_entry(text: str, content: str) -> str:
    """`text` with `content` appended as a bullet (unchanged when an entry says the same already)."""
    entry = clean_entry(content)
    if not entry:
        raise ToolError("argument 'content' must be the non-empty text to remember")
    if any(_normal(e.text) == _normal(entry) for e in parse_entries(text)):
        return text
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    if lines and not lines[-1].startswith(BULLETS) and not lines[-1][:1].isspace():
        lines.append("")  # after a paragraph or a heading: a blank line, so the bullet stands alone
    return _joined([*lines, *entry.split("\n")])


def replace_entry(text: str, old: str, content: str, name: str) -> str:
    """`text` with the one entry containing `old` replaced by `content`."""
    entry = clean_entry(content)
    if not entry:
        raise ToolError("argument 'content' must be the new text of the entry (use action 'remove' to delete it)")
    found = find_entry(text, old, name)
    lines = text.split("\n")
    return _joined([*lines[: found.start], *entry.split("\n"), *lines[found.end :]])


def remove_entry(text: str, old: str, name: str) -> str:
    """`text` without the one entry containing `old`."""
    found = find_entry(text, old, name)
    lines = text.split("\n")
    return _joined([*lines[: found.start], *lines[found.end :]])


def check_cap(before: str, after: str, cap: int, name: str, setting: str) -> None:
    """MemoryFull when `after` is longer than `cap` characters and longer than `before`
    (a file already over its cap by hand may still shrink)."""
    if len(after) <= cap or len(after) <= len(before):
        return
    raise MemoryFull(
        f"{name} would hold {len(after):,} characters, over its cap of {cap:,} ({setting}); nothing was saved. "
        f"Consolidate first: merge related entries into one shorter entry with action 'replace', or delete "
        f"ones that no longer matter with action 'remove'; then save this again, in fewer words."
    )
