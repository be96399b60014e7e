"""Keeping a stored transcript valid for strict OpenAI-compatible endpoints.

Strict endpoints reject a transcript in which an assistant `tool_calls` entry has no
`tool` message answering it before the next non-tool message, or a `tool` message answers
no call. A crash can leave the first; `valid_transcript` repairs both in a copy.
"""

from __future__ import annotations

from typing import Any

from hermes.messages import ChatMessage

__all__ = ["SERVER_STOPPED_TOOL_RESULT", "call_ids_and_names", "valid_transcript"]

SERVER_STOPPED_TOOL_RESULT = "[interrupted: the server stopped before this tool finished]"
"""The result recorded for a tool call whose process died before the tool finished."""


def call_ids_and_names(tool_calls: Any) -> list[tuple[str, str]]:
    """(id, function name) of each well-formed entry of an assistant `tool_calls` list."""
    out: list[tuple[str, str]] = []
    for call in tool_calls or ():
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            function = call.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            out.append((call["id"], name if isinstance(name, str) else ""))
    return out


def _placeholder(call_id: str, name: str) -> ChatMessage:
    message: ChatMessage = {"role": "tool", "tool_call_id": call_id, "content": SERVER_STOPPED_TOOL_RESULT}
    if name:
        message["name"] = name
    return message


def valid_transcript(messages: list[ChatMessage], placeholder: str = SERVER_STOPPED_TOOL_RESULT) -> list[ChatMessage]:
    """A copy of `messages` in which every tool call is answered and every tool message answers one.

    An unanswered call gets a placeholder result right after the results its assistant
    message did get; a tool message that answers no open call is dropped. A transcript
    that is already valid comes back unchanged (equal, not the same list).
    """
    out: list[ChatMessage] = []
    open_calls: list[tuple[str, str]] = []

    def close_open() -> None:
        for call_id, name in open_calls:
            message = _placeholder(call_id, name)
            message["content"] = placeholder
            out.append(message)
        open_calls.clear()

    for message in messages:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            match = next((pair for pair in open_calls if pair[0] == call_id), None)
            if match is None:
                continue  # answers nothing: strict endpoints reject it
            open_calls.remove(match)
            out.append(message)
            continue
        close_open()
        out.append(message)
        if message.get("role") == "assistant":
            open_calls.extend(call_ids_and_names(message.get("tool_calls")))
    close_open()
    return out
