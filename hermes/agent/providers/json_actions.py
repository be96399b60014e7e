"""Tool use for small models: one JSON action per reply instead of native tool calls.

Small local models (1–2B) asked with a native `tools` field write fenced JSON instead
of real tool calls and invent calls for "hello". Asked instead for exactly one JSON
object constrained by a schema,

    {"action": "<tool name>" | "reply", "args": {...}}

they choose well. `JsonActionProvider` wraps any OpenAI-compatible provider and does
that translation both ways, so the engine, TUI and server see the native shape:

    request  tools → a compact catalogue in the system prompt + `response_format`
             (a JSON schema with one branch per tool, whose `args` is that tool's
             parameter schema, plus `reply`); no `tools` field. Earlier assistant
             tool calls are written back as the JSON actions the model would have
             produced, tool results become user messages ("Result of read_file: …").
    response `reply` → TextChunk(s), streamed as the JSON string arrives
             (escape-aware), then FinishChunk("stop");
             a tool → one ToolCallChunk(index 0, fresh id, name, JSON arguments)
             + FinishChunk("tool_calls"), emitted once the object is complete.

`tool_choice` (`ModelRequest.tool_choice`) is honoured in the schema: ``none`` allows
only `reply`; ``required`` allows only tool actions; a named function allows only that
tool's action. Under ``none`` or a named function the adapter takes no steps of its own
(opening steps, edit repairs: they call other tools).

When the endpoint ignores the schema, `parse_action` falls back to fenced JSON,
`<tool_call>` tags, the first JSON object in the text, and finally plain text.

Loops: an action identical (name and arguments) to the previous tool call of this
turn, or already made twice in it, is not passed on. The model is asked again with a
note that it is repeating itself; if it still repeats, it is asked once more with a
schema that only allows `reply`. The prompt stays a stable prefix across steps (same
system text, history only appended), so the server's prompt cache is reused.

Failed edits: small models patch from memory, get "no match", and give that error as
their answer. When the latest tool result of the turn is a failed `patch`, the adapter
does not ask the model yet: it answers the step itself with a `read_file` call for that
file (a real tool call the engine runs and the front ends show), and the model's next
request ends with a note to retry the edit using the text it now sees. At most
`MAX_EDIT_REPAIRS` such re-reads per turn; after that the model answers as it likes.
A `patch` on a file the model has read is first fitted to that text (`align_patch`:
copied "N|" line prefixes dropped, indentation taken from the file).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from hermes.agent.instructions import HEADER as INSTRUCTIONS_HEADER
from hermes.agent.prompt import working_directory_of
from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    ProgressChunk,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.providers.format_actions import format_note, formatted_reply_text, reply_branch, root_definitions
from hermes.agent.providers.task_cues import WRITE_TOOLS, asks_for_change, existing_files, named_check
from hermes.agent.tools.edit_match import fit_edit
from hermes.agent.types import ChatMessage, Usage
from hermes.errors import ConfigError
from hermes.ids import new_call_id

REPLY = "reply"

DEFAULT_BASE_PROMPT = (
    "You are Hermes, a coding assistant working in the user's terminal, on their computer. "
    "Be brief and accurate. Use tools to look at files or run commands when the answer "
    "depends on them; never guess file contents."
)

PROTOCOL = (
    'Answer every message with exactly one JSON object: {{"action": NAME, "args": {{...}}}}.\n'
    "Actions:\n"
    '- reply {{"text": string}}: answer the user: greetings, questions, explanations, '
    "and the answer once tool results are in.\n"
    "{catalogue}\n"
    "Use a tool only for files, code or commands on this computer, with paths relative to the "
    "working directory; never invent them. Change files only when asked to. "
    "Reply as soon as you can answer. Never repeat an action with the same args."
)

RESULT_REMINDER = 'Answer the request "{request}" with reply if this result is enough; otherwise take the next step.'
LOOP_NOTE = (
    "You already ran {name} with exactly these args; its result is above. "
    "Do not run it again: use the result to reply, or choose a different action."
)
FORCE_REPLY_NOTE = "Stop using tools now. Reply to the user with what you know."
EDIT_RETRY_NOTE = (
    'Your patch of {path} failed: {reason} The current content of {path} is above. Do the request "{request}" '
    "now: call patch again with old_string copied exactly from that content (without the line-number "
    "prefixes), or reply if the file already does what was asked."
)

CHECK_NOTE = (
    'You changed files. Before you reply, run the check the request names with terminal: {check}. '
    'Then answer the request "{request}" with what it printed.'
)

EDIT_TOOLS = frozenset({"patch"})
"""Edit tools whose failure a fresh read can fix: their arguments quote the file's text."""
READ_TOOL = "read_file"
MAX_EDIT_REPAIRS = 2
"""Re-reads the adapter starts after failed edits in one turn before letting the model answer."""
ERROR_PREFIX = "Error:"
"""How the engine starts the result of a tool call that failed."""

MAX_TRAILING_CHUNKS = 16
"""Chunks accepted after the action object is complete before the stream is cut."""

_FENCED = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_REPLY_PREFIX = re.compile(r'\s*\{\s*"action"\s*:\s*"reply"\s*,\s*"args"\s*:\s*\{\s*"text"\s*:\s*"')
_ACTION_PREFIX = re.compile(r'\s*\{\s*"action"\s*:\s*"((?:[^"\\]|\\.)*)"')

# Keywords kept when a tool's parameter schema is copied into the response schema;
# the rest (descriptions, defaults, examples) only cost grammar-compilation time.
_SCHEMA_KEYS = {"type", "properties", "required", "enum", "items", "anyOf", "const", "minimum", "maximum"}


@contextlib.asynccontextmanager
async def closing_stream(events: AsyncIterator[ProviderEvent]) -> AsyncIterator[AsyncIterator[ProviderEvent]]:
    """`contextlib.aclosing` for a provider stream: leaving the block closes the request now."""
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


# ---- parsing ---------------------------------------------------------------------------


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


def _as_args(value: Any) -> dict[str, Any] | None:
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
        reply_args = _as_args(raw_args) or {}
        text = reply_args.get("text", reply_args.get("content", reply_args.get("message", "")))
        return Action(REPLY, {"text": text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)})
    args = _as_args(raw_args)
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


def _complete_object(raw: str) -> bool:
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

    def action_name(self) -> str | None:
        """The action's name once the model has written it."""
        match = _ACTION_PREFIX.match(self.raw)
        return json.loads(f'"{match.group(1)}"') if match else None


# ---- request rewriting -----------------------------------------------------------------


def _first_sentence(text: str, limit: int = 140) -> str:
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


def _tool_functions(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for tool in tools or ():
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"] != REPLY:
            out.append(fn)
    return out


def catalogue(tools: list[dict[str, Any]]) -> str:
    """One line per tool: name, argument signature, first sentence of its description."""
    lines = []
    for fn in _tool_functions(tools):
        params = fn.get("parameters") or {}
        lines.append(f"- {fn['name']} {_signature(params)}: {_first_sentence(fn.get('description', ''))}")
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
    for fn in _tool_functions(tools):
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


def _name_of(tool: dict[str, Any]) -> Any:
    return (tool.get("function") or tool).get("name")


def _allowed_names(request: ModelRequest) -> set[str]:
    """The tools an action of this call may name (`tool_choice` applied)."""
    names = {fn["name"] for fn in _tool_functions(request.tools)}
    mode, named = choice_mode(request.tool_choice)
    if mode == "none":
        return set()
    return names if named is None else names & {named}


def _steps_allowed(request: ModelRequest) -> bool:
    """Whether the adapter may take a step of its own (opening, edit repair) this call."""
    mode, named = choice_mode(request.tool_choice)
    return mode != "none" and named is None


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "action", "strict": True, "schema": schema}}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters not shown]"


def _clip_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rewrite_messages(
    messages: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    *,
    base_prompt_limit: int = 1500,
    tool_result_limit: int = 4000,
) -> list[ChatMessage]:
    """The transcript as a small model following the JSON-action protocol sees it.

    Deterministic for a given transcript, and earlier messages render the same way on
    every step, so consecutive requests share a prefix (prompt cache).
    """
    original_system = next((_text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    # Project instructions (AGENTS.md) are the user's words: they stay even when the
    # prompt before them is too long for a small model and replaced by the short one.
    prompt, marker, project = original_system.partition(INSTRUCTIONS_HEADER)
    base = prompt.strip() if 0 < len(prompt.strip()) <= base_prompt_limit else DEFAULT_BASE_PROMPT
    if marker:
        base += "\n\n" + (marker + project).strip()
    system = base + "\n\n" + PROTOCOL.format(catalogue=catalogue(tools or []))
    out: list[ChatMessage] = [{"role": "system", "content": system}]
    calls_by_id: dict[str, Action] = {}
    pending_results: list[str] = []
    last_request = ""
    check: str | None = None
    """The check the latest request names, and whether a file changed since it last ran."""
    unchecked = False
    failed_edit: tuple[str, str] | None = None
    """(path, error) of the latest failed edit not yet followed by a read of that path."""
    reread: tuple[str, str] | None = None
    """A failed edit whose file was read back in the results now pending."""

    def flush_results() -> None:
        # Small models lose the thread after a long result: restate what was asked.
        nonlocal reread
        if pending_results:
            request = _clip_line(last_request, 300)
            if reread is not None:
                reason = _first_sentence(reread[1].removeprefix(ERROR_PREFIX).strip(), 200)
                reminder = EDIT_RETRY_NOTE.format(path=reread[0], reason=reason, request=request)
            elif check is not None and unchecked:
                reminder = CHECK_NOTE.format(check=check, request=request)
            else:
                reminder = RESULT_REMINDER.format(request=request)
            out.append({"role": "user", "content": "\n\n".join([*pending_results, reminder])})
            pending_results.clear()
            reread = None

    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            call = calls_by_id.get(message.get("tool_call_id") or "")
            name = call.name if call is not None else message.get("name") or "tool"
            content = _text_of(message.get("content"))
            if call is not None and call.name in WRITE_TOOLS and _changed_a_file(content):
                unchecked = True
            elif call is not None and call.name == "terminal" and check and check in str(call.args.get("command")):
                unchecked = False
            if call is not None and call.name in EDIT_TOOLS and content.startswith(ERROR_PREFIX):
                failed_edit = (str(call.args.get("path", "")), content)
            elif (
                call is not None and call.name == READ_TOOL and failed_edit and call.args.get("path") == failed_edit[0]
            ):
                reread, failed_edit = failed_edit, None
            pending_results.append(f"Result of {name}:\n{_clip(content, tool_result_limit)}")
            continue
        flush_results()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls:
                text = _text_of(message.get("content"))
                out.append({"role": "assistant", "content": Action(REPLY, {"text": text}).to_json()})
                continue
            rendered = []
            for raw_call in calls:
                fn = raw_call.get("function") or {}
                action = Action(fn.get("name") or "tool", _as_args(fn.get("arguments")) or {})
                calls_by_id[raw_call.get("id") or ""] = action
                rendered.append(action.to_json())
            out.append({"role": "assistant", "content": "\n".join(rendered)})
        else:
            last_request = _text_of(message.get("content"))
            check, unchecked = named_check(last_request), False
            failed_edit = None
            out.append({"role": "user", "content": last_request})
    flush_results()
    return out


def _changed_a_file(result: str) -> bool:
    return result.startswith(("Patched ", "Created ", "Overwrote "))


def _latest_request(messages: list[ChatMessage]) -> str:
    return next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


OMITTED_NOTE = "[Earlier conversation omitted to fit the context window.]"


def fit_context(messages: list[ChatMessage], budget_chars: int) -> list[ChatMessage]:
    """Drop the oldest exchanges until the prompt fits `budget_chars`.

    The system message and everything from the latest user request on are always
    kept; whole user-led exchanges go first, oldest first, replaced by one note. While
    the prompt fits, nothing changes (so the prompt cache keeps its prefix).
    """

    def size(items: list[ChatMessage]) -> int:
        return sum(len(_text_of(m.get("content"))) + 16 for m in items)

    if size(messages) <= budget_chars or len(messages) < 3:
        return messages
    system, rest = messages[:1], messages[1:]
    starts = [
        i
        for i, m in enumerate(rest)
        if m.get("role") == "user" and not _text_of(m.get("content")).startswith("Result of ")
    ]
    note: list[ChatMessage] = [{"role": "user", "content": OMITTED_NOTE}]
    for start in starts[1:]:
        kept = rest[start:]
        if size(system + note + kept) <= budget_chars:
            return system + note + kept
    return system + note + rest[starts[-1]:] if starts else messages


def turn_actions(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """(name, canonical args) of every tool call since the last user message."""
    keys = []
    for message in messages[_turn_start(messages) :]:
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            keys.append(Action(fn.get("name") or "", _as_args(fn.get("arguments")) or {}).key())
    return keys


def _turn_start(messages: list[ChatMessage]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1) + 1


def opening_step(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """The next of the turn's opening steps the adapter takes itself (no model call), or None.

    A small model asked to fix something answers or patches from memory. So a turn opens
    with what a careful person does first: run the check the request names, when it asks
    for a change (`python main.py` shows the ImportError), then read the first file the
    request names that exists in the working directory the system prompt names. Each is
    taken only while every tool call of the turn so far was one of them, in order.
    """
    start = _turn_start(messages)
    if start == 0:
        return None
    names = set(tool_names)
    request = _text_of(messages[start - 1].get("content"))
    planned: list[Action] = []
    check = named_check(request)
    if check is not None and "terminal" in names and asks_for_change(request):
        planned.append(Action("terminal", {"command": check}))
    system = next((_text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    cwd = working_directory_of(system)
    if cwd is not None and READ_TOOL in names:
        first = next(iter(existing_files(request, Path(cwd))), None)
        if first is not None:
            planned.append(Action(READ_TOOL, {"path": first}))
    done = turn_actions(messages)
    if len(done) < len(planned) and done == [action.key() for action in planned[: len(done)]]:
        return planned[len(done)]
    return None


def edit_repair(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """The `read_file` call that follows a failed edit, or None when the model should answer.

    Due when the latest step of the turn was an edit (`EDIT_TOOLS`) whose result is an
    error, `read_file` is offered, and fewer than `MAX_EDIT_REPAIRS` failed edits came
    before it in this turn (so a model that keeps failing gets to answer).
    """
    if READ_TOOL not in set(tool_names):
        return None
    turn = messages[_turn_start(messages) :]
    calls: dict[str, Action] = {}
    failures: list[Action] = []
    latest_failed: Action | None = None
    for message in turn:
        if message.get("role") == "assistant":
            latest_failed = None
            for raw_call in message.get("tool_calls") or ():
                fn = raw_call.get("function") or {}
                calls[raw_call.get("id") or ""] = Action(fn.get("name") or "", _as_args(fn.get("arguments")) or {})
        elif message.get("role") == "tool":
            call = calls.get(message.get("tool_call_id") or "")
            failed = _text_of(message.get("content")).startswith(ERROR_PREFIX)
            if call is not None and call.name in EDIT_TOOLS and failed:
                failures.append(call)
                latest_failed = call
    if latest_failed is None or len(failures) > MAX_EDIT_REPAIRS:
        return None
    path = latest_failed.args.get("path")
    if not isinstance(path, str) or not path:
        return None
    return Action(READ_TOOL, {"path": path})


_NUMBERED_LINE = re.compile(r"^(\d+)\|(.*)$")


def _last_read(messages: list[ChatMessage], path: str) -> list[str] | None:
    """The file's lines as the latest `read_file` of `path` in `messages` showed them (None: never read)."""
    calls: dict[str, Action] = {}
    lines: list[str] | None = None
    for message in messages:
        for raw_call in message.get("tool_calls") or ():
            fn = raw_call.get("function") or {}
            calls[raw_call.get("id") or ""] = Action(fn.get("name") or "", _as_args(fn.get("arguments")) or {})
        call = calls.get(message.get("tool_call_id") or "") if message.get("role") == "tool" else None
        if call is None or call.name != READ_TOOL or call.args.get("path") != path:
            continue
        numbered = [_NUMBERED_LINE.match(line) for line in _text_of(message.get("content")).splitlines()]
        if numbered and numbered[0] is not None:  # not an error, not an empty file
            lines = [m.group(2) for m in numbered if m is not None]
    return lines


def align_patch(action: Action, messages: list[ChatMessage]) -> Action:
    """A `patch` whose old_string is fitted to the text the model last read of that file.

    Small models copy read_file's "N|" line prefixes into old_string, or get the
    indentation wrong. When the file was read in this conversation and old_string is not
    in that text as written, `edit_match.fit_edit` finds the one place it stands for and
    old_string becomes the file's own text, with new_string indented like the file.
    Anything else is left for the tool (which fits against the file itself) to refuse.
    """
    path, old, new = action.args.get("path"), action.args.get("old_string"), action.args.get("new_string")
    if action.name not in EDIT_TOOLS or not isinstance(path, str) or not isinstance(old, str) or not old.strip():
        return action
    if not isinstance(new, str):
        return action
    lines = _last_read(messages, path)
    if lines is None or old in "\n".join(lines):
        return action
    fit = fit_edit(lines, old, new, similar=True)
    if fit is None:
        return action
    return Action(action.name, {**action.args, "old_string": fit.old, "new_string": fit.new})


def is_loop(action: Action, previous: list[tuple[str, str]]) -> bool:
    """Same tool and arguments as the last call of the turn, or made twice already."""
    if action.is_reply:
        return False
    key = action.key()
    return bool(previous) and (previous[-1] == key or previous.count(key) >= 2)


# ---- the provider ----------------------------------------------------------------------


class JsonActionProvider(Provider):
    """Wraps an OpenAI-compatible provider so small models can use tools via JSON actions."""

    name: ClassVar[str] = "json-actions"

    def __init__(
        self,
        inner: Provider,
        *,
        tool_result_limit: int = 4000,
        base_prompt_limit: int = 1500,
        sampling: dict[str, Any] | None = None,
        context_chars: int | None = None,
    ) -> None:
        """
        Args:
            inner: the provider that talks to the model (OpenAI-compatible).
            tool_result_limit: characters of each tool result the model reads.
            base_prompt_limit: a system prompt longer than this is replaced by a short
                built-in one (small models read ~100 tokens/s on two cores).
            sampling: body fields added to every request unless the request sets them.
            context_chars: prompt budget in characters (about 3 per token); older turns
                are left out to stay under it. None: no limit.
        """
        self.inner = inner
        self.tool_result_limit = tool_result_limit
        self.base_prompt_limit = base_prompt_limit
        self.context_chars = context_chars
        self.sampling = {"temperature": 0.2, "max_tokens": 2048} if sampling is None else dict(sampling)

    def describe(self) -> str:
        return f"{self.inner.describe()} (JSON-action tool protocol)"

    async def aclose(self) -> None:
        await self.inner.aclose()

    # ---- request building ----

    def action_request(
        self,
        request: ModelRequest,
        extra_messages: list[ChatMessage] | None = None,
        *,
        reply_only: bool = False,
    ) -> ModelRequest:
        """The inner request: rewritten messages, the action schema, no `tools`."""
        messages = rewrite_messages(
            request.messages,
            request.tools,
            base_prompt_limit=self.base_prompt_limit,
            tool_result_limit=self.tool_result_limit,
        )
        messages.extend(extra_messages or ())
        if self.context_chars is not None:
            messages = fit_context(messages, self.context_chars)
        extra = {**self.sampling, **request.extra}
        # A question gets no write tools (in the grammar only: the prompt, and so the cache, stay).
        offered = request.tools
        mode, named = choice_mode(request.tool_choice)
        if named is not None:  # tool_choice names one function: only its action
            offered = [t for t in offered or () if _name_of(t) == named]
        elif offered and not asks_for_change(_latest_request(request.messages)):
            offered = [t for t in offered if _name_of(t) not in WRITE_TOOLS]
        fmt = request.output_format
        forced = mode == "required" and bool(_tool_functions(offered))
        schema = action_schema(
            offered,
            reply_only=mode == "none" or (reply_only and not forced),
            reply=reply_branch(fmt) if fmt else None,
            tools_only=forced,
        )
        if fmt is not None:  # the answer's format is the reply branch (hermes/agent/providers/format_actions.py)
            schema = {**schema, **root_definitions(fmt)}
            messages[0] = {**messages[0], "content": f"{_text_of(messages[0].get('content'))}\n{format_note(fmt)}"}
        extra["response_format"] = response_format(schema)
        return ModelRequest(
            model=request.model,
            messages=messages,
            tools=None,
            include_usage=request.include_usage,
            extra=extra,
        )

    @staticmethod
    def _loop_messages(action: Action, force_reply: bool) -> list[ChatMessage]:
        note = FORCE_REPLY_NOTE if force_reply else LOOP_NOTE.format(name=action.name)
        return [{"role": "assistant", "content": action.to_json()}, {"role": "user", "content": note}]

    @staticmethod
    def _call_events(action: Action) -> list[ProviderEvent]:
        call_id = new_call_id()
        arguments = json.dumps(action.args, ensure_ascii=False)
        return [ToolCallChunk(index=0, id=call_id, name=action.name, arguments=arguments), FinishChunk("tool_calls")]

    # ---- Provider ----

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if not _tool_functions(request.tools):
            async with closing_stream(self.inner.stream(request)) as events:
                async for event in events:
                    yield event
            return
        names = _allowed_names(request)
        repair = (edit_repair(request.messages, names) or opening_step(request.messages, names)
                  if _steps_allowed(request) else None)
        if repair is not None:
            for event in self._call_events(repair):
                yield event
            return
        previous = turn_actions(request.messages)
        formatted = request.output_format is not None
        extra_messages: list[ChatMessage] = []
        usage = Usage()
        saw_usage = False
        for attempt in range(3):
            inner_request = self.action_request(request, extra_messages, reply_only=attempt == 2)
            streamer = ReplyStreamer()
            finish = "stop"
            trailing = 0
            async with closing_stream(self.inner.stream(inner_request)) as events:
                async for event in events:
                    if isinstance(event, TextChunk):
                        if formatted:  # the answer is the whole args object: parsed at the end
                            streamer.raw += event.text
                        text = "" if formatted else streamer.feed(event.text)
                        if text:
                            yield TextChunk(text)
                            if repeating_tail(streamer.text):
                                break  # a degenerate loop: end the answer rather than fill max_tokens
                        if streamer.done or ("}" in event.text and _complete_object(streamer.raw)):
                            # A schema allows unbounded whitespace after the object; stop a
                            # model that pads instead of ending (closing the stream stops it).
                            trailing += 1
                            if trailing > MAX_TRAILING_CHUNKS:
                                break
                    elif isinstance(event, UsageChunk):
                        usage, saw_usage = usage + event.usage, True
                    elif isinstance(event, FinishChunk):
                        finish = event.reason
                    elif isinstance(event, (ReasoningChunk, ProgressChunk)):
                        yield event
                    # ToolCallChunk: impossible without `tools`; ignored if a server sends one.
            if streamer.streamed or streamer.done:
                break  # the reply text is out already
            action = _parse(streamer.raw, names, formatted)
            if attempt < 2 and is_loop(action, previous):
                extra_messages += self._loop_messages(action, force_reply=attempt == 1)
                continue
            if action.is_reply:
                if action.text:
                    yield TextChunk(action.text)
            elif finish == "length":
                pass  # a half-written action: nothing to run; the engine sees the truncation
            else:
                for event in self._call_events(align_patch(action, request.messages)):
                    yield event
                if saw_usage:
                    yield UsageChunk(usage)
                return
            break
        if saw_usage:
            yield UsageChunk(usage)
        yield FinishChunk("length" if finish == "length" else "stop")

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        if not _tool_functions(request.tools):
            return await self.inner.complete(request)
        names = _allowed_names(request)
        repair = (edit_repair(request.messages, names) or opening_step(request.messages, names)
                  if _steps_allowed(request) else None)
        if repair is not None:
            return self._call_events(repair)
        previous = turn_actions(request.messages)
        extra_messages: list[ChatMessage] = []
        usage = Usage()
        saw_usage = False
        events: list[ProviderEvent] = []
        for attempt in range(3):
            inner_request = self.action_request(request, extra_messages, reply_only=attempt == 2)
            raw, finish = "", "stop"
            formatted = request.output_format is not None
            for event in await self.inner.complete(inner_request):
                if isinstance(event, TextChunk):
                    raw += event.text
                elif isinstance(event, UsageChunk):
                    usage, saw_usage = usage + event.usage, True
                elif isinstance(event, FinishChunk):
                    finish = event.reason
                elif isinstance(event, ReasoningChunk):
                    events.append(event)
            action = _parse(raw, names, formatted)
            if attempt < 2 and is_loop(action, previous):
                extra_messages += self._loop_messages(action, force_reply=attempt == 1)
                continue
            if action.is_reply or finish == "length":
                if action.is_reply and action.text:
                    events.append(TextChunk(action.text))
                events.append(FinishChunk("length" if finish == "length" else "stop"))
            else:
                events += self._call_events(align_patch(action, request.messages))
            break
        if saw_usage:
            events.append(UsageChunk(usage))
        return events


def _parse(raw: str, names: set[str], formatted: bool) -> Action:
    """The action of a whole reply; a formatted reply's text is its args as JSON."""
    if formatted:
        text = formatted_reply_text(raw)
        if text is not None:
            return Action(REPLY, {"text": text})
    return parse_action(raw, names)


TOOL_PROTOCOLS = ("native", "json")
"""Values of the `tool_protocol` setting."""


def with_tool_protocol(provider: Provider, protocol: str) -> Provider:
    """`provider` as is (`native`), or wrapped in the JSON-action adapter (`json`).

    The local provider always speaks JSON actions, so it is never wrapped twice.

    Raises:
        ConfigError: `protocol` is neither native nor json.
    """
    if protocol not in TOOL_PROTOCOLS:
        raise ConfigError(f"unknown tool_protocol {protocol!r}: use native or json")
    if protocol == "native" or provider.name in ("local", JsonActionProvider.name):
        return provider
    return JsonActionProvider(provider)
