"""A stored session whose turns and tool calls ended every way (TUI replay and `sessions show` tests).

Turn 1: three tool calls (denied, failed, interrupted by the user) and a partial answer
kept as "interrupted". Turn 2: the model failed before any text (a later turn began).
Turn 3: answered. Turn 4, the newest: failed before any text (the session's end_reason).
The texts are the engine's own (`INTERRUPTED_TOOL_RESULT`, the approval policy's refusal).
"""

from __future__ import annotations

import json
from typing import Any

from hermes.agent._turn import INTERRUPTED_TOOL_RESULT
from hermes.store.records import NewMessage


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": arguments}}


DENIED = "DENIED: the user did not approve this command; it was not run. Do not retry it."


def seed_outcomes(store: Any) -> str:
    """The session's id; `store` is a synchronous session store (SyncStateDb)."""
    record = store.create_session(source="tui", model="scripted-model", title="Outcomes")
    sid = record.id
    calls = [_call("c1", "rm -rf build"), _call("c2", "make"), _call("c3", "sleep 100")]
    for message in (
        NewMessage(role="user", content="clean and build"),
        NewMessage(role="assistant", content="", tool_calls=calls, finish_reason="tool_calls"),
        NewMessage(role="tool", content=DENIED, tool_call_id="c1", tool_name="terminal"),
        NewMessage(role="tool", content="Error: make: *** No rule to make target", tool_call_id="c2",
                   tool_name="terminal"),
        NewMessage(role="tool", content=INTERRUPTED_TOOL_RESULT, tool_call_id="c3", tool_name="terminal"),
        NewMessage(role="assistant", content="The build is still", finish_reason="interrupted"),
        NewMessage(role="user", content="try again"),
        NewMessage(role="user", content="just say hi"),
        NewMessage(role="assistant", content="Hi.", finish_reason="stop"),
        NewMessage(role="user", content="and now?"),
    ):  # fmt: skip
        store.append_message(sid, message)
    store.end_session(sid, "failed")
    return sid
