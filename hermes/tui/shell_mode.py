"""`!cmd` in the chat TUI: run a command in the working folder (agent/shell_passthrough.py),
show its output live in a ShellCard, and store command and output in the session as the
user's context for the next turn. No model call is made.

Invariants:
- one `!` command at a time, never beside a turn: while either runs, the other is refused
  with a notice (the typed text goes back into the prompt);
- Esc cancels the command's worker: run_command kills every process it started;
- the context is stored as a user message of the session (a new session is made for it
  when none is open), so it survives a resume and reaches the model once, in the history
  the next prompt is sent with;
- through `--server` the agent's tools run on the server, in its folder: a `!` command is
  refused there (it would run on this machine, in another folder than the model's tools).
"""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from textual.worker import Worker

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.shell_passthrough import UserCommandOutcome, run_user_command
from hermes.errors import HermesError
from hermes.store.records import MessageRecord, NewMessage, SessionRecord
from hermes.tui.command_screen import CommandScreen
from hermes.tui.turn_controller import TURN_RUNNING
from hermes.tui.widgets.shell_card import ShellCard
from hermes.tui.workers import RunsWorkers

if TYPE_CHECKING:

    from hermes.tui.widgets.activity import Activity


class ShellScreen(CommandScreen, RunsWorkers, Protocol):
    """What `!` needs of the chat screen (`ChatScreen` is one): a command screen that says
    whether it is remote, shows activity and runs workers."""

    @property
    def activity(self) -> Activity: ...

REMOTE_REFUSAL = (
    "✗ `!` commands are not run with --server: the model's tools run on the server, in its folder, "
    "so output from this machine would describe another folder. Run the command in a terminal here, "
    "or ask the model to run it there."
)
SHELL_RUNNING = "A `!` command is running — Esc stops it."


class _LocalStore(Protocol):
    """What storing a context needs of the local session store (`AsyncSessionStore`)."""

    async def create_session(
        self, *, source: str, model: str | None = None, title: str | None = None
    ) -> SessionRecord: ...

    async def append_message(self, session_id: str, message: NewMessage) -> MessageRecord: ...


class ShellMode:
    """The chat screen's `!` commands (see the module docstring)."""

    def __init__(self, chat: ShellScreen) -> None:
        self.chat = chat
        self.worker: Worker[None] | None = None
        self._launcher: ToolLauncher | None = None

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    def launcher(self) -> ToolLauncher:
        """The terminal tool's launcher for these settings (sandbox resolved once)."""
        if self._launcher is None:
            self._launcher = ToolLauncher.from_settings(self.chat.settings)
        return self._launcher

    def submit(self, command: str) -> None:
        chat = self.chat
        if not command:
            chat.say("type a command after ! (e.g. !git status)", "warning")
            return
        if chat.remote is not None:
            chat.say(REMOTE_REFUSAL, "error")
            return
        if self.running or chat.turns.busy:
            chat.notify(SHELL_RUNNING if self.running else TURN_RUNNING, severity="warning")
            chat.chat_input.load_text(f"!{command}")
            return
        cwd = Path(chat.cwd) if chat.cwd else Path.cwd()
        card = ShellCard(command, where=str(cwd))
        chat.transcript.add(card)
        chat.transcript.scroll_end(animate=False)
        self.worker = chat.run_worker(self._run(command, cwd, card), group="shell", exit_on_error=False)

    def stop(self) -> bool:
        """Esc: stop the running command (True), or nothing runs (False)."""
        if not self.running or self.worker is None:
            return False
        self.worker.cancel()
        return True

    async def _run(self, command: str, cwd: Path, card: ShellCard) -> None:
        chat = self.chat
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def shown(data: bytes) -> None:
            card.add_output(decoder.decode(data))
            chat.transcript.scroll_end(animate=False)

        chat.activity.start(f"running !{command}")
        try:
            outcome = await run_user_command(
                command, cwd, self.launcher(), session_id=chat.session_id or "", approve=chat.turns.ask_approval,
                output_limit=chat.settings.tool_output_limit, on_output=shown,
            )  # fmt: skip
        except asyncio.CancelledError:
            card.finish("⏹ stopped — its processes were ended; nothing was added to the conversation", failed=True)
            raise
        except HermesError as exc:
            card.finish(f"✗ {exc}", failed=True)
            return
        finally:
            chat.activity.stop()
        await self._finish(outcome, card)

    async def _finish(self, outcome: UserCommandOutcome, card: ShellCard) -> None:
        if outcome.context is None:
            card.finish(f"✗ {outcome.result}", failed=True)
            return
        exit_line = outcome.result.split("\n", 1)[0]
        try:
            await self._store(outcome.context, card.command)
        except HermesError as exc:
            card.finish(f"{exit_line} · ✗ not added to the conversation: {exc}", failed=True)
            return
        card.finish(f"{exit_line} · added to the conversation as context for your next message")

    async def _store(self, context: str, command: str) -> None:
        chat = self.chat
        store = cast("_LocalStore", chat.store)  # a local store: `submit` refuses remote sessions
        if chat.session_id is None:
            record = await store.create_session(
                source="tui", model=chat.agent.model, title=chat.pending_title or f"!{command}"[:60]
            )
            chat.session_id = record.id
            chat.pending_title = None
        await store.append_message(chat.session_id, NewMessage(role="user", content=context))
        await chat.refresh_session_info(tokens=False)
