"""A session as a Markdown document (for /export)."""

from __future__ import annotations

import datetime as dt
import json

from hermes.store.records import MessageRecord, SessionRecord


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "[image]")) for p in content if isinstance(p, dict))
    return str(content)


def session_markdown(session: SessionRecord, messages: list[MessageRecord]) -> str:
    started = dt.datetime.fromtimestamp(session.started_at).isoformat(timespec="seconds")
    out = [
        f"# {session.title or 'Untitled session'}",
        "",
        f"- id: `{session.id}`",
        f"- model: {session.model or 'unknown'}",
        f"- started: {started}",
        f"- tokens: {session.input_tokens} in / {session.output_tokens} out",
        "",
    ]
    for message in messages:
        if message.role == "user":
            out += ["## You", "", _text(message.content), ""]
        elif message.role == "assistant":
            text = _text(message.content)
            if text.strip():
                out += ["## Hermes", "", text, ""]
            for call in message.tool_calls or []:
                function = call.get("function") or {}
                arguments = function.get("arguments") or "{}"
                try:
                    arguments = json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
                except json.JSONDecodeError:
                    pass
                out += [f"**tool call** `{function.get('name', 'tool')}`", "", "```json", arguments, "```", ""]
        elif message.role == "tool":
            out += [f"**tool result** `{message.tool_name or ''}`", "", "```", _text(message.content), "```", ""]
    return "\n".join(out).rstrip() + "\n"
