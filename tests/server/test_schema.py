"""The request-schema DSL: one declaration validates a body and documents it."""

from __future__ import annotations

import pytest
from _api_harness import Server

from hermes.server.http.errors import RequestValidationError
from hermes.server.http.schema import Array, Body, Integer, String, Text
from hermes.server.http.state import OPENAPI_DOCUMENT
from hermes.server.openai.chat import CHAT_REQUEST
from hermes.server.openai.response_objects import RESPONSE_REQUEST
from hermes.server.rest.runs import RUN_APPROVAL, RUN_CREATE
from hermes.server.rest.session_files import REDO_BODY, UNDO_BODY
from hermes.server.rest.sessions import (
    SESSION_CHAT,
    SESSION_CREATE,
    SESSION_FORK,
    SESSION_PATCH,
)

DECLARED = [CHAT_REQUEST, RESPONSE_REQUEST, RUN_CREATE, RUN_APPROVAL, SESSION_CREATE, SESSION_PATCH, SESSION_FORK,
            SESSION_CHAT, UNDO_BODY, REDO_BODY]

SAMPLE = Body(
    "Sample",
    {
        "items": Array(required=True, min_items=1, error=("invalid_items", "Missing or invalid '{name}'")),
        "mode": String(enum=("a", "b"), value_error=("invalid_mode", "'{name}' must be a or b")),
        "title": Text(code="invalid_title", max_length=5),
        "at": Integer(minimum=1, error=("invalid_at", "'{name}' must be a positive integer")),
    },
)


def _error(body: dict[str, object]) -> tuple[str | None, str | None, str]:
    with pytest.raises(RequestValidationError) as info:
        SAMPLE.validate(body)
    return info.value.code, info.value.param, info.value.message


def test_type_and_range_errors_carry_the_declared_codes() -> None:
    assert _error({}) == ("invalid_items", "items", "Missing or invalid 'items'")
    assert _error({"items": []})[0] == "invalid_items"
    assert _error({"items": [1], "mode": 3}) == ("invalid_type", "mode", "'mode' must be a string")
    assert _error({"items": [1], "mode": "c"}) == ("invalid_mode", "mode", "'mode' must be a or b")
    assert _error({"items": [1], "title": "toolong"}) == (
        "invalid_title", "title", "'title' must be at most 5 characters"
    )
    assert _error({"items": [1], "title": "a\nb"})[2] == "'title' contains control characters"
    assert _error({"items": [1], "at": True})[0] == "invalid_at"
    assert _error({"items": [1], "at": 0})[0] == "invalid_at"
    assert _error({"items": [1], "at": 1.5})[0] == "invalid_at"
    assert _error({"items": [1], "at": 2**63})[0] == "invalid_at"
    SAMPLE.validate({"items": [1], "mode": "a", "title": "ok", "at": 3, "unknown": object()})


def test_the_first_declared_field_fails_first() -> None:
    assert _error({"items": "x", "mode": 3})[1] == "items"


def test_the_declaration_is_the_document() -> None:
    assert SAMPLE.openapi() == {
        "type": "object",
        "properties": {
            "items": {"type": "array", "minItems": 1},
            # optional fields: null is treated as absent, so the document allows it
            "mode": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
            "title": {"anyOf": [{"type": "string", "maxLength": 5, "pattern": "^[^\\x00\\r\\n]*$"}, {"type": "null"}]},
            "at": {"anyOf": [{"type": "integer", "maximum": 2**63 - 1, "minimum": 1}, {"type": "null"}]},
        },
        "required": ["items"],
    }


async def test_openapi_request_bodies_are_the_declared_schemas(server: Server) -> None:
    document = server.app[OPENAPI_DOCUMENT]
    schemas = document["components"]["schemas"]
    for body in DECLARED:
        assert schemas[body.name] == body.openapi()
    refs = set()
    for item in document["paths"].values():
        for operation in item.values():
            request_body = operation.get("requestBody")
            if request_body is not None:
                refs.add(request_body["content"]["application/json"]["schema"]["$ref"])
    assert refs == {body.ref["$ref"] for body in DECLARED}
