"""Helpers for the crash-repair tests: owners, waits, transcript checks."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from hermes.store.owner import ProcessOwner, _start_identity, current_owner


def owner_of(pid: int) -> ProcessOwner:
    """The ProcessOwner of another process on this host."""
    return ProcessOwner(host=current_owner().host, pid=pid, started=_start_identity(pid))


def spawn_sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.DEVNULL)


def wait_until(condition: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    """Poll `condition` until it returns something truthy (returned) or `timeout` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def transcript_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Why a strict OpenAI endpoint would reject `messages` (empty when it is valid).

    Every assistant tool call needs a tool message with its id before the next non-tool
    message, and every tool message must answer such a call.
    """
    problems: list[str] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"message {index}: tool result for unknown call {call_id!r}")
            open_calls.discard(call_id)
            continue
        if open_calls:
            problems.append(f"message {index}: calls {sorted(open_calls)} have no result")
            open_calls.clear()
        if role == "assistant":
            open_calls.update(call["id"] for call in message.get("tool_calls") or [])
    if open_calls:
        problems.append(f"end: calls {sorted(open_calls)} have no result")
    return problems


def consecutive_assistants(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes of assistant messages that directly follow another assistant message."""
    roles = [message.get("role") for message in messages]
    return [i for i in range(1, len(roles)) if roles[i] == roles[i - 1] == "assistant"]
