"""hermes' turn events and stored messages as ACP session updates (pure functions).

    for update in turn_updates(event, cwd):     # a live turn: AgentEvent → updates
        await conn.session_update(session_id, update)
    for update in history_updates(messages, cwd):   # session/load: the stored transcript

Invariants:
- Text is sent as `agent_message_chunk`, reasoning as `agent_thought_chunk`; a stored user
  message is replayed as `user_message_chunk`.
- Every tool call is one `tool_call` (status in_progress, with kind, title, locations and
  the edit's diff) and one `tool_call_update` with the same id (completed or failed, with
  the result: a terminal's output as text, an edit's diff again). A replayed call is sent
  the same way, from the assistant message's call and its tool message.
- Kinds: read_file read; write_file and patch edit; terminal execute; list_files and
  search_files search; an MCP tool whose name says fetch fetch; everything else other.
- A `todo` call is the model's plan, sent as one `plan` update (every entry, as ACP
  wants: the client replaces its plan with each) once the call succeeded, never as a
  tool call; a failed one sends nothing (the model reads its error and calls again).
  A replay sends the transcript's latest plan once, after everything else
  (hermes/agent/tools/todo.py: the latest good `todo` result is the plan).
- Diffs come from the call's arguments (patch: old_string → new_string; write_file: the new
  content), never from re-reading the file, so they are what the model asked for even
  when the update is sent after the tool ran.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, assert_never

from acp import (
    image_block,
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    StopReason,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from hermes.agent.events import (
    AgentEvent,
    ApprovalRequested,
    ClientToolCalls,
    ContextCompacted,
    ModelProgress,
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.safety.approval import REFUSAL_PREFIXES
from hermes.agent.tools.todo import TODO, Plan, latest_plan, read_plan
from hermes.agent.types import ChatMessage, TurnResult
from hermes.error_codes import MAX_ITERATIONS, OUTPUT_TRUNCATED

Update = AgentMessageChunk | AgentThoughtChunk | UserMessageChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate
ToolContent = ContentToolCallContent | FileEditToolCallContent

_KINDS: Mapping[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "patch": "edit",
    "terminal": "execute",
    "list_files": "search",
    "search_files": "search",
}


def tool_kind(name: str) -> ToolKind:
    kind = _KINDS.get(name)
    if kind is not None:
        return kind
    return "fetch" if "fetch" in name.lower() else "other"


def tool_title(name: str, arguments: Mapping[str, Any]) -> str:
    """A one-line title: the command for terminal, the verb and path for file tools."""
    match tool_kind(name):
        case "execute":
            return str(arguments.get("command", name))
        case "read":
            return f"Read {arguments.get('path', '')}"
        case "edit":
            return f"{'Write' if name == 'write_file' else 'Edit'} {arguments.get('path', '')}"
        case "search":
            target = arguments.get("pattern") or arguments.get("query") or arguments.get("path") or ""
            return f"{'Search' if name == 'search_files' else 'List'} {target}".rstrip()
        case _:
            return name


def _absolute(raw: str, cwd: Path) -> str:
    path = Path(raw).expanduser()
    return os.path.normpath(path if path.is_absolute() else cwd / path)


def tool_locations(name: str, arguments: Mapping[str, Any], cwd: Path) -> list[ToolCallLocation]:
    """The files a call touches (absolute paths), with read_file's first line."""
    raw = arguments.get("path")
    if not isinstance(raw, str) or not raw or tool_kind(name) == "execute":
        return []
    line = arguments.get("offset") if name == "read_file" else None
    return [ToolCallLocation(path=_absolute(raw, cwd), line=line if isinstance(line, int) else None)]


def edit_diff(name: str, arguments: Mapping[str, Any], cwd: Path) -> list[ToolContent]:
    """An edit call's diff from its arguments (see the module docstring); [] for other calls."""
    raw = arguments.get("path")
    if not isinstance(raw, str) or not raw:
        return []
    path = _absolute(raw, cwd)
    if name == "patch":
        old, new = arguments.get("old_string"), arguments.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            return [tool_diff_content(path, new, old)]
    if name == "write_file" and isinstance(arguments.get("content"), str):
        return [tool_diff_content(path, arguments["content"])]
    return []


def tool_started(call_id: str, name: str, arguments: Mapping[str, Any], cwd: Path) -> ToolCallStart:
    return start_tool_call(
        call_id,
        tool_title(name, arguments),
        kind=tool_kind(name),
        status="in_progress",
        content=edit_diff(name, arguments, cwd) or None,
        locations=tool_locations(name, arguments, cwd),
        raw_input=dict(arguments),
    )


def tool_finished(
    call_id: str, name: str, arguments: Mapping[str, Any], result: str, is_error: bool, cwd: Path
) -> ToolCallProgress:
    content: list[ToolContent] = [] if is_error else edit_diff(name, arguments, cwd)
    text = f"```\n{result}\n```" if tool_kind(name) == "execute" else result
    content.append(tool_content(text_block(text)))
    return update_tool_call(call_id, status="failed" if is_error else "completed", content=content, raw_output=result)


def plan_update(plan: Plan) -> AgentPlanUpdate:
    """The ACP `plan` of a todo list: every entry with its content, priority and status."""
    return update_plan(plan_entry(item.content, priority=item.priority, status=item.status) for item in plan)


def turn_updates(event: AgentEvent, cwd: Path) -> Iterator[Update]:
    """The updates one live event makes (most make none: they are for status lines)."""
    match event:
        case TextDelta(text=text):
            if text:
                yield update_agent_message_text(text)
        case ReasoningDelta(text=text):
            if text:
                yield update_agent_thought_text(text)
        case ToolStarted(name=name) if name == TODO and event.parent_call_id is None:
            return
        case ToolCompleted(name=name) if name == TODO and event.parent_call_id is None:  # a subagent's plan is its own
            plan = None if event.is_error else read_plan(event.result)
            if plan is not None:
                yield plan_update(plan)
        case ToolStarted():
            yield tool_started(event.call_id, event.name, event.arguments, cwd)
        case ToolCompleted():
            yield tool_finished(event.call_id, event.name, event.arguments, event.result, event.is_error, cwd)
        case StreamStalled(message=message):
            yield update_agent_thought_text(f"\n[{message}]\n")
        case ContextCompacted():
            yield update_agent_thought_text(
                f"\n[context compacted: {event.summarized_messages} older messages summarized]\n"
            )
        case (
            TurnStarted()
            | SegmentEnd()
            | ToolCallGenerating()
            | ApprovalRequested()
            | Retrying()
            | Status()
            | ModelProgress() | ToolOutput()
            | ClientToolCalls()
            | TurnCompleted()
        ):
            return
        case _:
            assert_never(event)


def stop_reason(result: TurnResult) -> StopReason:
    """The ACP stop reason of a finished turn (a failed one is a JSON-RPC error instead)."""
    if result.status == "interrupted":
        return "cancelled"
    if result.status == "partial" and result.error_code == OUTPUT_TRUNCATED:
        return "max_tokens"
    if result.status == "partial" and result.error_code == MAX_ITERATIONS:
        return "max_turn_requests"
    return "end_turn"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _image_updates(content: Any) -> Iterator[Update]:
    """A stored user message's images (base64 data URLs) as image blocks, as the editor sent them."""
    for part in content if isinstance(content, list) else ():
        spec = part.get("image_url") if isinstance(part, dict) and part.get("type") == "image_url" else None
        url = spec.get("url") if isinstance(spec, dict) else None
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            head, data = url.split(",", 1)
            yield update_user_message(image_block(data, head[5:].split(";", 1)[0]))


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def history_updates(messages: list[ChatMessage], cwd: Path) -> Iterator[Update]:
    """A stored transcript as the updates a live session would have sent (session/load)."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _text_of(message.get("content"))
            if text:
                yield update_user_message_text(text)
            yield from _image_updates(message.get("content"))
        elif role == "assistant":
            reasoning = message.get("reasoning_content") or message.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield update_agent_thought_text(reasoning)
            text = _text_of(message.get("content"))
            if text:
                yield update_agent_message_text(text)
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name, arguments = str(function.get("name", "")), _arguments(function.get("arguments"))
                calls[str(call.get("id"))] = (name, arguments)
                if name == TODO:
                    continue
                yield tool_started(str(call.get("id")), name, arguments, cwd)
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            name, arguments = calls.get(call_id, ("", {}))
            if name == TODO:
                continue
            result = _text_of(message.get("content"))
            yield tool_finished(call_id, name, arguments, result, result.startswith(("Error", *REFUSAL_PREFIXES)), cwd)
    plan = latest_plan(messages)
    if plan is not None:
        yield plan_update(plan)
