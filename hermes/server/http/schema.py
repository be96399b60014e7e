"""Request schemas declared once: the same declaration validates a body and documents it.

    CHAT = Body("ChatCompletionRequest", {
        "messages": Array(required=True, min_items=1, items=MESSAGE,
                          error=("invalid_messages", "Missing or invalid 'messages' field")),
        "model": String(),
        "metadata": Object(),
    })
    CHAT.validate(body)        # 400 with the field's code/message at the first bad field
    CHAT.openapi()             # {"type": "object", "required": [...], "properties": {...}}

A field checks what its JSON Schema says about the value's *shape* (type, length, enum,
item shape), in declaration order, and raises `RequestValidationError` with the code
and message the API reference fixes for it. What needs more than a shape — content
normalisation, chaining, id syntax — stays in the handler's parser, which runs after
`validate` and may rely on every declared shape holding.

No third-party schema library: the checks must reproduce the reference's exact error
codes and messages (a generic validator reports its own), and the document is OpenAPI
3.1 JSON Schema, which these few classes emit directly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.server.http.errors import RequestValidationError

JSON = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Field:
    """One property: its JSON Schema and its shape check."""

    required: bool = False
    """Absent (or null) → the field's error (required fields only)."""
    nullable: bool = False
    """Documents ``null`` as allowed (a null optional field is always treated as absent)."""
    error: tuple[str, str] | None = None
    """(code, message) for a value of the wrong type; `{name}` in the message is the field."""
    value_error: tuple[str, str] | None = None
    """(code, message) for a value of the right type outside the declared range (length,
    enum); `error` when None."""
    description: str | None = None

    def schema(self) -> JSON:
        raise NotImplementedError

    def fits(self, value: Any) -> bool:
        """Whether `value` (not None) has the declared type."""
        raise NotImplementedError

    def in_range(self, value: Any) -> bool:
        """Whether a value of the right type meets the declared bounds."""
        return True

    def default_error(self) -> tuple[str, str]:
        return "invalid_type", "'{name}' must be a string"

    def document(self, *, as_item: bool = False) -> JSON:
        """The field's schema; an optional property also allows null (`check` treats it as absent).

        Array items and alternatives (`as_item`) are never "absent": null is theirs only if `nullable`.
        """
        schema = self.schema()
        if self.nullable or not (self.required or as_item):
            schema = {"anyOf": [schema, {"type": "null"}]}
        if self.description:
            schema = {**schema, "description": self.description}
        return schema

    def check(self, value: Any, name: str) -> None:
        if value is None:
            if self.required:
                self.fail(name)
            return
        if not self.fits(value):
            self.fail(name)
        if not self.in_range(value):
            self.fail(name, self.value_error)

    def fail(self, name: str, error: tuple[str, str] | None = None) -> None:
        code, message = error or self.error or self.default_error()
        raise RequestValidationError(message.format(name=name), code=code, param=name)


@dataclass(frozen=True, kw_only=True)
class String(Field):
    min_length: int | None = None
    max_length: int | None = None
    enum: Sequence[str] | None = None
    pattern: str | None = None
    """A regular expression the value must match somewhere (JSON Schema `pattern` semantics)."""

    def schema(self) -> JSON:
        schema: JSON = {"type": "string"}
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.pattern is not None:
            schema["pattern"] = self.pattern
        if self.min_length is not None:
            schema["minLength"] = self.min_length
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        return schema

    def fits(self, value: Any) -> bool:
        return isinstance(value, str)

    def in_range(self, value: Any) -> bool:
        if self.enum is not None and value not in self.enum:
            return False
        if self.pattern is not None and re.search(self.pattern, value) is None:
            return False
        if self.min_length is not None and len(value) < self.min_length:
            return False
        return self.max_length is None or len(value) <= self.max_length


NO_NUL_PATTERN = "^[^\\x00]*$"
SINGLE_LINE_PATTERN = "^[^\\x00\\r\\n]*$"
_SPACE = "\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
"""What `str.strip()` removes, spelled out: `\\s` means different things in ECMA and Python regexes."""


def text_pattern(forbidden: str, *, not_blank: bool) -> str:
    """One anchored pattern: no character of the class `forbidden`, and (with `not_blank`) one
    that is not whitespace. One pattern, not an allOf of several: generators handle it directly."""
    if not not_blank:
        return f"^[^{forbidden}]*$"
    return f"^[^{forbidden}]*[^{forbidden}{_SPACE}][^{forbidden}]*$"


@dataclass(frozen=True, kw_only=True)
class Text(String):
    """A user-facing string field with one error code for every fault: not a string, too
    long (the message names the limit), or a control character (NUL always; CR/LF unless
    `multiline`)."""

    code: str
    multiline: bool = False

    def check(self, value: Any, name: str) -> None:
        if value is None:
            if self.required:
                self.fail(name, (self.code, "'{name}' is required"))
            return
        if not isinstance(value, str):
            self.fail(name, (self.code, "'{name}' must be a string"))
        if self.max_length is not None and len(value) > self.max_length:
            self.fail(name, (self.code, "'{name}' must be at most " + f"{self.max_length} characters"))
        if "\x00" in value or (not self.multiline and ("\r" in value or "\n" in value)):
            self.fail(name, (self.code, "'{name}' contains control characters"))
        if self.min_length and not value.strip():
            self.fail(name, (self.code, "'{name}' must not be blank"))

    def schema(self) -> JSON:
        """Documents exactly what `check` enforces: length, the control characters, non-blank."""
        schema: JSON = {"type": "string"}
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        forbidden = "\\x00" if self.multiline else "\\x00\\r\\n"
        schema["pattern"] = text_pattern(forbidden, not_blank=bool(self.min_length))
        return schema

    def text(self, body: Mapping[str, Any], name: str) -> str | None:
        """The checked value of `name` in `body` (None when absent)."""
        value = body.get(name)
        self.check(value, name)
        return value if isinstance(value, str) else None


@dataclass(frozen=True, kw_only=True)
class Boolean(Field):
    """A boolean; bool-ish strings and numbers are accepted and documented (`coerce_bool`),
    unless `strict`: then only JSON `true` and `false`."""

    strict: bool = False

    def schema(self) -> JSON:
        if self.strict:
            return {"type": "boolean"}
        return {"anyOf": [{"type": "boolean"}, {"type": "string"}, {"type": "number"}]}

    def fits(self, value: Any) -> bool:
        if self.strict:
            return isinstance(value, bool)
        return isinstance(value, (bool, str, int, float))

    def value(self, body: Mapping[str, Any], name: str, default: bool) -> bool:
        """The checked value of the strict field `name` in `body` (`default` when absent)."""
        if not self.strict:
            raise TypeError(f"{name}: value() reads strict booleans only (coerce_bool reads the others)")
        raw = body.get(name)
        self.check(raw, name)
        return default if raw is None else bool(raw)

    def default_error(self) -> tuple[str, str]:
        return "invalid_type", "'{name}' must be a boolean"


@dataclass(frozen=True, kw_only=True)
class Number(Field):
    def schema(self) -> JSON:
        return {"type": "number"}

    def fits(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def default_error(self) -> tuple[str, str]:
        return "invalid_type", "'{name}' must be a number"


MAX_INTEGER = 2**63 - 1
"""The largest integer a body field takes (SQLite's INTEGER)."""


@dataclass(frozen=True, kw_only=True)
class Integer(Field):
    minimum: int | None = None
    maximum: int = MAX_INTEGER
    strict: bool = False
    """Only a JSON integer literal (`1`), never a number written as a float (`1.0`, `1e9`)."""

    def schema(self) -> JSON:
        schema: JSON = {"type": "integer", "maximum": self.maximum}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        return schema

    def fits(self, value: Any) -> bool:
        """An int, or (unless `strict`) a float with no fractional part (JSON Schema counts 2.0 as an integer)."""
        if isinstance(value, float):
            return not self.strict and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)

    def value(self, body: Mapping[str, Any], name: str) -> int | None:
        """The checked value of `name` in `body` as an int (None when absent)."""
        raw = body.get(name)
        self.check(raw, name)
        return None if raw is None else int(raw)

    def in_range(self, value: Any) -> bool:
        return (self.minimum is None or int(value) >= self.minimum) and int(value) <= min(self.maximum, MAX_INTEGER)


@dataclass(frozen=True, kw_only=True)
class Object(Field):
    """A JSON object; `properties` documents (and checks) its known fields."""

    properties: Mapping[str, Field] = field(default_factory=dict)

    def default_error(self) -> tuple[str, str]:
        return "invalid_type", "'{name}' must be an object"

    def schema(self) -> JSON:
        schema: JSON = {"type": "object"}
        if self.properties:
            schema["properties"] = {name: prop.document() for name, prop in self.properties.items()}
            required = [name for name, prop in self.properties.items() if prop.required]
            if required:
                schema["required"] = required
        return schema

    def fits(self, value: Any) -> bool:
        return isinstance(value, dict)


@dataclass(frozen=True, kw_only=True)
class Array(Field):
    items: Field | None = None
    """Documents the items; their shape is the handler parser's to check (per-item params)."""
    min_items: int | None = None
    contains: JSON | None = None
    """Documents an item that must be present (the handler's parser checks it)."""

    def default_error(self) -> tuple[str, str]:
        return "invalid_type", "'{name}' must be an array"

    def schema(self) -> JSON:
        schema: JSON = {"type": "array"}
        if self.min_items is not None:
            schema["minItems"] = self.min_items
        if self.contains is not None:
            schema["contains"] = self.contains
        if self.items is not None:
            schema["items"] = self.items.document(as_item=True)
        return schema

    def fits(self, value: Any) -> bool:
        return isinstance(value, list)

    def in_range(self, value: Any) -> bool:
        return self.min_items is None or len(value) >= self.min_items


@dataclass(frozen=True, kw_only=True)
class Anything(Field):
    """Documented only; the handler's parser owns every check (e.g. `input`)."""

    documented: JSON = field(default_factory=dict)

    def schema(self) -> JSON:
        return dict(self.documented)

    def fits(self, value: Any) -> bool:
        return True

    def check(self, value: Any, name: str) -> None:
        return None


def not_both(first: str, second: str) -> JSON:
    """Documents "`first` and `second` (non-null) exclude each other"."""
    present = {"not": {"type": "null"}}
    return {"not": {"required": [first, second], "properties": {first: present, second: present}}}


@dataclass(frozen=True)
class Body:
    """A request body: a named object schema (``#/components/schemas/<name>``)."""

    name: str
    properties: Mapping[str, Field]
    closed: bool = False
    """Unknown fields are documented as not allowed (the handler reports them)."""
    rules: tuple[JSON, ...] = ()
    """Cross-field rules the handler checks, documented as `allOf` entries (see `not_both`)."""

    def validate(self, body: Mapping[str, Any]) -> None:
        """Check every declared field's shape, in declaration order."""
        for name, prop in self.properties.items():
            prop.check(body.get(name), name)

    def openapi(self) -> JSON:
        schema: JSON = {
            "type": "object",
            "properties": {name: prop.document() for name, prop in self.properties.items()},
        }
        required = [name for name, prop in self.properties.items() if prop.required]
        if required:
            schema["required"] = required
        if self.closed:
            schema["additionalProperties"] = False
        if self.rules:
            schema["allOf"] = list(self.rules)
        return schema

    def text(self, body: Mapping[str, Any], name: str) -> str | None:
        """The checked value of the `Text` field `name` (None when absent)."""
        prop = self.properties[name]
        if not isinstance(prop, Text):
            raise TypeError(f"{self.name}.{name} is not a Text field")
        return prop.text(body, name)

    @property
    def ref(self) -> JSON:
        return {"$ref": f"#/components/schemas/{self.name}"}


# ---- documented-only pieces of request schemas ----------------------------------------------

IDEMPOTENCY_KEY_SCHEMA: JSON = {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"}
"""`Idempotency-Key`: 1-255 visible ASCII characters (`hermes.server.http.request.validate_key`)."""

MAX_TEXT_LENGTH = 65_536
TEXT_PART_DOC: JSON = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {
        "type": {"enum": ["text", "input_text", "output_text"]},
        "text": {"type": "string"},
    },
}
TURN_TEXT_DOC: JSON = {"type": "string", "pattern": text_pattern("\\x00", not_blank=True)}
"""Text of a turn: not blank, no NUL (`check_user_content`)."""
VISIBLE_PART_DOC: JSON = {
    "anyOf": [
        TURN_TEXT_DOC,
        {"type": "object", "required": ["type", "text"],
         "properties": {"type": {"enum": ["text", "input_text", "output_text"]}, "text": TURN_TEXT_DOC}},
    ]
}
"""A part that shows something (`hermes.server.http.request.has_visible_payload`)."""
VISIBLE_CONTENT_DOC: JSON = {
    "anyOf": [TURN_TEXT_DOC, {"type": "array", "contains": VISIBLE_PART_DOC}]
}
"""Content that shows something: a non-blank string, or parts of which one is visible."""
CONTENT_PARTS_DOC: JSON = {
    "type": "array",
    "items": {"anyOf": [{"type": "string"}, TEXT_PART_DOC]},
}
"""Message content as parts: strings and text parts (image parts are accepted too, undocumented
here because their URL rules are not a JSON Schema; `hermes.server.http.request.normalize_content`)."""
_NO_NUL_TEXT_DOC: JSON = {"type": "string", "pattern": NO_NUL_PATTERN}
TURN_PARTS_DOC: JSON = {
    "type": "array",
    "items": {
        "anyOf": [
            _NO_NUL_TEXT_DOC,
            {**TEXT_PART_DOC, "properties": {**TEXT_PART_DOC["properties"], "text": _NO_NUL_TEXT_DOC}},
        ]
    },
    "contains": VISIBLE_PART_DOC,
}
"""A turn's content as parts: no part carries NUL, and one of them shows something (`check_user_content`)."""
