"""The JSON-action grammar: what a small model may write, and how its writing is read.

One action per reply, ``{"action": "<tool name>" | "reply", "args": {...}}``:

- `action_schema` is the JSON schema of one action (a branch per offered tool, with that
  tool's parameter schema slimmed to what constrains, plus `reply`), sent as
  `response_format` (`response_format`), which llama.cpp turns into a grammar.
- `choice_mode` reads `tool_choice` for it: ``none`` → only `reply`; ``required`` → only
  tool actions; a named function → only that tool (`allowed_names`).
- `catalogue` is the tools' one-line list for the system prompt.
- Reading: `parse_action` (a whole reply, with fallbacks for an endpoint that ignored the
  schema: fenced JSON, `<tool_call>` tags, the first JSON object, else plain text; an
  unknown tool is never a call) and `ReplyStreamer` (a `reply`'s text while it streams,
  escape-aware).

Pure functions of their inputs; no I/O. The adapter is `hermes.agent.providers.json_actions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes.agent.provider import ModelRequest

REPLY = "reply"

_FENCED = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_REPLY_PREFIX = re.compile(r'\s*\{\s*"action"\s*:\s*"reply"\s*,\s*"args"\s*:\s*\{\s*"text"\s*:\s*"')

# Keywords kept when a tool's parameter schema is copied into the response schema;
# the rest (descriptions, defaults, examples) only cost grammar-compilation time.
_SCHEMA_KEYS = {"type", "properties", "required", "enum", "items", "anyOf", "const", "minimum", "maximum"}


@dataclass(frozen=True)
class Action:
    """A parsed decision: a tool to call (`name`, `args`) or a reply (`name == "reply"`)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def is_reply(self) -> bool:
        return self.name == REPLY

    @property
    def text(self) -> str:
        value = self.args.get("text", "")
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def key(self) -> tuple[str, str]:
        """Identity for loop detection: name and canonical arguments."""
        return self.name, json.dumps(self.args, sort_keys=True, ensure_ascii=False)

    def to_json(self) -> str:
        return json.dumps({"action": self.name, "args": self.args}, ensure_ascii=False)


def as_args(value: Any) -> dict[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return None
        return decoded if isinstance(decoded, dict) else None
    return None


def _action_of(obj: Any, tool_names: set[str]) -> Action | None:
    """Read one decoded JSON value in any of the shapes small models produce."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        return _action_of(obj["function"], tool_names)
    name = next((obj[k] for k in ("action", "name", "tool", "tool_name") if isinstance(obj.get(k), str)), None)
    if name is None:
        return None
    raw_args = next((obj[k] for k in ("args", "arguments", "parameters", "input") if k in obj), None)
    if name == REPLY:
        if isinstance(raw_args, str):
            return Action(REPLY, {"text": raw_args})
        reply_args = as_args(raw_args) or {}
        text = reply_args.get("text", reply_args.get("content", reply_args.get("message", "")))
        return Action(REPLY, {"text": text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)})
    args = as_args(raw_args)
    if name not in tool_names or args is None:
        return None
    return Action(name, args)


def _json_objects(text: str) -> Iterable[Any]:
    """Every JSON value that starts at a `{` in `text`, outermost first."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        yield value
        pos = text.find("{", end)


def repeating_tail(text: str, *, min_period: int = 30, max_period: int = 300, times: int = 3) -> bool:
    """True when `text` ends with one block of `min_period`..`max_period` chars `times` times over.

    Small models sometimes fall into repeating a sentence forever; exact repetition of
    90+ characters is very rarely meant.
    """
    for period in range(min_period, min(max_period, len(text) // times) + 1):
        block = text[-period:]
        if len(set(block)) < 8:  # rules and padding ("=====", "- - -") are not sentences
            continue
        if all(text[-(k + 1) * period : len(text) - k * period] == block for k in range(1, times)):
            return True
    return False


def complete_object(raw: str) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


def parse_action(text: str, tool_names: Iterable[str]) -> Action:
    """Turn a model's whole reply into an Action; anything unrecognised is a plain reply.

    Tried in order: the text as one JSON object; fenced ```json blocks; `<tool_call>`
    tags; the first JSON object anywhere in the text. A JSON object naming an unknown
    tool is not a call (it may be an example in an answer), so it stays text.
    """
    names = set(tool_names)
    stripped = text.strip()
    candidates: list[str] = [stripped]
    candidates += [m.group(1).strip() for m in _FENCED.finditer(text)]
    candidates += [m.group(1).strip() for m in _TOOL_CALL_TAG.finditer(text)]
    for candidate in candidates:
        try:
            action = _action_of(json.loads(candidate), names)
        except ValueError:
            continue
        if action is not None:
            return action
    for obj in _json_objects(text):
        action = _action_of(obj, names)
        if action is not None and (not action.is_reply or stripped.startswith("{")):
            return action
    return Action(REPLY, {"text": text})


_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


def _hex(digits: str) -> int:
    try:
        return int(digits, 16) if len(digits) == 4 else -1
    except ValueError:
        return -1


class ReplyStreamer:
    """Pulls the `text` string out of a streaming `{"action": "reply", "args": {"text": "…`.

    `feed()` returns newly decoded text as soon as it is complete (JSON escapes,
    including surrogate pairs split across chunks, are honoured). Output that does
    not start like a reply action yields nothing here and is parsed whole at the end.
    """

    def __init__(self) -> None:
        self.raw = ""
        self._pos: int | None = None
        """Index in `raw` of the next undecoded character of the text string."""
        self.done = False
        """The closing quote of the text string was seen."""
        self.streamed = False
        """Some reply text was already returned by feed()."""
        self.text = ""
        """All reply text decoded so far."""

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.done:
            return ""
        if self._pos is None:
            match = _REPLY_PREFIX.match(self.raw)
            if match is None:
                return ""
            self._pos = match.end()
        out: list[str] = []
        raw, pos = self.raw, self._pos
        while pos < len(raw):
            char = raw[pos]
            if char == '"':
                self.done = True
                pos += 1
                break
            if char != "\\":
                out.append(char)
                pos += 1
                continue
            if pos + 1 >= len(raw):
                break
            if raw[pos + 1] != "u":
                out.append(_SIMPLE_ESCAPES.get(raw[pos + 1], raw[pos + 1]))
                pos += 2
                continue
            if pos + 6 > len(raw):
                break
            code = _hex(raw[pos + 2 : pos + 6])
            if 0xD800 <= code < 0xDC00:  # high surrogate: decode it with its low partner
                tail = raw[pos + 6 : pos + 12]
                if len(tail) < 6 and "\\u".startswith(tail[:2]):
                    break  # the partner may still be on its way
                low = _hex(tail[2:6]) if tail[:2] == "\\u" else -1
                if 0xDC00 <= low < 0xE000:
                    out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    pos += 12
                    continue
            out.append("\ufffd" if code < 0 or 0xD800 <= code < 0xE000 else chr(code))
            pos += 6
        self._pos = pos
        text = "".join(out)
        if text:
            self.streamed = True
            self.text += text
        return text


# ---- the schema ------------------------------------------------------------------------


def first_sentence(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _type_of(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    return str(kind)


def _signature(parameters: dict[str, Any]) -> str:
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    parts = [
        f'"{name}"{"" if name in required else "?"}: {_type_of(spec if isinstance(spec, dict) else {})}'
        for name, spec in props.items()
    ]
    return "{" + ", ".join(parts) + "}"


def tool_functions(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for tool in tools or ():
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"] != REPLY:
            out.append(fn)
    return out


def catalogue(tools: list[dict[str, Any]]) -> str:
    """One line per tool: name, argument signature, first sentence of its description."""
    lines = []
    for fn in tool_functions(tools):
        params = fn.get("parameters") or {}
        lines.append(f"- {fn['name']} {_signature(params)}: {first_sentence(fn.get('description', ''))}")
    return "\n".join(lines)


def _slim_schema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_slim_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _slim_schema(spec) for name, spec in value.items()}
        else:
            out[key] = _slim_schema(value)
    return out


def action_schema(
    tools: list[dict[str, Any]] | None,
    *,
    reply_only: bool = False,
    reply: dict[str, Any] | None = None,
    tools_only: bool = False,
) -> dict[str, Any]:
    """The JSON schema of one action: a branch per tool (its own args schema) and `reply`
    (`reply`, when given, replaces the default ``{"text": string}`` branch; `tools_only`
    leaves it out while there is a tool)."""
    reply = reply or {
        "type": "object",
        "properties": {
            "action": {"const": REPLY},
            "args": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
        "required": ["action", "args"],
    }
    if reply_only:
        return reply
    branches = []
    for fn in tool_functions(tools):
        args = _slim_schema(fn.get("parameters") or {})
        args.setdefault("type", "object")
        branches.append(
            {
                "type": "object",
                "properties": {"action": {"const": fn["name"]}, "args": args},
                "required": ["action", "args"],
            }
        )
    if tools_only and branches:
        return {"anyOf": branches}
    return {"anyOf": [*branches, reply]}


ChoiceMode = tuple[Literal["auto", "none", "required"], str | None]
"""How a request's `tool_choice` binds the action: the mode, and the one tool it names."""


def choice_mode(tool_choice: str | dict[str, Any] | None) -> ChoiceMode:
    """`ModelRequest.tool_choice` read for the action schema (anything else: auto)."""
    if tool_choice == "none":
        return "none", None
    if tool_choice == "required":
        return "required", None
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, dict) else tool_choice.get("name")
        if isinstance(name, str) and name:
            return "required", name
    return "auto", None


def tool_name_of(tool: dict[str, Any]) -> Any:
    return (tool.get("function") or tool).get("name")


def allowed_names(request: ModelRequest) -> set[str]:
    """The tools an action of this call may name (`tool_choice` applied)."""
    names = {fn["name"] for fn in tool_functions(request.tools)}
    mode, named = choice_mode(request.tool_choice)
    if mode == "none":
        return set()
    return names if named is None else names & {named}


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "action", "strict": True, "schema": schema}}
