"""Open WebUI's own form of tool activity in a chat completion stream.

Open WebUI (0.12.4) draws a tool card for every block of this form in an assistant
message's content (its middleware writes them for the tools it runs itself, and its
frontend's `Collapsible` renders them; the tool's result is read from the `result`
attribute by older frontends and from the block's body by newer ones, so both carry it):

    <details type="tool_calls" done="true" id="…" name="…" arguments="…" result="…">
    <summary>Tool Executed</summary>
    "…the result as a JSON string…"
    </details>

Attribute values are HTML-escaped JSON (`arguments`: the arguments as a JSON string,
`result`: the result text as a JSON string); a failed tool's card carries its error text
as the result and `status="failed"`. Each card stands in its own paragraph (blank lines
on both sides), so the text before and after the tool never runs together.

While a tool runs, Open WebUI shows a status line: a chunk with an `event` member
(`{"type": "status", "data": {"description": …, "done": false}}`) is handed by its
middleware to its event emitter, which the frontend draws as the message's status with a
spinner (`tool_status`); the chunk carries `choices: []`, so it is also a valid
chat.completion.chunk without text for any other reader. (A `done="false"` card cannot be
used: the stream's content is append-only, so it could never turn into the finished card.)

Resent cards (`strip_tool_cards`): Open WebUI sends the assistant text back as it was
streamed, cards included; the tool's call and result are in the session's store, so the
cards are removed from a resent assistant message before the model sees it (a 10,000
character result would otherwise come back as a card of twice that size on every turn).

Detection (`is_open_webui`): Open WebUI talks to a connection with a plain aiohttp
User-Agent, which other clients (and the test client) share, so the User-Agent alone
decides nothing. A request is Open WebUI's when it carries any `X-OpenWebUI-*` header
(Open WebUI sends `X-OpenWebUI-User-*` and `X-OpenWebUI-Chat-Id` with
`ENABLE_FORWARD_USER_INFO_HEADERS=true`) or `X-Hermes-Client: open-webui` (a header
the connection's settings can add). Every other client's stream is unchanged.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["CLIENT_HEADER", "is_open_webui", "strip_tool_cards", "tool_card", "tool_status"]

CLIENT_HEADER = "X-Hermes-Client"
_PREFIX = "x-openwebui-"


def is_open_webui(headers: Mapping[str, str]) -> bool:
    """See the module docstring."""
    if headers.get(CLIENT_HEADER, "").strip().lower() in ("open-webui", "openwebui"):
        return True
    return any(name.lower().startswith(_PREFIX) for name in headers)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def tool_card(*, call_id: str, name: str, arguments: Any, result: str, is_error: bool) -> str:
    """One finished tool's card, as its own paragraph (see the module docstring)."""
    args_json = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
    result_json = json.dumps(result, ensure_ascii=False)
    status = "failed" if is_error else "completed"
    return (
        f'\n\n<details type="tool_calls" done="true" status="{status}" id="{_attr(call_id)}" '
        f'name="{_attr(name)}" arguments="{_attr(json.dumps(args_json, ensure_ascii=False))}" '
        f'result="{_attr(result_json)}">\n<summary>Tool Executed</summary>\n{_attr(result_json)}\n</details>\n\n'
    )


def tool_status(description: str, *, done: bool) -> dict[str, Any]:
    """The `event` member of a chunk that sets Open WebUI's status line (see the module docstring)."""
    return {"type": "status", "data": {"description": description, "done": done, "hidden": False}}


_CARD = re.compile(r"\s*<details\s+type=\"tool_calls\"[^>]*>.*?</details>\s*", re.DOTALL | re.IGNORECASE)
_OPEN_CARD = re.compile(r"\s*<details\s+type=\"tool_calls\"[^>]*>.*\Z", re.DOTALL | re.IGNORECASE)


def _strip_text(text: str) -> str:
    if "<details" not in text and "<DETAILS" not in text:
        return text
    # A card between two paragraphs leaves one paragraph break; at either end, nothing.
    out = _CARD.sub("\n\n", text)
    out = _OPEN_CARD.sub("", out)  # a card the stream never closed (a stopped turn)
    return out.strip("\n") if out != text else text


def strip_tool_cards(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """`content` (a string or content parts) without Open WebUI tool cards (`<details
    type="tool_calls">` blocks, closed or left open at the end); other text is unchanged."""
    if isinstance(content, str):
        return _strip_text(content)
    return [
        {**part, "text": _strip_text(part["text"])}
        if part.get("type") == "text" and isinstance(part.get("text"), str)
        else part
        for part in content
    ]
