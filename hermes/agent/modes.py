"""Turn modes: how freely a turn's tools may change things.

    default       the approval policy as configured (writes in the workspace run; risky
                  commands and writes elsewhere ask)
    accept-edits  file edits inside the workspace never ask; everything else as default
                  (a write outside it, to a protected path or any command that asks still asks)
    plan          read-only: write tools and every command not known to only read are
                  refused (hermes/agent/tools/plan_gate.py), and the model is told it plans

The mode is a setting of one turn (`TurnRequest.mode`); a front end keeps the user's choice
and sends it with every turn.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

from hermes.messages import ChatMessage, UserContent

Mode = Literal["default", "accept-edits", "plan"]
MODES: tuple[Mode, ...] = get_args(Mode)
"""In the order Shift+Tab cycles them."""
DEFAULT_MODE: Mode = "default"

MODE_HELP: dict[Mode, str] = {
    "default": "tools run under the approval policy",
    "accept-edits": "file edits in the workspace run without asking; everything else as default",
    "plan": "read-only: no file writes, only commands that read; the model plans",
}

PLAN_NOTE = (
    "[hermes: plan mode is on. Investigate and plan only: read files and run read-only commands "
    "(ls, cat, grep, rg, git status/diff/log, …). Do not write or patch files and do not run commands "
    "that change anything: such calls are refused. End with a concrete, numbered plan of the changes you "
    "would make; the user leaves plan mode (Shift+Tab or /mode default) to have it carried out.]"
)
"""Added to the user's message of a plan-mode turn, in what the model sees only (the stored
message stays as typed): the system prompt and the history before it are unchanged, so the
provider's prompt cache still covers them."""


def is_mode(value: object) -> TypeGuard[Mode]:
    return isinstance(value, str) and value in MODES


def parse_mode(value: str) -> Mode:
    """`value` as a mode (case and surrounding space ignored); ValueError names the modes."""
    text = value.strip().lower()
    if text == "accept_edits":
        text = "accept-edits"
    if not is_mode(text):
        raise ValueError(f"unknown mode {value!r}: use one of {', '.join(MODES)}")
    return text


def next_mode(mode: Mode) -> Mode:
    """The mode after `mode` in the Shift+Tab cycle."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


def with_plan_note(content: UserContent) -> UserContent:
    """`content` with PLAN_NOTE after it (text and parts alike)."""
    if isinstance(content, str):
        return f"{content}\n\n{PLAN_NOTE}"
    return [*content, {"type": "text", "text": PLAN_NOTE}]


def noted_inputs(inputs: list[ChatMessage], mode: Mode) -> list[ChatMessage]:
    """What the model sees of a turn's inputs: in plan mode the last user message carries
    PLAN_NOTE (a copy; the inputs as stored are not changed)."""
    if mode != "plan":
        return inputs
    for index in range(len(inputs) - 1, -1, -1):
        message = inputs[index]
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, (str, list)):
                noted: ChatMessage = {**message, "content": with_plan_note(content)}
                return [*inputs[:index], noted, *inputs[index + 1 :]]
    return inputs
