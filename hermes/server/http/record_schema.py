"""JSON Schemas of record dataclasses, read from their type hints.

    record_schema(SessionRecord, object_name="session")   # the shape of SessionRecord.to_json()

The schema of a record is the object its ``asdict``-based ``to_json`` produces: one
property per dataclass field (all required: ``to_json`` always writes every field), typed
from the field's annotation, plus the ``object`` tag when ``to_json`` adds one. An API
shape derived from a record (a field dropped, a server-side field added) says so with
`without` and `extra`, so the schema and the record cannot drift apart.

Types map as JSON does: str → string, int → integer, float → number, bool → boolean,
``list[T]`` → array of T, ``dict[...]`` → object, ``Any`` → anything, ``T | None`` →
``["T", "null"]``.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

from hermes.server.http.schema import JSON

_SCALARS: dict[object, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def json_schema(annotation: object) -> JSON:
    """The JSON Schema of values of the Python type `annotation`."""
    if annotation is Any:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _union([json_schema(member) for member in get_args(annotation)])
    if origin is list:
        (item,) = get_args(annotation)
        return {"type": "array", "items": json_schema(item)}
    if annotation is dict or origin is dict:
        return {"type": "object"}
    raise TypeError(f"no JSON Schema for {annotation!r}")


def _union(members: list[JSON]) -> JSON:
    """``{"type": [...]}`` when the members' other keywords do not collide, else ``anyOf``."""
    merged: JSON = {}
    kinds: list[str] = []
    for member in members:
        kind = member.get("type")
        rest = {key: value for key, value in member.items() if key != "type"}
        if not isinstance(kind, str) or any(key in merged for key in rest):
            return {"anyOf": members}
        kinds.append(kind)
        merged.update(rest)
    return {"type": kinds, **merged}


def record_schema(
    record: type[Any],
    *,
    object_name: str | None = None,
    without: tuple[str, ...] = (),
    extra: Mapping[str, object] | None = None,
) -> JSON:
    """The object schema of `record`'s JSON shape.

    Args:
        record: a dataclass type.
        object_name: the value of the ``object`` property ``to_json`` adds (None: no such property).
        without: fields the shape leaves out.
        extra: properties the shape adds, name → Python type.
    """
    hints = get_type_hints(record)
    names = [item.name for item in dataclasses.fields(record) if item.name not in without]
    unknown = set(without) - set(hints)
    if unknown:
        raise ValueError(f"{record.__name__} has no field {sorted(unknown)}")
    properties: JSON = {}
    if object_name is not None:
        properties["object"] = {"const": object_name}
    properties.update({name: json_schema(hints[name]) for name in names})
    properties.update({name: json_schema(annotation) for name, annotation in (extra or {}).items()})
    return {"type": "object", "required": list(properties), "properties": properties}
