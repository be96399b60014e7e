"""Slash commands of the chat TUI: one table of callables, prefix matching, completion.

Each `Command` carries its handler: a function of the chat screen and the argument string
(sync or async). `COMMANDS` is the table; its order is the order of `/help` and of the
completions. Matching is case-insensitive and accepts a unique prefix (`/ses` → `/sessions`).
A handler's `HermesError` is shown in the transcript; the app stays usable.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from rich.text import Text

from hermes.agent.instructions import ProjectInstructions
from hermes.errors import HermesError
from hermes.transcript_markdown import session_markdown
from hermes.tui import extension_commands, file_commands, mode_control, status_commands
from hermes.tui.external_editor import EditorFailed, edit_in_editor, editor_command
from hermes.tui.help_table import help_table, help_text
from hermes.tui.image_commands import image_command
from hermes.tui.turn_controller import TURN_RUNNING
from hermes.tui.widgets.notice import Notice

if TYPE_CHECKING:
    from hermes.tui.command_screen import CommandScreen

Handler: TypeAlias = Callable[["CommandScreen", str], Awaitable[None] | None]
"""What a command runs: `handler(chat, arg)`; `arg` is the stripped text after the name."""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    """Without the slash."""
    help: str
    run: Handler
    args: str = ""
    """Argument hint shown in completion and /help, e.g. "[title]"."""
    aliases: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


# -- the commands ---------------------------------------------------------------------------


def _new(chat: CommandScreen, arg: str) -> None:
    chat.new_session()
    if arg:
        chat.pending_title = arg
        chat.status_bar.title = arg


async def _fork(chat: CommandScreen, arg: str) -> None:
    if chat.refused_during_turn():
        return
    if chat.session_id is None:
        chat.say("nothing to fork yet — send a message first", "warning")
        return
    parent = await chat.store.get_session(chat.session_id)
    child = await chat.store.fork_session(chat.session_id, title=arg or None, source="tui")
    chat.session_id = child.id
    await chat.refresh_session_info()
    chat.say(f"⑂ forked “{parent.title or parent.id}” → “{child.title or child.id}” ({child.id})", "info")


def _sessions(chat: CommandScreen, arg: str) -> None:
    chat.action_sessions()


async def _title(chat: CommandScreen, arg: str) -> None:
    if not arg:
        current = chat.status_bar.title or "untitled"
        chat.say(f"title: {current}", "info")
        return
    if chat.session_id is None:
        chat.pending_title = arg
    else:
        await chat.store.rename_session(chat.session_id, arg)
    chat.status_bar.title = arg
    chat.say(f"title set to “{arg}”", "info")


async def _model(chat: CommandScreen, arg: str) -> None:
    if not arg:
        await _pick_model(chat)
        return
    await set_model(chat, arg)


async def _pick_model(chat: CommandScreen) -> None:
    from hermes.tui.screens.model_picker import ModelPicker

    chat.say(f"model: {chat.agent.model} (listing the providers' models…)", "info")
    try:
        listings = await chat.agent.list_models()
    except HermesError as exc:
        chat.say(f"✗ cannot list models: {exc}", "error")
        return
    if not any(listing.models for listing in listings):
        reasons = "; ".join(f"{x.provider}: {x.error}" for x in listings if x.error) or "none listed"
        chat.say(f"no models to pick from ({reasons}); /model NAME sets one", "info")
        return

    async def picked(model: str | None) -> None:
        if model:
            await set_model(chat, model)
        chat.chat_input.focus()

    chat.app.push_screen(ModelPicker(listings, chat.agent.model), picked)


async def set_model(chat: CommandScreen, arg: str) -> None:
    """The session's next turns use `arg` (a model id, or NAME/MODEL of a provider)."""
    if arg.startswith("default/"):
        arg = arg.removeprefix("default/")
    chat.agent.model = arg
    chat.status_bar.model = arg
    if chat.session_id is not None:
        await chat.store.update_session(chat.session_id, model=arg)
    chat.say(f"model set to {arg}", "info")


def _reasoning(chat: CommandScreen, arg: str) -> None:
    hidden = chat.transcript.has_class("-hide-reasoning")
    if arg in ("show", "on") and hidden or arg in ("hide", "off") and not hidden or not arg:
        chat.action_toggle_reasoning()


def _focus(chat: CommandScreen, arg: str) -> None:
    chat.action_toggle_focus()


def _copy(chat: CommandScreen, arg: str) -> None:
    answer = chat.transcript.last_answer()
    if answer is None:
        chat.say("no answer to copy yet", "warning")
        return
    chat.app.copy_to_clipboard(answer)
    chat.notify(f"Copied the last answer ({len(answer):,} characters).", timeout=2)


async def _export(chat: CommandScreen, arg: str) -> None:
    if chat.session_id is None:
        chat.say("nothing to export yet", "warning")
        return
    record = await chat.store.get_session(chat.session_id)
    messages = await chat.store.get_messages(record.id)
    # Default: the home's exports folder, never the project (a transcript may hold secrets).
    path = Path(chat.cwd) / Path(arg).expanduser() if arg else chat.settings.home / "exports" / f"hermes-{record.id}.md"
    try:
        if not arg:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(session_markdown(record, messages), encoding="utf-8")
    except OSError as exc:
        chat.say(f"✗ cannot write {path}: {exc.strerror}", "error")
        return
    chat.say(f"exported to {path}", "info")


def _context(chat: CommandScreen, arg: str) -> None:
    chat.say(context_report(chat.agent.instructions), "info")


def _theme(chat: CommandScreen, arg: str) -> None:
    chat.hermes_app.switch_theme(arg)


def _mcp(chat: CommandScreen, arg: str) -> None:
    if chat.mcp is None:
        chat.say("no MCP servers configured — add one with `hermes mcp add NAME -- COMMAND`", "info")
        return
    lines = Text("MCP servers\n", style="bold")
    for status in chat.mcp.statuses():
        detail = f": {status.message}" if status.message else ""
        lines.append(f"  {status.name}", style="bold")
        lines.append(f"  {status.status}{detail}  ({status.transport}: {status.target})\n")
        for tool in status.tools:
            lines.append(f"    {tool.name}", style="bold")
            lines.append(f"  {tool.description[:100]}\n" if tool.description else "\n")
    _show(chat, lines)


def _compact(chat: CommandScreen, arg: str) -> None:
    if chat.turns.busy:
        chat.notify(TURN_RUNNING, severity="warning")
        return
    if chat.session_id is None:
        chat.say("nothing to compact yet — send a message first", "warning")
        return
    chat.turns.compact(chat.session_id)


KEYS: tuple[tuple[str, str], ...] = (
    ("Enter / Shift+Enter, Ctrl+J", "send / new line"),
    ("Up / Down", "prompt history"),
    ("Esc, Ctrl+C", "interrupt the turn (Ctrl+C twice quits)"),
    ("Enter during a turn", "queue the prompt; Alt+Up takes it back"),
    ("Ctrl+S", "sessions"),
    ("Ctrl+N", "new session"),
    ("Ctrl+R / Ctrl+O", "reasoning / answer-only view"),
    ("Ctrl+G", "open / close every tool result and reasoning"),
    ("Tab", "completes a / command; the focus stays in the prompt"),
    ("PgUp / PgDn, Ctrl+Home / End", "scroll the transcript"),
    ("Ctrl+T", "light / dark theme"),
    ("Ctrl+F", "find in the transcript (Enter / Shift+Enter: next / previous)"),
    ("Ctrl+X Ctrl+E", "write the prompt in $VISUAL / $EDITOR"),
    ("Shift+Tab", "next mode: default → accept-edits → plan (read-only)"),
    ("!command", "run a shell command here; its output is context for your next message"),
)
"""The keys `/help` lists after the commands."""


def _help(chat: CommandScreen, arg: str) -> None:
    found = extension_commands.catalogs(chat)
    custom = [(f"/{e.name} {e.args}".rstrip(), e.help) for e in extension_commands.entries(found, builtin_names())]
    warnings = extension_commands.clashes(found, builtin_names())
    warnings += [problem.line() for problem in found.commands.problems[:10]]
    sections = [("Commands", [(c.usage, c.help) for c in COMMANDS])]
    if custom:
        sections.append(("Custom commands and skills", custom))
    if warnings:
        sections.append(("Not offered", [("⚠", line) for line in warnings]))
    sections.append(("Keys", list(KEYS)))
    notice = Notice(help_text(sections), "info")  # the plain text, for find
    notice.update(help_table(sections))
    chat.transcript.add(notice)


def _skills(chat: CommandScreen, arg: str) -> None:
    _show(chat, extension_commands.skills_report(extension_commands.catalogs(chat), builtin_names()))


def _quit(chat: CommandScreen, arg: str) -> None:
    chat.app.exit(0)


def _show(chat: CommandScreen, lines: Text) -> None:
    notice = Notice("", "info")
    notice.update(lines)
    chat.transcript.add(notice)


def _find(chat: CommandScreen, arg: str) -> None:
    chat.find_bar.open(arg or None)


NO_EDITOR = "no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=nano), then Ctrl+X Ctrl+E or /editor"


def compose_in_editor(chat: CommandScreen, text: str) -> None:
    """Edit `text` in $VISUAL / $EDITOR; what the editor saved becomes the prompt."""
    try:
        argv = editor_command()
        if argv is None:
            chat.say(NO_EDITOR, "warning")
            return
        edited = edit_in_editor(chat.app, text, argv)
    except EditorFailed as exc:
        chat.say(f"✗ {exc}", "error")
        return
    chat.chat_input.clear()
    chat.chat_input.insert(edited)
    chat.chat_input.focus()


def _editor(chat: CommandScreen, arg: str) -> None:
    compose_in_editor(chat, arg)


COMMANDS: tuple[Command, ...] = (
    Command("new", "start a new session", _new, aliases=("clear",)),
    Command("fork", "fork this session and continue in the copy", _fork, "[title]", ("branch",)),
    Command("sessions", "browse, search, open, rename or delete sessions", _sessions, aliases=("resume", "switch")),
    Command("title", "show or set this session's title", _title, "[title]"),
    Command("model", "change the model (no name: pick from each provider's models)", _model, "[name]"),
    Command("reasoning", "show or hide reasoning blocks", _reasoning, "[show|hide]"),
    Command("focus", "answer-only view: hide reasoning and tool cards", _focus),
    Command("copy", "copy the last answer to the clipboard (OSC 52)", _copy),
    Command("export", "write this session as Markdown", _export, "[path]"),
    Command("find", "search this transcript (Ctrl+F)", _find, "[text]"),
    Command("image", "attach an image to the next prompt (Alt+X removes the last)", image_command, "[path|clear]"),
    Command("editor", "write the prompt in $VISUAL or $EDITOR (Ctrl+X Ctrl+E)", _editor, "[text]"),
    Command("mode", "show or set the mode: default, accept-edits, plan (Shift+Tab cycles)", mode_control.mode_command,
            "[default|accept-edits|plan]"),  # fmt: skip
    Command("plan", "plan mode: read-only tools, the model plans (/mode default leaves it)", mode_control.plan_command),
    Command("context", "show the project instructions (AGENTS.md) in the system prompt", _context),
    Command("theme", "switch between dark and light themes", _theme, "[dark|light]"),
    Command("mcp", "list MCP servers and their tools", _mcp),
    Command("skills", "list the skills the model can load, with where each comes from", _skills),
    Command("compact", "summarise older messages now to free the context window", _compact),
    Command("undo", "restore files to before the last N turns and hide those turns", file_commands.undo, "[N]"),
    Command("redo", "bring back the turns (and files) of the last /undo", file_commands.redo),
    Command("diff", "show what the last turn (or turn N) changed in the files", file_commands.diff, "[N]"),
    Command("status", "show model, endpoint, folder, sandbox, session and context use", status_commands.show_status),
    Command("init", "ask the model to write an AGENTS.md for this folder", status_commands.init_agents_md, "[wishes]"),
    Command("help", "list commands and keys", _help),
    Command("quit", "leave hermes", _quit, aliases=("exit",)),
)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    command: Command | None
    """None when the name matched nothing (or several commands)."""
    name: str
    """The name as typed."""
    arg: str
    candidates: tuple[Command, ...] = ()
    """Commands an ambiguous prefix could mean."""


def is_command(text: str) -> bool:
    """Slash commands start with one "/" followed by a letter (so "/etc/hosts?" is a prompt)."""
    stripped = text.lstrip()
    return len(stripped) > 1 and stripped[0] == "/" and stripped[1].isalpha() and "/" not in stripped.split()[0][1:]


def builtin_names() -> frozenset[str]:
    """Every built-in name and alias: a custom command or skill never takes one of them."""
    return frozenset(name for command in COMMANDS for name in (command.name, *command.aliases))


def custom_commands(chat: CommandScreen) -> tuple[Command, ...]:
    """The chat folder's custom commands and the agent's skills, as commands (built-ins win)."""
    reserved = builtin_names()

    def runner(name: str) -> Handler:
        return lambda chat, arg: extension_commands.invoke(chat, name, arg, reserved)

    found = extension_commands.catalogs(chat)
    return tuple(
        Command(entry.name, entry.help, runner(entry.name), entry.args)
        for entry in extension_commands.entries(found, reserved)
    )


def complete(prefix: str, extra: Sequence[Command] = ()) -> list[Command]:
    """Commands (built-in, then `extra`) whose name or alias starts with `prefix` (without the slash)."""
    prefix = prefix.lower()
    return [
        c for c in (*COMMANDS, *extra) if c.name.startswith(prefix) or any(a.startswith(prefix) for a in c.aliases)
    ]


def parse(text: str, extra: Sequence[Command] = ()) -> ParsedCommand:
    head, _, arg = text.strip()[1:].partition(" ")
    name = head.lower()
    arg = arg.strip()
    for command in (*COMMANDS, *extra):
        if name == command.name or name in command.aliases:
            return ParsedCommand(command, head, arg)
    matches = complete(name, extra)
    if len(matches) == 1:
        return ParsedCommand(matches[0], head, arg)
    return ParsedCommand(None, head, arg, tuple(matches))


async def run(chat: CommandScreen, text: str) -> None:
    """Run a slash command to its end (its notices are shown when this returns)."""
    parsed = parse(text, custom_commands(chat))
    if parsed.command is None:
        if parsed.candidates:
            names = ", ".join(c.usage for c in parsed.candidates)
            chat.say(f"/{parsed.name} is ambiguous: {names}", "warning")
        else:
            chat.say(f"unknown command /{parsed.name} — /help lists commands", "warning")
        return
    try:
        outcome = parsed.command.run(chat, parsed.arg)
        if inspect.isawaitable(outcome):
            await outcome
    except HermesError as exc:
        chat.say(f"✗ {exc}", "error")


def context_report(instructions: ProjectInstructions | None) -> str:
    """What `/context` prints: each AGENTS.md loaded, its size, and what the cap cut."""
    if instructions is None or instructions.max_bytes <= 0:
        return "project instructions: off (instructions_max_bytes = 0)"
    if not instructions.files:
        return "project instructions: none (no AGENTS.md in $HERMES_HOME or from the repository root to here)"
    head = (
        f"project instructions: {instructions.included_bytes:,} of at most "
        f"{instructions.max_bytes:,} bytes in the system prompt of new sessions"
    )
    lines = [head]
    for item in instructions.files:
        if item.error is not None:
            state = f"not loaded: {item.error}"
        elif item.truncated:
            state = f"{item.included:,} of {item.size:,} bytes (cut)"
        else:
            state = f"{item.size:,} bytes"
        lines.append(f"  {item.path}  {state}")
    if instructions.truncated:
        lines.append("  the rest was cut: raise instructions_max_bytes to load it")
    return "\n".join(lines)
