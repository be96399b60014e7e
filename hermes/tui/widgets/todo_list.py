"""The model's plan (a `todo` call's result) as a checklist: ☐ pending, ◐ in progress, ☑ done.

One line per item, in the plan's order; a priority other than the default (medium) is
named after the item. The text is plain apart from styles, so find can search it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from hermes.agent.tools.todo import Plan, TodoStatus

MARKS: dict[TodoStatus, tuple[str, str]] = {
    "pending": ("☐", ""),
    "in_progress": ("◐", "bold yellow"),
    "completed": ("☑", "green"),
}


def checklist(plan: Plan) -> Text:
    if not plan:
        return Text("(empty plan)", style="dim")
    lines: list[Text] = []
    for item in plan:
        mark, style = MARKS[item.status]
        line = Text.assemble((mark + " ", style), (item.content, "dim" if item.status == "completed" else style))
        if item.priority != "medium":
            line.append(f"  ({item.priority})", style="dim")
        lines.append(line)
    return Text("\n").join(lines)


def todo_preview(arguments: dict[str, Any]) -> str:
    """The card header's preview of a call: how many items it writes, or that it reads."""
    todos = arguments.get("todos")
    if todos is None:
        return "read the plan"
    count = len(todos) if isinstance(todos, list) else 0
    return f"{count} item{'s' if count != 1 else ''}"
