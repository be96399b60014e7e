"""A patch that would undo the turn's own earlier edit: refused once (`undoing_refusal`).

A small model that has fixed a file sometimes reads it again, sees its fix, takes the
user's description of the bug for the file's present state and "fixes" it back: a patch
whose old_string is what an earlier patch of the same file in this turn wrote and whose
new_string is what that patch replaced. The first such call is not carried out; its
result names the earlier edit and says how to go on. The same call made again after that
refusal is carried out: a revert the model means stays possible. A call whose id begins
with `HERMES_UNDO_PREFIX` is hermes' own undo of an edit a check showed did not help (the
JSON-action adapter's step, `own_steps.undo_failed_edit`): never refused. The guard
steers a model; it protects nothing, so an id a remote model chose itself gains it nothing.

Invariants:
- Only the transcript decides (`ToolContext.transcript`: this turn's messages as the
  model sees them): an earlier `patch` call counts when its result, in the transcript,
  reports the file patched; paths are compared resolved against the turn's cwd.
- Nothing is written for a refused call, and the file is not read for the check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.fsutil import resolve
from hermes.messages import ChatMessage

__all__ = ["HERMES_UNDO_PREFIX", "REFUSAL_PREFIX", "undoing_refusal"]

HERMES_UNDO_PREFIX = "call_hermes_undo_"
"""How the id of hermes' own undo of a failed attempt begins."""

REFUSAL_PREFIX = "Not patched: this would undo"
PATCHED_PREFIX = "Patched "
"""How a carried-out patch's result begins (hermes.agent.tools.files.patch)."""


def _patch_calls(transcript: Iterable[ChatMessage]) -> Iterator[tuple[dict[str, Any], str]]:
    """(arguments, result text) of every patch call whose result is in the transcript, in order."""
    calls: dict[str, dict[str, Any]] = {}
    for message in transcript:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") != "patch":
                    continue
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (TypeError, ValueError):
                    continue
                if isinstance(arguments, dict):
                    calls[str(call.get("id"))] = arguments
        elif message.get("role") == "tool":
            arguments = calls.pop(str(message.get("tool_call_id")), None)
            content = message.get("content")
            if arguments is not None and isinstance(content, str):
                yield arguments, content


def undoing_refusal(ctx: ToolContext, path: Path, old: str, new: str) -> str | None:
    """The refusal for a patch of `path` (old -> new) that undoes this turn's own earlier
    edit of it, the first time it is asked for; None otherwise (see the module docstring)."""
    transcript = ctx.transcript
    if not transcript or ctx.call_id.startswith(HERMES_UNDO_PREFIX):
        return None
    undone: dict[str, Any] | None = None
    for arguments, result in _patch_calls(transcript):
        if not isinstance(arguments.get("path"), str) or resolve(ctx, arguments["path"]) != path:
            continue
        if arguments.get("old_string") == old and arguments.get("new_string") == new:
            if result.startswith(REFUSAL_PREFIX):
                return None  # asked again after the refusal: meant
        elif result.startswith(PATCHED_PREFIX) and (arguments.get("old_string"), arguments.get("new_string")) == (
            new, old,
        ):  # fmt: skip
            undone = arguments
    if undone is None:
        return None
    return (
        f"{REFUSAL_PREFIX} your own edit of {path.name} earlier in this turn, which replaced "
        f"{_quote(new)} with {_quote(old)}: the file already has that edit, so nothing was written. "
        "If a check still fails, undoing it will not fix that: read the failure's last lines, then make "
        f"a different edit (patch {path.name} with old_string copied from its current text, or fix the "
        "file the failure points to). If the edit was right, answer the user. "
        "If you really mean to undo it, call patch again with exactly the same arguments."
    )


def _quote(text: str, limit: int = 120) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return json.dumps(shown, ensure_ascii=False)
