"""The output format a client asks the answer to take (OpenAI structured outputs).

    OutputFormat = JsonObjectFormat | JsonSchemaFormat      # None: free text

The server parses the client's chat ``response_format`` or Responses ``text.format``
into one of these (`hermes.server.openai.output_formats`); a `TurnRequest` carries it
and every model call of the turn sends it (`ModelRequest.output_format`): the format
constrains the text that answers, and hermes cannot tell in advance which call writes
it. Providers map it to their wire form: `response_format_body` for the Chat
Completions ``response_format`` (OpenAI-compatible endpoints, llama.cpp's server, which
turns a schema into a grammar itself).

Invariants:
- The schema is the client's, unchanged (hermes never rewrites or validates it beyond
  its shape: an object).
- ``{"type": "text"}`` is no format: it is None here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, assert_never


@dataclass(frozen=True, slots=True)
class JsonObjectFormat:
    """Any valid JSON object (``{"type": "json_object"}``)."""

    type: Literal["json_object"] = "json_object"


@dataclass(frozen=True, slots=True)
class JsonSchemaFormat:
    """JSON matching `schema` (``{"type": "json_schema", ...}``)."""

    name: str
    schema: dict[str, Any]
    strict: bool | None = None
    description: str | None = None
    type: Literal["json_schema"] = "json_schema"


OutputFormat: TypeAlias = JsonObjectFormat | JsonSchemaFormat


def response_format_body(fmt: OutputFormat) -> dict[str, Any]:
    """The Chat Completions ``response_format`` of a format."""
    match fmt:
        case JsonObjectFormat():
            return {"type": "json_object"}
        case JsonSchemaFormat():
            spec: dict[str, Any] = {"name": fmt.name, "schema": fmt.schema}
            if fmt.strict is not None:
                spec["strict"] = fmt.strict
            if fmt.description is not None:
                spec["description"] = fmt.description
            return {"type": "json_schema", "json_schema": spec}
        case _:
            assert_never(fmt)


def text_format_body(fmt: OutputFormat | None) -> dict[str, Any]:
    """The Responses ``text.format`` of a format (``{"type": "text"}`` for None)."""
    match fmt:
        case None:
            return {"type": "text"}
        case JsonObjectFormat():
            return {"type": "json_object"}
        case JsonSchemaFormat():
            body: dict[str, Any] = {"type": "json_schema", "name": fmt.name, "schema": fmt.schema}
            body["strict"] = fmt.strict
            if fmt.description is not None:
                body["description"] = fmt.description
            return body
        case _:
            assert_never(fmt)
