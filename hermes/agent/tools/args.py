"""Argument checks shared by the core tools. Every failure is a ToolError the model can act on.

Models sometimes send numbers and booleans as strings ("20", "true"); those are accepted.
Unknown extra arguments are ignored.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ToolError


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def check_object(args: Any) -> dict[str, Any]:
    if not isinstance(args, dict):
        raise ToolError(f"arguments must be a JSON object, got {_type_name(args)}")
    return args


def require_str(args: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    if name not in args or args[name] is None:
        raise ToolError(f"missing required argument '{name}'")
    value = args[name]
    if not isinstance(value, str):
        raise ToolError(f"argument '{name}' must be a string, got {_type_name(value)}")
    if not allow_empty and not value.strip():
        raise ToolError(f"argument '{name}' must not be empty")
    return value


def optional_str(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"argument '{name}' must be a string, got {_type_name(value)}")
    return value


def optional_number(
    args: dict[str, Any], name: str, default: float, *, minimum: float, maximum: float | None = None
) -> float:
    """A number >= minimum; values above `maximum` are clamped to it."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ToolError(f"argument '{name}' must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ToolError(f"argument '{name}' must be a number, got {_type_name(value)}")
    if value < minimum:
        raise ToolError(f"argument '{name}' must be at least {minimum:g}, got {value:g}")
    return float(min(value, maximum)) if maximum is not None else float(value)


def optional_int(
    args: dict[str, Any], name: str, default: int, *, minimum: int, maximum: int | None = None
) -> int:
    """An integer >= minimum; values above `maximum` are clamped to it."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument '{name}' must be an integer, got {value!r}")
    if value < minimum:
        raise ToolError(f"argument '{name}' must be at least {minimum}, got {value}")
    return min(value, maximum) if maximum is not None else value


def optional_bool(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise ToolError(f"argument '{name}' must be true or false, got {value!r}")
    return value
