"""A stored session as a Markdown document: what `hermes sessions export -f markdown` and the TUI's `/export` write.

It sits above `hermes.store` (it reads its records) and below `hermes.cli` and `hermes.tui`,
which both use it. Invariant: message text and tool output are copied verbatim, and every
code fence is longer than any backtick run inside it, so content holding ``` cannot close
its fence early and the document reads back with the same text.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from hermes.attachment_blocks import image_label, split_content

if TYPE_CHECKING:
    from hermes.store.records import MessageRecord, SessionRecord

__all__ = ["call_summary", "content_text", "fence", "local_time", "one_line", "session_markdown", "user_markdown"]


def local_time(timestamp: float | None) -> str:
    """Local time as YYYY-MM-DD HH:MM ("" for None)."""
    if timestamp is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def content_text(content: Any) -> str:
    """Readable text of a message content: a string, or the text of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, dict):
            pieces.append(f"[{part.get('type', 'part')}]")
    return "\n".join(pieces)


def call_summary(call: dict[str, Any]) -> tuple[str, str]:
    """(name, compact arguments) of an OpenAI tool call."""
    function = call.get("function") or {}
    name = str(function.get("name") or call.get("name") or "?")
    raw: Any = function.get("arguments") or ""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return name, one_line(str(raw))
    return name, json.dumps(raw, ensure_ascii=False)


def fence(text: str, info: str = "") -> list[str]:
    """A Markdown code fence longer than any backtick run inside `text`."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    marks = "`" * max(3, longest + 1)
    return [marks + info, text, marks]


def user_markdown(content: Any) -> list[str]:
    """A user message's lines: the typed text, each attachment in full under its label, and
    each image inline (its data URL, so the export holds the picture itself)."""
    typed, attachments, images = split_content(content)
    lines = ["", typed.rstrip()] if typed.strip() else []
    for attachment in attachments:
        lines.extend(["", f"📎 `{attachment.label}`", ""])
        lines.extend(fence(attachment.body.rstrip("\n")))
    for number, part in enumerate(images, start=1):
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, dict) else spec
        lines.extend(["", f"![image {number} ({image_label(part)})]({url})"])
    return lines


def session_markdown(record: SessionRecord, messages: list[MessageRecord]) -> str:
    """The session's header (id, source, model, times, lineage, count) and every message."""
    lines = [f"# {record.title or 'Session ' + record.id}", ""]
    lines.append(f"- id: `{record.id}`")
    lines.append(f"- source: {record.source}")
    if record.model:
        lines.append(f"- model: {record.model}")
    lines.append(f"- started: {local_time(record.started_at)}")
    lines.append(f"- updated: {local_time(record.updated_at)}")
    if record.parent_session_id and record.parent_call_id:
        lines.append(f"- subagent of: `{record.parent_session_id}`")
    elif record.parent_session_id:
        lines.append(f"- forked from: `{record.parent_session_id}`")
    lines.append(f"- messages: {record.message_count}")
    for message in messages:
        text = content_text(message.content).rstrip()
        lines.append("")
        if message.role == "tool":
            lines.append(f"## Tool result ({message.tool_name or message.tool_call_id or '?'})")
            lines.append("")
            lines.extend(fence(text))
            continue
        lines.append(f"## {message.role.capitalize()}")
        if message.role == "user":
            lines.extend(user_markdown(message.content))
        elif text:
            lines.extend(["", text])
        for call in message.tool_calls or []:
            name, arguments = call_summary(call)
            lines.extend(["", f"Tool call `{name}`:", ""])
            lines.extend(fence(arguments, "json"))
    return "\n".join(lines) + "\n"
