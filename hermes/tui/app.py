"""The chat TUI: `make_app(agent, store, settings)` builds it for `hermes chat` and for tests.

Layout (top to bottom): status bar, transcript, activity line, command completions,
prompt, footer. A turn runs in an exclusive worker that iterates `agent.run_turn(...)`
and hands each event to a `TurnRenderer`; Esc (or Ctrl+C) calls the turn's `TurnInterrupt`,
and the engine winds the turn down and ends it with TurnCompleted("interrupted"). If the
engine has not finished one second after an interrupt, the UI marks the turn interrupted
anyway, cancels the worker (the engine still cleans up) and is usable again.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from hermes.agent.context import estimate_tokens, resume_history
from hermes.agent.events import ContextCompacted, TurnCompleted, TurnStarted
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.types import (
    ApprovalDecision,
    ApprovalRequest,
    TurnRequest,
    TurnResult,
)
from hermes.config import Settings
from hermes.errors import HermesError
from hermes.store.api import AsyncSessionStore
from hermes.store.records import MessageRecord, SessionRecord
from hermes.tui import commands
from hermes.tui.export import session_markdown
from hermes.tui.renderer import (
    TurnCallbacks,
    TurnRenderer,
    compacted_notice,
    history_widgets,
)
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.widgets.activity import SILENCE_AFTER, Activity
from hermes.tui.widgets.chat_input import ChatInput
from hermes.tui.widgets.command_menu import CommandMenu
from hermes.tui.widgets.history_head import HistoryHead
from hermes.tui.widgets.notice import Notice, NoticeKind
from hermes.tui.widgets.queued_prompts import QueuedPrompts
from hermes.tui.widgets.status_bar import StatusBar
from hermes.tui.widgets.transcript import Transcript
from hermes.tui.widgets.user_message import UserMessage

if TYPE_CHECKING:
    from hermes.agent.engine import Agent
    from hermes.agent.mcp import McpManager

HISTORY_PAGE = 16
"""Messages rendered when a session opens (a screenful or more); older ones load when the
user scrolls to the top, clicks the head line, or presses Ctrl+Home."""
FIRST_PAINT = 8
"""Messages shown before the first paint of an opened session."""
OLDER_PAGE = 100
"""Messages each "load more" (Ctrl+Home, click) adds."""
QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C quits."""
INTERRUPT_GRACE = 1.0
"""Seconds the engine gets to wind a turn down before the UI declares it interrupted."""
DARK_THEME = "textual-dark"
LIGHT_THEME = "textual-light"


class HermesApp(App[int]):
    """The chat app. Build it with `make_app`."""

    CSS_PATH = "hermes.tcss"
    TITLE = "hermes"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("escape", "interrupt", "Stop", show=True),
        Binding("ctrl+c", "ctrl_c", "Stop/quit", show=False, priority=True),
        Binding("ctrl+s", "sessions", "Sessions"),
        Binding("ctrl+n", "new_session", "New"),
        Binding("ctrl+r", "toggle_reasoning", "Reasoning"),
        Binding("ctrl+o", "toggle_focus", "Answer only"),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
        Binding("alt+up", "edit_queued", "Edit queued", show=False),
        Binding("pageup", "scroll_transcript(-1)", show=False, priority=True),
        Binding("pagedown", "scroll_transcript(1)", show=False, priority=True),
        Binding("ctrl+home", "transcript_top", show=False, priority=True),
        Binding("ctrl+end", "transcript_bottom", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(
        self,
        agent: Agent,
        store: AsyncSessionStore,
        settings: Settings,
        *,
        session_id: str | None = None,
        approval_timeout: float = 60.0,
        theme: str | None = None,
        cwd: str | None = None,
        silence_warning: float = SILENCE_AFTER,
    ) -> None:
        super().__init__()
        self.silence_warning = silence_warning
        self.agent = agent
        self.store = store
        self.settings = settings
        self.session_id = session_id
        self.approval_timeout = approval_timeout
        self.cwd = cwd
        self.theme = theme or DARK_THEME
        self.pending_title: str | None = None
        self.turn_worker: Worker[None] | None = None
        self.turn_interrupt: TurnInterrupt | None = None
        self.renderer: TurnRenderer | None = None
        self.last_result: TurnResult | None = None
        self._older: list[MessageRecord] = []
        self._last_ctrl_c = 0.0
        self.startup_notice: str | None = None
        """Shown once in the transcript when the app starts (e.g. which provider is in use)."""
        self.mcp: McpManager | None = None
        """MCP servers to start (in the background, at mount) into the agent's tools; closed by the caller."""
        self.mcp_worker: Worker[None] | None = None
        self.queued: list[str] = []
        """Prompts submitted while a turn (or /compact) ran, oldest first; sent one per turn
        when the running one ends, handed back to the prompt when it is interrupted."""
        self.compact_worker: Worker[None] | None = None
        self._interrupted = False
        """The user interrupted the running turn: queued prompts are not sent on their own."""

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        menu = CommandMenu(id="menu")
        yield StatusBar(id="status")
        yield Transcript(id="transcript")
        yield Activity(silence_after=self.silence_warning, id="activity")
        yield menu
        yield QueuedPrompts(id="queued")
        yield ChatInput(menu=menu, id="input")
        yield Footer()

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def activity(self) -> Activity:
        return self.query_one("#activity", Activity)

    @property
    def chat_input(self) -> ChatInput:
        return self.query_one("#input", ChatInput)

    @property
    def menu(self) -> CommandMenu:
        return self.query_one("#menu", CommandMenu)

    @property
    def queue_view(self) -> QueuedPrompts:
        return self.query_one("#queued", QueuedPrompts)

    @property
    def turn_running(self) -> bool:
        return self.renderer is not None and not self.renderer.done

    @property
    def busy(self) -> bool:
        """A turn or a `/compact` is running: new prompts are queued."""
        return self.turn_running or (self.compact_worker is not None and not self.compact_worker.is_finished)

    async def on_mount(self) -> None:
        self.status_bar.window_for = self.agent.context_window
        self.status_bar.model = self.agent.model
        self.status_bar.yolo = self.settings.yolo
        if self.startup_notice:
            self.say(self.startup_notice)
        if self.agent.instructions is not None and self.agent.instructions.notice:
            self.say(self.agent.instructions.notice, "warning")
        if self.mcp is not None:
            self.mcp_worker = self.run_worker(self._start_mcp(self.mcp), group="mcp", exit_on_error=False)
        if self.session_id is not None:
            await self.open_session(self.session_id)
        self.chat_input.focus()

    # -- output helpers ------------------------------------------------------------------

    def say(self, text: str, kind: NoticeKind = "info") -> Notice:
        notice = Notice(text, kind)
        self.transcript.add(notice)
        return notice

    # -- sending --------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        text = event.value.strip("\n")
        if commands.is_command(text):
            await self.run_command(text)
            return
        if self.busy or self.queued:
            self.queue_prompt(text)
            return
        self.send(text)

    # -- the queue ------------------------------------------------------------------------

    def queue_prompt(self, text: str) -> None:
        """Keep `text` to send when the running turn ends (as Claude Code and Codex do)."""
        self.queued.append(text)
        self.queue_view.show_prompts(self.queued)
        if not self.busy:
            self.call_later(self._send_next_queued)

    def action_edit_queued(self) -> None:
        """Take the newest queued prompt back into the prompt box (to edit or drop it)."""
        if not self.queued:
            return
        text = self.queued.pop()
        self.queue_view.show_prompts(self.queued)
        current = self.chat_input.text
        self.chat_input.load_text(f"{text}\n{current}" if current.strip() else text)
        self.chat_input.focus()

    def _send_next_queued(self) -> None:
        if self.busy or not self.queued:
            return
        text = self.queued.pop(0)
        self.queue_view.show_prompts(self.queued)
        self.send(text)

    def _return_queued_to_input(self) -> None:
        """After an interrupt the user decides: queued prompts go back into the prompt box."""
        if not self.queued:
            return
        texts = [*self.queued]
        if self.chat_input.text.strip():
            texts.append(self.chat_input.text)
        self.queued.clear()
        self.queue_view.show_prompts([])
        self.chat_input.load_text("\n".join(texts))
        self.notify("Interrupted — the queued prompts are back in the prompt box.", timeout=3)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The next queued prompt starts only once the previous worker has fully ended
        # (turn workers are exclusive: starting one earlier would cancel the old one).
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        if event.worker is not self.turn_worker and event.worker is not self.compact_worker:
            return
        if self._interrupted:
            self._interrupted = False
            self._return_queued_to_input()
        elif self.queued:
            self.call_later(self._send_next_queued)

    def send(self, text: str) -> Worker[None]:
        """Show the prompt and start a turn for it."""
        self._interrupted = False
        renderer = self.begin_turn(text)
        self.turn_interrupt = TurnInterrupt()
        # textual types a decorated coroutine's worker as Worker[Never]
        self.turn_worker = cast("Worker[None]", self._run_turn(text, renderer, self.turn_interrupt))
        return self.turn_worker

    def begin_turn(self, text: str) -> TurnRenderer:
        """Show the prompt and return the renderer the turn's events go to."""
        self.transcript.add(UserMessage(text))
        self.transcript.scroll_end(animate=False)
        self.renderer = TurnRenderer(
            self.transcript,
            self.activity,
            TurnCallbacks(
                on_started=self._turn_started, on_completed=self._turn_completed, on_compacted=self._compacted
            ),
            stall_after=self.settings.tool_stall_warning,
            show_reasoning_live=not self.transcript.has_class("-hide-reasoning"),
        )
        self.activity.start("thinking")
        self.status_bar.start_turn()
        return self.renderer

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _run_turn(self, text: str, renderer: TurnRenderer, interrupt: TurnInterrupt) -> None:
        request = TurnRequest(
            input=text,
            session_id=self.session_id,
            source="tui",
            title=self.pending_title if self.session_id is None else None,
            approve=self._approve,
            yolo=self.settings.yolo,
            cwd=self.cwd,
        )
        try:
            if self.mcp_worker is not None and not self.mcp_worker.is_finished:
                await self.mcp_worker.wait()  # the first turn gets the MCP tools
            async for event in self.agent.run_turn(request, interrupt=interrupt):
                opens_session = isinstance(event, TurnStarted) and event.session_id != self.session_id
                renderer.handle(event)
                # The status bar's title and tokens come from the store: read once the
                # turn's session exists, and again when it ends (a first turn titles it).
                if opens_session:
                    await self._refresh_session_info()
                elif isinstance(event, TurnCompleted):
                    await self._refresh_session_info(tokens=False)
        except asyncio.CancelledError:
            renderer.interrupted()
            raise
        except HermesError as exc:
            renderer.failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - the UI's edge: show it, keep the app usable
            renderer.failed(f"internal error: {exc!r}")
            self.log.error(exc)
        finally:
            if self.renderer is renderer:
                self._turn_finished()

    def _turn_started(self, event: TurnStarted) -> None:
        if self.session_id != event.session_id:
            self.session_id = event.session_id
            self.pending_title = None
        self.status_bar.model = event.model

    def _turn_completed(self, result: TurnResult) -> None:
        self.last_result = result
        self.session_id = result.session_id or self.session_id
        usage = result.usage
        self.status_bar.input_tokens += usage.input_tokens
        self.status_bar.output_tokens += usage.output_tokens
        if result.context_tokens:
            self.status_bar.context_tokens = result.context_tokens  # the last request's prompt tokens
        self._turn_finished()

    def _compacted(self, event: ContextCompacted) -> None:
        self.status_bar.context_tokens = event.after_tokens

    def _turn_finished(self) -> None:
        self.status_bar.end_turn()
        self.activity.stop()
        self.renderer = None

    # -- interrupting ---------------------------------------------------------------------

    def action_interrupt(self) -> None:
        if self.menu.is_open:
            self.menu.hide()
            return
        if self.compact_worker is not None and not self.compact_worker.is_finished:
            self._interrupted = True
            self.compact_worker.cancel()
            return
        if not self.turn_running or self.turn_worker is None or self.turn_interrupt is None:
            return
        renderer, worker = self.renderer, self.turn_worker
        self.activity.set_phase("interrupting", waiting_for_model=False, warning=True)
        self._interrupted = True
        self.turn_interrupt.interrupt()
        self.set_timer(INTERRUPT_GRACE, lambda: self._force_interrupted(renderer, worker))

    def _force_interrupted(self, renderer: TurnRenderer | None, worker: Worker[None]) -> None:
        """The engine did not finish within the grace: stop waiting for it."""
        if renderer is not None and renderer is self.renderer and not renderer.done:
            renderer.interrupted()
            self._turn_finished()
        if worker.is_running:
            worker.cancel()

    def action_ctrl_c(self) -> None:
        now = time.monotonic()
        if now - self._last_ctrl_c <= QUIT_WINDOW:
            self.exit(0)
            return
        self._last_ctrl_c = now
        if self.turn_running:
            self.action_interrupt()
            self.notify("Interrupted. Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)
        else:
            if self.chat_input.text:
                self.chat_input.clear()
            self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    # -- approvals ------------------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The engine's approval callback: a modal, denied on timeout or interrupt."""
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

        def decided(decision: ApprovalDecision | None) -> None:
            if not future.done():
                future.set_result(decision or ApprovalDecision.DENY)

        screen = ApprovalScreen(request, timeout=self.approval_timeout)
        self.push_screen(screen, decided)
        try:
            decision = await asyncio.wait_for(future, self.approval_timeout + 1.0)
        except TimeoutError:
            decision = ApprovalDecision.DENY
        finally:
            if screen.is_current:
                screen.dismiss(ApprovalDecision.DENY)
        if decision == ApprovalDecision.DENY:
            self.say(f"✗ denied: {request.command}", "warning")
        elif decision == ApprovalDecision.SESSION:
            self.say(f"✓ allowed for this session: {request.reason}", "info")
        return decision

    # -- sessions -------------------------------------------------------------------------

    async def _refresh_session_info(self, *, tokens: bool = True) -> None:
        """The status bar's title (and with `tokens`, its token counts) from the stored session.

        A store that cannot be read leaves the bar as it is and says why.
        """
        bar = self.status_bar
        if self.session_id is None:
            bar.title = self.pending_title or ""
            return
        session_id = self.session_id
        try:
            record = await self.store.find_session(session_id)
        except HermesError as exc:
            self.say(f"✗ {exc}", "error")
            return
        if record is None or record.id != self.session_id:
            return  # gone, or another session was opened meanwhile
        bar.title = record.title or ""
        if tokens:
            bar.input_tokens = record.input_tokens
            bar.output_tokens = record.output_tokens

    def _refused_during_turn(self) -> bool:
        """True (and the user is told) when a turn is running."""
        if self.turn_running:
            self.notify("A turn is running — Esc to interrupt it first.", severity="warning")
            return True
        return False

    async def open_session(self, session_id: str) -> bool:
        """Show a stored session (its newest messages; older ones on demand) and continue it."""
        if self._refused_during_turn():
            return False
        try:
            record = await self.store.get_session(session_id)
            messages = await self.store.get_messages(session_id)
        except HermesError as exc:
            self.say(f"✗ {exc}", "error")
            return False
        if self._refused_during_turn():  # a prompt was sent while the session loaded
            return False
        self.session_id = record.id
        self.pending_title = None
        transcript = self.transcript
        transcript.remove_children()
        # First paint: the newest FIRST_PAINT messages; the rest of the first page is
        # prepended right after, above the fold, so the screen is usable at once.
        shown = self._tail(messages, FIRST_PAINT)
        self._older = messages[: len(messages) - len(shown)]
        if self._older:
            transcript.add(HistoryHead(len(self._older)))
        transcript.add(*history_widgets(shown, stall_after=self.settings.tool_stall_warning))
        if self._older:
            self.call_after_refresh(self.load_older, HISTORY_PAGE - len(shown))
        transcript.add(Notice(f"resumed “{record.title or record.id}” · {len(messages)} messages", "info"))
        self.status_bar.model = self.agent.model
        self.run_worker(self._estimate_context(record), group="context-estimate", exclusive=True)
        self.status_bar.turn_seconds = None
        bar = self.status_bar
        bar.title = record.title or ""
        bar.input_tokens = record.input_tokens
        bar.output_tokens = record.output_tokens
        transcript.scroll_end(animate=False)
        return True

    async def _estimate_context(self, record: SessionRecord) -> None:
        """What the next request will hold: the latest summary and the messages after it."""
        try:
            history = await resume_history(self.store, record.id)
        except HermesError as exc:  # the estimate is a nicety: say why it is missing, keep the app
            self.say(f"✗ {exc}", "error")
            return
        self.status_bar.context_tokens = estimate_tokens(
            [{"role": "system", "content": record.system_prompt or ""}, *history]
        )

    @on(HistoryHead.LoadRequested)
    @on(Transcript.ReachedTop)
    def _load_older(self) -> None:
        self.load_older()

    @staticmethod
    def _tail(messages: list[MessageRecord], count: int) -> list[MessageRecord]:
        """The last `count` messages, widened so tool results never lose their call."""
        shown = messages[-count:] if count > 0 else []
        while shown and shown[0].role == "tool" and len(shown) < len(messages):
            shown = messages[-(len(shown) + 1) :]
        return shown

    def load_older(self, count: int = 0) -> None:
        """Prepend up to `count` (default OLDER_PAGE) older messages above the transcript."""
        if not self._older:
            return
        page = self._tail(self._older, count or OLDER_PAGE)
        self._older = self._older[: len(self._older) - len(page)]
        transcript = self.transcript
        transcript.add_before_first(history_widgets(page, stall_after=self.settings.tool_stall_warning))
        for head in transcript.query(HistoryHead):
            if self._older:
                head.set_hidden(len(self._older))
            else:
                head.remove()

    def new_session(self) -> None:
        if self.turn_running:
            self.notify("A turn is running — Esc to interrupt it first.", severity="warning")
            return
        self.session_id = None
        self.pending_title = None
        self._older = []
        self.transcript.remove_children()
        bar = self.status_bar
        bar.title = ""
        bar.input_tokens = bar.output_tokens = bar.context_tokens = 0
        bar.turn_seconds = None
        self.say("new session", "info")

    def action_sessions(self) -> None:
        if self.turn_running:
            self.notify("A turn is running — Esc to interrupt it first.", severity="warning")
            return

        async def picked(session_id: str | None) -> None:
            try:
                deleted = self.session_id is not None and await self.store.find_session(self.session_id) is None
            except HermesError as exc:
                self.say(f"✗ {exc}", "error")
                deleted = False
            if deleted:
                self.new_session()  # the open session was deleted in the picker
            if session_id:
                await self.open_session(session_id)
            else:
                await self._refresh_session_info(tokens=False)  # it may have been renamed
            self.chat_input.focus()

        self.push_screen(SessionPicker(self.store, current=self.session_id), picked)

    def action_new_session(self) -> None:
        self.new_session()

    # -- view toggles ---------------------------------------------------------------------

    def action_toggle_reasoning(self) -> None:
        hidden = self.transcript.toggle_class("-hide-reasoning").has_class("-hide-reasoning")
        self.notify("Reasoning hidden." if hidden else "Reasoning shown.", timeout=1.5)

    def action_toggle_focus(self) -> None:
        focus = self.transcript.toggle_class("-focus").has_class("-focus")
        self.notify("Answer-only view." if focus else "Full view.", timeout=1.5)

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT_THEME if self.theme == DARK_THEME else DARK_THEME

    def action_scroll_transcript(self, direction: int) -> None:
        if direction < 0:
            self.transcript.page_up()
        else:
            self.transcript.scroll_page_down()

    def action_transcript_top(self) -> None:
        if self._older:
            self.load_older()
        self.transcript.scroll_home(animate=False)

    def action_transcript_bottom(self) -> None:
        self.transcript.scroll_end(animate=False)

    # -- slash commands -------------------------------------------------------------------

    async def run_command(self, text: str) -> None:
        """Run a slash command to its end (its notices are shown when this returns)."""
        parsed = commands.parse(text)
        if parsed.command is None:
            if parsed.candidates:
                names = ", ".join(c.usage for c in parsed.candidates)
                self.say(f"/{parsed.name} is ambiguous: {names}", "warning")
            else:
                self.say(f"unknown command /{parsed.name} — /help lists commands", "warning")
            return
        handler = getattr(self, f"cmd_{parsed.command.name}")
        try:
            outcome = handler(parsed.arg)
            if inspect.isawaitable(outcome):
                await outcome
        except HermesError as exc:
            self.say(f"✗ {exc}", "error")

    def cmd_new(self, arg: str) -> None:
        self.new_session()
        if arg:
            self.pending_title = arg
            self.status_bar.title = arg

    async def cmd_fork(self, arg: str) -> None:
        if self.turn_running:
            self.notify("A turn is running — Esc to interrupt it first.", severity="warning")
            return
        if self.session_id is None:
            self.say("nothing to fork yet — send a message first", "warning")
            return
        parent = await self.store.get_session(self.session_id)
        child = await self.store.fork_session(self.session_id, title=arg or None, source="tui")
        self.session_id = child.id
        await self._refresh_session_info()
        self.say(f"⑂ forked “{parent.title or parent.id}” → “{child.title or child.id}” ({child.id})", "info")

    def cmd_sessions(self, arg: str) -> None:
        self.action_sessions()

    async def cmd_title(self, arg: str) -> None:
        if not arg:
            current = self.status_bar.title or "untitled"
            self.say(f"title: {current}", "info")
            return
        if self.session_id is None:
            self.pending_title = arg
        else:
            await self.store.rename_session(self.session_id, arg)
        self.status_bar.title = arg
        self.say(f"title set to “{arg}”", "info")

    async def cmd_model(self, arg: str) -> None:
        if not arg:
            self.say(f"model: {self.agent.model}", "info")
            return
        self.agent.model = arg
        self.status_bar.model = arg
        if self.session_id is not None:
            await self.store.update_session(self.session_id, model=arg)
        self.say(f"model set to {arg}", "info")

    def cmd_reasoning(self, arg: str) -> None:
        hidden = self.transcript.has_class("-hide-reasoning")
        if arg in ("show", "on") and hidden or arg in ("hide", "off") and not hidden or not arg:
            self.action_toggle_reasoning()

    def cmd_focus(self, arg: str) -> None:
        self.action_toggle_focus()

    def cmd_copy(self, arg: str) -> None:
        answer = self.transcript.last_answer()
        if answer is None:
            self.say("no answer to copy yet", "warning")
            return
        self.copy_to_clipboard(answer)
        self.notify(f"Copied the last answer ({len(answer):,} characters).", timeout=2)

    async def cmd_export(self, arg: str) -> None:
        if self.session_id is None:
            self.say("nothing to export yet", "warning")
            return
        record = await self.store.get_session(self.session_id)
        messages = await self.store.get_messages(record.id)
        path = Path(arg).expanduser() if arg else Path(self.cwd or Path.cwd()) / f"hermes-{record.id}.md"
        try:
            path.write_text(session_markdown(record, messages), encoding="utf-8")
        except OSError as exc:
            self.say(f"✗ cannot write {path}: {exc.strerror}", "error")
            return
        self.say(f"exported to {path}", "info")

    def cmd_context(self, arg: str) -> None:
        self.say(commands.context_report(self.agent.instructions), "info")

    def cmd_theme(self, arg: str) -> None:
        if arg in ("dark", "light"):
            self.theme = DARK_THEME if arg == "dark" else LIGHT_THEME
        else:
            self.action_toggle_theme()

    async def _start_mcp(self, mcp: McpManager) -> None:
        statuses = await mcp.start(self.agent.tools)
        for status in statuses:
            if status.failed:
                self.say(f"✗ {status.line()}", "warning")
        connected = [
            f"{s.name} ({len(s.tools)} tool{'s' if len(s.tools) != 1 else ''})"
            for s in statuses
            if s.status == "connected"
        ]
        if connected:
            self.say("MCP: " + ", ".join(connected) + " — /mcp lists them")

    def cmd_mcp(self, arg: str) -> None:
        if self.mcp is None:
            self.say("no MCP servers configured — add one with `hermes mcp add NAME -- COMMAND`", "info")
            return
        lines = Text("MCP servers\n", style="bold")
        for status in self.mcp.statuses():
            detail = f": {status.message}" if status.message else ""
            lines.append(f"  {status.name}", style="bold")
            lines.append(f"  {status.status}{detail}  ({status.transport}: {status.target})\n")
            for tool in status.tools:
                lines.append(f"    {tool.name}", style="bold")
                lines.append(f"  {tool.description[:100]}\n" if tool.description else "\n")
        notice = Notice("", "info")
        notice.update(lines)
        self.transcript.add(notice)

    def cmd_compact(self, arg: str) -> None:
        if self.busy:
            self.notify("A turn is running — Esc to interrupt it first.", severity="warning")
            return
        if self.session_id is None:
            self.say("nothing to compact yet — send a message first", "warning")
            return
        self.activity.start("compacting the context")
        self.compact_worker = self.run_worker(self._compact(self.session_id), group="compact", exit_on_error=False)

    async def _compact(self, session_id: str) -> None:
        try:
            event = await self.agent.compact(session_id)
        except HermesError as exc:
            self.say(f"✗ compaction failed: {exc}", "error")
            return
        except asyncio.CancelledError:
            self.say("⏹ compaction interrupted — nothing changed", "interrupted")
            raise
        finally:
            self.activity.stop()
        if event is None:
            self.say("nothing to compact yet — the conversation is short", "info")
            return
        self.transcript.add(compacted_notice(event))
        self.transcript.scroll_end(animate=False)
        self.status_bar.context_tokens = event.after_tokens

    def cmd_help(self, arg: str) -> None:
        lines = Text("Commands\n", style="bold")
        for command in commands.COMMANDS:
            lines.append(f"  {command.usage:<22}", style="bold")
            lines.append(f"{command.help}\n")
        lines.append("Keys\n", style="bold")
        for keys, what in (
            ("Enter / Shift+Enter, Ctrl+J", "send / new line"),
            ("Up / Down", "prompt history"),
            ("Esc, Ctrl+C", "interrupt the turn (Ctrl+C twice quits)"),
            ("Enter during a turn", "queue the prompt; Alt+Up takes it back"),
            ("Ctrl+S", "sessions"),
            ("Ctrl+N", "new session"),
            ("Ctrl+R / Ctrl+O", "reasoning / answer-only view"),
            ("PgUp / PgDn, Ctrl+Home / End", "scroll the transcript"),
            ("Ctrl+T", "light / dark theme"),
        ):
            lines.append(f"  {keys:<30}", style="bold")
            lines.append(f"{what}\n")
        notice = Notice("", "info")
        notice.update(lines)
        self.transcript.add(notice)

    def cmd_quit(self, arg: str) -> None:
        self.exit(0)


def make_app(
    agent: Agent,
    store: AsyncSessionStore,
    settings: Settings,
    *,
    session_id: str | None = None,
    approval_timeout: float = 60.0,
    theme: str | None = None,
    cwd: str | None = None,
    silence_warning: float = SILENCE_AFTER,
) -> HermesApp:
    """The chat app, as `hermes chat` runs it. Tests call this too.

    Args:
        agent: the engine (its `model` is shown and changed by /model).
        store: the session store the agent writes to (`storage.sessions`: SQLite or PostgreSQL).
        settings: resolved settings (`tool_stall_warning`, `yolo`).
        session_id: a stored session to open and continue.
        approval_timeout: seconds before an unanswered approval is denied.
        theme: a Textual theme name (default textual-dark).
        cwd: working directory for tools and /export (default: the process's).
        silence_warning: seconds without any event before "waiting for the model (Ns)".
    """
    return HermesApp(
        agent,
        store,
        settings,
        session_id=session_id,
        approval_timeout=approval_timeout,
        theme=theme,
        cwd=cwd,
        silence_warning=silence_warning,
    )
