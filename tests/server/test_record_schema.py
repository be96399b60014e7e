"""The Session and Message schemas are read from the record types: real records and real
answers have exactly the documented keys, with values of the documented JSON types."""

from __future__ import annotations

from typing import Any

import pytest
from _api_harness import Server

from hermes.server.http.record_schema import json_schema, record_schema
from hermes.server.http.state import STORAGE
from hermes.server.rest.session_shapes import MESSAGE, SESSION, message_json, session_json
from hermes.store.records import MessageRecord, NewMessage, SessionRecord

JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def _json_type(value: Any) -> str:
    return "null" if value is None else JSON_TYPES[type(value)]


def _allowed(schema: dict[str, Any]) -> set[str]:
    if "const" in schema:
        return {_json_type(schema["const"])}
    if "anyOf" in schema:
        return set().union(*(_allowed(option) for option in schema["anyOf"]))
    kinds = schema["type"]
    allowed = {kinds} if isinstance(kinds, str) else set(kinds)
    return allowed | ({"integer"} if "number" in allowed else set())


def assert_fits(data: dict[str, Any], schema: dict[str, Any]) -> None:
    """Same keys both ways, every key required, every value of a documented type."""
    assert set(data) == set(schema["properties"]) == set(schema["required"])
    wrong = {key: value for key, value in data.items() if _json_type(value) not in _allowed(schema["properties"][key])}
    assert wrong == {}
    assert all(data[key] == prop["const"] for key, prop in schema["properties"].items() if "const" in prop)


async def _records(server: Server) -> tuple[SessionRecord, list[MessageRecord]]:
    """A session with a parent, a prompt, and messages of every shape (text, parts, tool calls, tool result)."""
    store = server.app[STORAGE].sessions
    parent = await store.create_session(source="cli", title="Parent")
    record = await store.create_session(
        source="api_server", model="m", title="Child", system_prompt="be brief", parent_session_id=parent.id
    )
    call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    for message in (
        NewMessage(role="user", content=[{"type": "text", "text": "hi"}]),
        NewMessage(role="assistant", content=None, tool_calls=[call], reasoning="look first", token_count=7),
        NewMessage(role="tool", content="file text", tool_call_id="call_1", tool_name="read_file"),
        NewMessage(role="assistant", content="done", finish_reason="stop"),
    ):
        await store.append_message(record.id, message)
    await store.end_session(record.id, "completed")
    return await store.get_session(record.id), await store.get_messages(record.id)


async def test_record_to_json_has_exactly_the_generated_keys(server: Server) -> None:
    session, messages = await _records(server)
    assert_fits(session.to_json(), record_schema(SessionRecord, object_name="session"))
    assert len(messages) == 4
    for message in messages:
        assert_fits(message.to_json(), record_schema(MessageRecord, object_name="message"))


async def test_the_api_shapes_are_the_documented_components(server: Server) -> None:
    session, messages = await _records(server)
    assert_fits(session_json(session), SESSION.schema)
    for message in messages:
        assert_fits(message_json(message), MESSAGE.schema)
    served = await (await server.client.get(f"/api/sessions/{session.id}")).json()
    assert_fits(served["session"], SESSION.schema)
    page = await (await server.client.get(f"/api/sessions/{session.id}/messages")).json()
    for item in page["data"]:
        assert_fits(item, MESSAGE.schema)


async def test_the_document_serves_the_generated_components(server: Server) -> None:
    doc = await (await server.client.get("/openapi.json")).json()
    assert doc["components"]["schemas"]["Session"] == SESSION.schema
    assert doc["components"]["schemas"]["Message"] == MESSAGE.schema


def test_python_types_map_to_json_schema() -> None:
    assert json_schema(str | None) == {"type": ["string", "null"]}
    assert json_schema(int) == {"type": "integer"}
    assert json_schema(list[dict[str, Any]] | None) == {"type": ["array", "null"], "items": {"type": "object"}}
    assert json_schema(str | list[dict[str, Any]] | None) == {
        "type": ["string", "array", "null"],
        "items": {"type": "object"},
    }
    assert json_schema(list[str] | list[int]) == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"type": "integer"}}]
    }
    assert json_schema(Any) == {}
    with pytest.raises(TypeError):
        json_schema(set[str])


def test_an_unknown_field_left_out_is_refused() -> None:
    with pytest.raises(ValueError, match="no field"):
        record_schema(SessionRecord, without=("system_promt",))
