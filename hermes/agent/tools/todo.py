"""The `todo` tool: the plan the model keeps for multi-step work.

    {"todos": [{"content": "add the test", "status": "in_progress", "priority": "high"}, ...]}
    {}                                   # reads the plan back

Invariants:

- The model writes the whole list on every call; a call with no `todos` reads it back.
  Either way the result is the plan as JSON (`plan_result`): `{"todos": [{content,
  status, priority}, ...]}`, every field present (priority defaults to "medium").
- The plan lives in the transcript, nowhere else: it is the result of the latest `todo`
  call whose result parses as a plan (`latest_plan`; a failed call's "Error: …" does not).
  A resumed or forked session and ACP's `session/load` therefore have it with no store
  of their own, and a read-back answers from the messages the model sees this turn
  (`ToolContext.transcript`): a write earlier in the same concurrent batch is not yet
  there, and a plan compacted out of the context is gone for the model too.
- Input is checked before anything is answered: every item needs a non-empty `content`,
  a status of pending, in_progress or completed, and a priority of high, medium or low
  when given; at most one item is in_progress. A bad list is a `ToolError`, never a
  partial plan.
- The tool touches no file: it is read-only, so it never takes a file checkpoint and
  runs alongside other read-only calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from hermes.agent.tools.args import check_object
from hermes.agent.tools.base import Tool, ToolContext
from hermes.errors import ToolError

TODO = "todo"

TodoStatus = Literal["pending", "in_progress", "completed"]
TodoPriority = Literal["high", "medium", "low"]
STATUSES: tuple[TodoStatus, ...] = get_args(TodoStatus)
PRIORITIES: tuple[TodoPriority, ...] = get_args(TodoPriority)


@dataclass(frozen=True, slots=True)
class TodoItem:
    content: str
    status: TodoStatus
    priority: TodoPriority = "medium"


Plan = tuple[TodoItem, ...]


def _item(index: int, raw: Any) -> TodoItem:
    where = f"todos[{index}]"
    if not isinstance(raw, dict):
        raise ToolError(f"{where} must be an object with content and status")
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ToolError(f"{where}.content must be a non-empty string")
    status = raw.get("status")
    if status not in STATUSES:
        raise ToolError(f"{where}.status must be one of {', '.join(STATUSES)}, got {status!r}")
    priority = raw.get("priority")
    if priority is None or priority == "":
        priority = "medium"
    if priority not in PRIORITIES:
        raise ToolError(f"{where}.priority must be one of {', '.join(PRIORITIES)}, got {priority!r}")
    return TodoItem(" ".join(content.split()), cast(TodoStatus, status), cast(TodoPriority, priority))


def parse_todos(raw: Any) -> Plan:
    """The checked plan from a call's `todos` (a list, or that list as a JSON string)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ToolError("argument 'todos' must be a list of {content, status, priority?} objects") from None
    if not isinstance(raw, list):
        raise ToolError("argument 'todos' must be a list of {content, status, priority?} objects")
    plan = tuple(_item(i, item) for i, item in enumerate(raw))
    working = [item.content for item in plan if item.status == "in_progress"]
    if len(working) > 1:
        raise ToolError(f"at most one item may be in_progress, got {len(working)}: {'; '.join(working)}")
    return plan


def plan_result(plan: Plan) -> str:
    """The tool's result: the plan as JSON (see the module docstring)."""
    todos = [{"content": i.content, "status": i.status, "priority": i.priority} for i in plan]
    return json.dumps({"todos": todos}, ensure_ascii=False)


def read_plan(result: str) -> Plan | None:
    """The plan a `todo` result holds; None when it holds none (an error, other text)."""
    try:
        value = json.loads(result)
    except ValueError:
        return None
    if not isinstance(value, dict) or "todos" not in value:
        return None
    try:
        return parse_todos(value["todos"])
    except ToolError:
        return None


def latest_plan(messages: Iterable[Mapping[str, Any]]) -> Plan | None:
    """The plan of a transcript (chat-completions messages): its latest good `todo` result."""
    todo_calls: set[str] = set()
    plan: Plan | None = None
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                if (call.get("function") or {}).get("name") == TODO:
                    todo_calls.add(str(call.get("id")))
        elif message.get("role") == "tool" and str(message.get("tool_call_id")) in todo_calls:
            content = message.get("content")
            found = read_plan(content) if isinstance(content, str) else None
            if found is not None:
                plan = found
    return plan


def plan_summary(plan: Plan) -> str:
    """One line for a status or a card header: `2/5 done · now: add the test`."""
    if not plan:
        return "no plan"
    done = sum(item.status == "completed" for item in plan)
    now = next((item.content for item in plan if item.status == "in_progress"), None)
    return f"{done}/{len(plan)} done" + (f" · now: {now}" if now else "")


async def _todo(args: dict[str, Any], ctx: ToolContext) -> str:
    args = check_object(args)
    if args.get("todos") is None:
        return plan_result(latest_plan(ctx.transcript or ()) or ())
    return plan_result(parse_todos(args["todos"]))


TODO_TOOL = Tool(
    name=TODO,
    description=(
        "Keep a plan for multi-step work. Send the whole list every time (it replaces the "
        "previous one): each item has content, status (pending, in_progress or completed) and an "
        "optional priority (high, medium, low); keep exactly one item in_progress while you work "
        "and mark items completed as soon as they are done. Call with no arguments to read the "
        "plan back. Skip it for simple one-step requests."
    ),
    parameters={
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole plan, in order. Omit to read the current plan.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "What to do, in a few words."},
                        "status": {"type": "string", "enum": list(STATUSES), "description": "Where it stands."},
                        "priority": {"type": "string", "enum": list(PRIORITIES), "description": "Default medium."},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": [],
    },
    handler=_todo,
    read_only=True,
)
