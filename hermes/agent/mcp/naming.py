"""Tool names offered to the model: `mcp__<server>__<tool>`, in OpenAI's function-name charset.

OpenAI accepts `^[a-zA-Z0-9_-]{1,64}$`. Other characters become "_"; a name longer than 64
characters keeps its head and gets a short hash of the full name, so two long names that
share a head stay distinct. `unique_name` adds a counter when sanitising made two names equal.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp"
SEPARATOR = "__"
MAX_LENGTH = 64
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize(text: str) -> str:
    return _NOT_ALLOWED.sub("_", text) or "_"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, sanitised, at most 64 characters."""
    full = SEPARATOR.join((PREFIX, sanitize(server), sanitize(tool)))
    if len(full) <= MAX_LENGTH:
        return full
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{full[: MAX_LENGTH - 9]}_{digest}"


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    for n in range(2, 1000):
        suffix = f"_{n}"
        candidate = name[: MAX_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError(f"too many tools named like {name!r}")


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an `mcp__server__tool` name, for display; None for other tools."""
    parts = name.split(SEPARATOR, 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]
