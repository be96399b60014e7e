"""Output formats under the JSON-action protocol (`hermes.agent.providers.json_actions`).

With a format (`ModelRequest.output_format`) the ``reply`` action's ``args`` are the
answer itself, constrained by the format's schema in the same grammar as the tools:

    {"action": "reply", "args": <a value of the client's schema>}     → TextChunk(json.dumps(args))
    {"action": "<tool>", "args": {...}}                               → a tool call, as without a format

so the answer's text is always JSON that matches the schema (``json_object``: any object),
also on a model that uses tools. The client's schema is used as given; its ``$defs`` /
``definitions`` move to the root of the action schema, where its ``$ref``s point.

A formatted reply is not streamed piece by piece: its text is the whole object, sent
once the model has written it.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from hermes.agent.output_format import JsonObjectFormat, JsonSchemaFormat, OutputFormat

REPLY = "reply"
_DEF_KEYS = ("$defs", "definitions")


def answer_schema(fmt: OutputFormat) -> dict[str, Any]:
    """The schema of the answer (without its definitions, see `root_definitions`)."""
    match fmt:
        case JsonObjectFormat():
            return {"type": "object"}
        case JsonSchemaFormat():
            return {key: value for key, value in fmt.schema.items() if key not in _DEF_KEYS}
        case _:
            assert_never(fmt)


def root_definitions(fmt: OutputFormat) -> dict[str, Any]:
    """The schema's `$defs`/`definitions`, for the root of the action schema."""
    if isinstance(fmt, JsonSchemaFormat):
        return {key: fmt.schema[key] for key in _DEF_KEYS if isinstance(fmt.schema.get(key), dict)}
    return {}


def reply_branch(fmt: OutputFormat) -> dict[str, Any]:
    """The action schema's `reply` branch when the answer has a format."""
    return {
        "type": "object",
        "properties": {"action": {"const": REPLY}, "args": answer_schema(fmt)},
        "required": ["action", "args"],
    }


def format_note(fmt: OutputFormat) -> str:
    """What the system prompt adds about the format (the grammar enforces it anyway)."""
    shape = "a JSON object"
    if isinstance(fmt, JsonSchemaFormat):
        shape = f"a JSON object matching this schema: {json.dumps(answer_schema(fmt), separators=(',', ':'))}"
    return f"When you reply, args is the answer itself, {shape}; it has no text field unless the schema has one."


def formatted_reply_text(raw: str) -> str | None:
    """The answer of a whole formatted reply action (its args as JSON); None if `raw` is not one."""
    try:
        obj = json.loads(raw.strip())
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("action") != REPLY or "args" not in obj:
        return None
    return json.dumps(obj["args"], ensure_ascii=False)
