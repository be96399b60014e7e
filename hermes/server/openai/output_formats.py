"""The client's output format: chat ``response_format`` and Responses ``text.format``.

    fmt = chat_output_format(body)          # OutputFormat | None; 400 on a malformed shape
    fmt = responses_output_format(body)     # the same from ``text.format``
    {"text": {"format": text_format_body(fmt)}}   # echoed in every response object

Shapes (as OpenAI's API takes them):

    chat:      {"type": "text" | "json_object"}
               {"type": "json_schema", "json_schema": {"name", "schema", "strict"?, "description"?}}
    responses: {"format": {"type": "text" | "json_object"}}
               {"format": {"type": "json_schema", "name", "schema", "strict"?, "description"?}}

Invariants:
- A malformed shape is a 400 ``invalid_request_error`` whose ``param`` names the field
  (``response_format.json_schema.name``, ``text.format.schema``…); nothing is dropped
  silently.
- ``text`` (or no field, or null) is no format: the answer is free text.
- The schema fields (``name``, ``schema``, ``strict``, ``description``) are checked
  wherever they are present, whatever the type (as `RESPONSE_FORMAT_DOC` and `TEXT_DOC`
  document them); ``name`` and ``schema`` are required for ``json_schema``.
"""

from __future__ import annotations

import re
from typing import Any

from hermes.agent.output_format import JsonObjectFormat, JsonSchemaFormat, OutputFormat
from hermes.server.http.errors import RequestValidationError

FORMAT_TYPES = ("text", "json_object", "json_schema")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


_SCHEMA_FIELDS: dict[str, Any] = {
    "name": _or_null({"type": "string", "pattern": f"^{_NAME.pattern}$"}),
    "schema": _or_null({"type": "object"}),
    "strict": {"type": ["boolean", "null"]},
    "description": {"type": ["string", "null"]},
}
"""A null field is absent (json_schema then needs `name` and `schema`: a 400 without them)."""
RESPONSE_FORMAT_DOC: dict[str, Any] = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"enum": list(FORMAT_TYPES)},
        "json_schema": _or_null({"type": "object", "required": ["name", "schema"], "properties": _SCHEMA_FIELDS}),
    },
}
"""Chat ``response_format``, as `chat_output_format` checks it."""
TEXT_DOC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "format": _or_null(
            {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"enum": list(FORMAT_TYPES)}, **_SCHEMA_FIELDS},
            }
        )
    },
}
"""Responses ``text``, as `responses_output_format` checks it."""


def _invalid(message: str, param: str) -> RequestValidationError:
    return RequestValidationError(message, code="invalid_response_format", param=param)


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(f"'{param}' must be an object", param)
    return value


def _check_fields(spec: dict[str, Any], param: str, *, required: bool) -> None:
    """The schema fields of `spec` that are present (`name` and `schema` also when `required`)."""
    name = spec.get("name")
    if (required or name is not None) and (not isinstance(name, str) or not _NAME.fullmatch(name)):
        raise _invalid(f"'{param}.name' must be 1 to 64 letters, digits, underscores or dashes", f"{param}.name")
    schema = spec.get("schema")
    if (required or schema is not None) and not isinstance(schema, dict):
        raise _invalid(f"'{param}.schema' must be a JSON Schema object", f"{param}.schema")
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise _invalid(f"'{param}.strict' must be a boolean", f"{param}.strict")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise _invalid(f"'{param}.description' must be a string", f"{param}.description")


def _schema_format(spec: dict[str, Any], param: str) -> JsonSchemaFormat:
    """A json_schema format from the fields of `spec` (`param` is where they are)."""
    _check_fields(spec, param, required=True)
    return JsonSchemaFormat(
        name=str(spec["name"]), schema=dict(spec["schema"]), strict=spec.get("strict"),
        description=spec.get("description"),
    )


def _format_type(spec: dict[str, Any], param: str) -> str:
    kind = spec.get("type")
    if kind not in FORMAT_TYPES:
        raise _invalid(f"'{param}.type' must be one of {', '.join(FORMAT_TYPES)}", f"{param}.type")
    return str(kind)


def chat_output_format(body: dict[str, Any]) -> OutputFormat | None:
    """The chat request's ``response_format`` (None: free text)."""
    value = body.get("response_format")
    if value is None:
        return None
    spec = _object(value, "response_format")
    kind = _format_type(spec, "response_format")
    inner = spec.get("json_schema")
    if kind == "json_schema":
        return _schema_format(_object(inner, "response_format.json_schema"), "response_format.json_schema")
    if inner is not None:  # checked as documented, though only json_schema uses it
        _check_fields(_object(inner, "response_format.json_schema"), "response_format.json_schema", required=True)
    return JsonObjectFormat() if kind == "json_object" else None


def responses_output_format(body: dict[str, Any]) -> OutputFormat | None:
    """The Responses request's ``text.format`` (None: free text)."""
    text = body.get("text")
    if text is None:
        return None
    value = _object(text, "text").get("format")
    if value is None:
        return None
    spec = _object(value, "text.format")
    kind = _format_type(spec, "text.format")
    if kind == "json_schema":
        return _schema_format(spec, "text.format")
    _check_fields(spec, "text.format", required=False)  # as documented, though only json_schema uses them
    return JsonObjectFormat() if kind == "json_object" else None
