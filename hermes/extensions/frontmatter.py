"""The front matter of a Markdown command or skill file: `key: value` lines between `---` lines.

    ---
    description: Review a file for bugs
    argument-hint: [file] [focus]
    ---
    The body…

Only what these files use is understood (no YAML library): plain, single- and double-quoted
scalars, folded continuation lines, and `|` / `>` block scalars. Other YAML (lists, maps)
is skipped line by line; it never raises. Keys are lowercased. A file that opens front
matter and never closes it is an error (`FrontMatterError`): its body would be guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")
_DELIMITER = "---"
MAX_VALUE_CHARS = 4096
"""A longer value is cut: a description is a line or two, never a document."""


class FrontMatterError(ValueError):
    """The file opens front matter with `---` and never closes it."""


@dataclass(frozen=True, slots=True)
class Document:
    fields: dict[str, str]
    """Lowercased keys to their text values (empty when the file has no front matter)."""
    body: str
    has_front_matter: bool


def parse(text: str) -> Document:
    """Split `text` into its front matter fields and its body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _DELIMITER:
        return Document({}, text, False)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in (_DELIMITER, "..."):
            break
    else:
        raise FrontMatterError("front matter opened with '---' is never closed")
    header = [line.rstrip("\r\n") for line in lines[1:end]]
    return Document(_fields(header), "".join(lines[end + 1 :]), True)


def _fields(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        match = _KEY.match(line)
        if match is None or line[:1].isspace():
            continue  # a comment, a list item, a nested map, or a stray line
        key, raw = match.group(1).lower(), (match.group(2) or "").strip()
        continuation: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][:1].isspace()):
            continuation.append(lines[index])
            index += 1
        value = _value(raw, continuation)
        if value is not None:
            fields[key] = value[:MAX_VALUE_CHARS]
    return fields


def _value(raw: str, continuation: list[str]) -> str | None:
    """The text of one key's value; None for what is not text (a list or map below the key)."""
    if raw[:1] in ("|", ">") and raw[1:].strip() in ("", "-", "+"):
        block = [line.strip() for line in continuation]
        while block and not block[-1]:
            block.pop()
        joined = "\n".join(block) if raw[0] == "|" else " ".join(part for part in block if part)
        return joined
    if raw.startswith("#"):
        raw = ""
    if not raw:
        # `key:` followed by an indented list or map: not a text value.
        return None if any(line.strip() for line in continuation) else ""
    if raw[0] in ("'", '"'):
        quoted = _quoted(raw, continuation)
        if quoted is not None:
            return quoted
    raw = re.sub(r"\s+#.*$", "", raw)  # a trailing comment
    parts = [raw, *(line.strip() for line in continuation if line.strip())]
    return " ".join(parts)


def _quoted(raw: str, continuation: list[str]) -> str | None:
    quote = raw[0]
    text = " ".join([raw, *(line.strip() for line in continuation if line.strip())])
    closing = _closing_quote(text, quote)
    if closing is None:
        return None
    inner = text[1:closing]
    if quote == "'":
        return inner.replace("''", "'")
    return re.sub(r'\\(["\\nt])', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)


def _closing_quote(text: str, quote: str) -> int | None:
    index = 1
    while index < len(text):
        char = text[index]
        if quote == '"' and char == "\\":
            index += 2
            continue
        if char == quote:
            if quote == "'" and text[index + 1 : index + 2] == "'":
                index += 2
                continue
            return index
        index += 1
    return None
