"""`/status` and `/init`: what this chat runs on, and a first AGENTS.md for the folder.

`/status` lists, one line each: the model, the endpoint (the configured base URL, the
bundled local model, or the server a remote chat drives), the folder the session's tools
run in, the sandbox (this machine's, as resolved; a server applies its own), the session
(id and title, or "new") and the context in use against the model's window.

`/init` sends one prompt that asks the model to look at the folder and write (or improve)
its AGENTS.md, the project instructions hermes reads into the system prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.errors import ConfigError
from hermes.tui.widgets.status_bar import human_tokens

if TYPE_CHECKING:
    from hermes.tui.command_screen import CommandScreen

INIT_PROMPT = (
    "Write an AGENTS.md for this project, at the root of {folder}. Look at the folder first "
    "(its layout, build and package files, tests, lint and format settings, README) and write "
    "what an agent working here needs: what the project is, how to build, test and lint it "
    "(exact commands), where things live, and the conventions the code follows. Keep it short "
    "and specific to this project. If an AGENTS.md exists, improve it instead of replacing "
    "what is still true."
)


def status_lines(chat: CommandScreen) -> list[tuple[str, str]]:
    """(label, value) pairs of `/status`, in the order shown."""
    bar = chat.status_bar
    model = chat.agent.model or "chosen by the server"
    if chat.remote is not None:
        endpoint = f"hermes serve at {chat.remote}"
        sandbox = "the server's own"
    else:
        endpoint = chat.settings.base_url or f"provider {chat.settings.provider} (no base_url set)"
        sandbox = _local_sandbox(chat)
    if chat.session_id is None:
        session = "new (the first message creates it)" + (f": “{chat.pending_title}”" if chat.pending_title else "")
    else:
        session = chat.session_id + (f" “{bar.title}”" if bar.title else "")
    window = bar.window_for(bar.model or chat.agent.model or "")
    context = f"~{human_tokens(bar.context_tokens)} of {human_tokens(window)} tokens ({bar.context_percent:.0f}%)"
    folder = chat.cwd if chat.remote is None else (bar.folder or "the server's working directory")
    return [
        ("model", model),
        ("endpoint", endpoint),
        ("folder", folder),
        ("sandbox", sandbox),
        ("session", session),
        ("context", context),
    ]


def _local_sandbox(chat: CommandScreen) -> str:
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    try:
        return resolve_sandbox(SandboxConfig.from_settings(chat.settings)).detail
    except ConfigError as exc:
        return f"unusable: {exc}"


def show_status(chat: CommandScreen, arg: str) -> None:
    pairs = status_lines(chat)
    width = max(len(label) for label, _ in pairs)
    chat.say("\n".join(f"{label.ljust(width)}  {value}" for label, value in pairs))


def init_agents_md(chat: CommandScreen, arg: str) -> None:
    """Ask the model for an AGENTS.md of this folder (extra wishes in `arg`)."""
    prompt = INIT_PROMPT.format(folder=chat.cwd)
    if arg:
        prompt += f"\n\nAlso: {arg}"
    chat.turns.submit(prompt)
