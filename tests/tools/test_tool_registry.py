"""default_registry(): the core tool set and schemas a model can use."""

from __future__ import annotations

import json

from hermes.agent.tools import default_registry
from hermes.agent.tools.base import Tool


def test_core_tools_are_registered() -> None:
    registry = default_registry()
    assert registry.names() == ["terminal", "read_file", "write_file", "patch", "list_files", "search_files", "todo"]
    read_only = {tool.name for tool in registry if tool.read_only}
    assert read_only == {"read_file", "list_files", "search_files", "todo"}


def test_schemas_are_valid_function_definitions() -> None:
    for schema in default_registry().schemas():
        json.dumps(schema)
        assert schema["type"] == "function"
        function = schema["function"]
        assert function["description"].strip()
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        assert_simple_object(function["name"], parameters)


def assert_simple_object(tool: str, schema: dict) -> None:
    """Every property is described and simple: a scalar, or (todo) a list of such objects."""
    for name in schema["required"]:
        assert name in schema["properties"], (tool, name)
    for name, prop in schema["properties"].items():
        assert prop.get("description"), (tool, name)
        if prop.get("type") == "array":
            assert prop["items"]["type"] == "object", (tool, name)
            assert_simple_object(f"{tool}.{name}[]", prop["items"])
        else:
            assert prop.get("type") in {"string", "integer", "number", "boolean"}, (tool, name)


def test_each_call_returns_a_fresh_registry() -> None:
    first, second = default_registry(), default_registry()

    async def noop(args: dict, ctx: object) -> str:
        return ""

    first.register(Tool(name="extra", description="x", parameters={"type": "object"}, handler=noop))  # type: ignore[arg-type]
    assert "extra" in first.names()
    assert "extra" not in second.names()
