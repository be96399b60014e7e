"""The text form of what an `@` mention attached to a user message, and its reading back.

A user message with attachments is stored (and sent to the model) as one text: what the
person typed, then one block per attachment:

    <typed prompt>

    <attachment kind="file" path="src/greet.py" lines="20-45" chars="812">
    …exactly `chars` characters of content…
    </attachment>

Keeping it text means it travels unchanged everywhere a user message goes (the store, a
remote server's REST API, an export, a resumed session's history) and the model sees it
once, in the message it came with. `chars` makes the reading back exact, even when the
content itself holds "</attachment>". This module sits below every layer (it imports
nothing from hermes) so the store's readers, the TUI and the CLI read the same form.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Attachment", "AttachmentKind", "compose", "image_label", "split", "split_content"]

AttachmentKind = Literal["file", "folder"]

_OPEN = "<attachment "
_CLOSE = "\n</attachment>"
_HEADER = re.compile(r'<attachment kind="(file|folder)" path="([^"]*)"(?: lines="(\d+)-(\d+)")? chars="(\d+)">\n')


@dataclass(frozen=True, slots=True)
class Attachment:
    """One attached file (or its lines) or folder listing."""

    kind: AttachmentKind
    path: str
    """As the person wrote it (relative to the working folder, or ~/… or absolute)."""
    body: str
    lines: tuple[int, int] | None = None
    """The first and last line attached (1-based, inclusive); None: the whole file."""

    @property
    def label(self) -> str:
        """`path`, or `path#L20-45`."""
        if self.lines is None:
            return self.path
        return f"{self.path}#L{self.lines[0]}-{self.lines[1]}"

    def block(self) -> str:
        lines = f' lines="{self.lines[0]}-{self.lines[1]}"' if self.lines is not None else ""
        path = html.escape(self.path, quote=True)
        return f'{_OPEN}kind="{self.kind}" path="{path}"{lines} chars="{len(self.body)}">\n{self.body}{_CLOSE}'


def compose(prompt: str, attachments: list[Attachment]) -> str:
    """The stored text of `prompt` with `attachments` (just `prompt` when there are none)."""
    if not attachments:
        return prompt
    return prompt + "".join("\n\n" + attachment.block() for attachment in attachments)


def _blocks(text: str, start: int) -> list[Attachment] | None:
    """The attachments from `start` to the end of `text`, or None when that is not all blocks."""
    found: list[Attachment] = []
    at = start
    while at < len(text):
        if not text.startswith("\n\n", at):
            return None
        header = _HEADER.match(text, at + 2)
        if header is None:
            return None
        kind, path, first, last, chars = header.groups()
        body_start = header.end()
        body_end = body_start + int(chars)
        if not text.startswith(_CLOSE, body_end):
            return None
        lines = (int(first), int(last)) if first is not None else None
        found.append(Attachment(kind, html.unescape(path), text[body_start:body_end], lines))  # type: ignore[arg-type]
        at = body_end + len(_CLOSE)
    return found


def split(text: str) -> tuple[str, list[Attachment]]:
    """(the typed prompt, its attachments) of a stored user text; (text, []) when it has none."""
    search = 0
    while True:
        at = text.find("\n\n" + _OPEN, search)
        if at < 0:
            return text, []
        found = _blocks(text, at)
        if found:
            return text[:at], found
        search = at + 1


def split_content(content: Any) -> tuple[str, list[Attachment], list[dict[str, Any]]]:
    """(typed text, attachments, image parts) of a user message's content (a string or parts)."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        return (*split(content), [])
    texts: list[str] = []
    attachments: list[Attachment] = []
    images: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            prompt, found = split(part["text"])
            texts.append(prompt)
            attachments.extend(found)
        elif part.get("type") == "image_url":
            images.append(part)
    return "\n".join(texts), attachments, images


def image_label(part: dict[str, Any]) -> str:
    """A short description of an image part: "image/png · 12 KB", or its URL's start."""
    spec = part.get("image_url")
    url = spec.get("url") if isinstance(spec, dict) else spec
    if not isinstance(url, str):
        return "image"
    if url.startswith("data:") and "," in url:
        head, data = url.split(",", 1)
        mime = head[5:].split(";", 1)[0] or "image"
        size = len(data) * 3 // 4 if ";base64" in head else len(data)
        return f"{mime} · {_size(size)}"
    return url if len(url) <= 60 else url[:57] + "…"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.0f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def card_line(attachment: Attachment) -> str:
    """The one line an attachment shows as, collapsed: "📎 greet.py#L20-45 · 26 lines"."""
    count = attachment.body.count("\n") + (0 if attachment.body.endswith("\n") or not attachment.body else 1)
    unit = "entry" if attachment.kind == "folder" else "line"
    plural = "entries" if attachment.kind == "folder" else "lines"
    return f"📎 {attachment.label} · {count} {unit if count == 1 else plural}"


def summary_text(content: Any) -> str:
    """A user message as a person reads it in a list: the typed text, then one line per
    attachment and image (the contents folded away)."""
    typed, attachments, images = split_content(content)
    lines = [typed.rstrip()] if typed.strip() else []
    lines.extend(card_line(attachment) for attachment in attachments)
    lines.extend(f"🖼 {image_label(part)}" for part in images)
    return "\n".join(lines)
