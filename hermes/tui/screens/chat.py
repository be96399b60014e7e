"""The chat screen: the transcript, the prompt and the bars around them, for one open session.

Layout (top to bottom): status bar, transcript, activity line, command completions, queued
prompts, prompt, footer. The screen owns which session is open (`session_id`, or a
`pending_title` for the session the next turn creates) and what the transcript shows of it;
turns, `/compact` and the prompt queue belong to its `TurnController` (`turns`); slash commands
are looked up in `hermes.tui.commands`.

An opened session shows its newest messages at once; older ones are prepended on demand, and a
tool result is never shown without the call it answers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import QueryType
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.worker import Worker

from hermes.agent.context import estimate_tokens, resume_history
from hermes.agent.modes import DEFAULT_MODE, Mode
from hermes.agent.shell_passthrough import shell_command
from hermes.backend import ChatAgent, ChatSessions
from hermes.config import Settings
from hermes.errors import HermesError
from hermes.session_folder import FolderCheck, check_folder
from hermes.store.records import MessageRecord, SessionRecord
from hermes.tui import commands, image_commands
from hermes.tui.details import toggle_details
from hermes.tui.instructions_reload import reload_instructions
from hermes.tui.mention_picker import MentionPicker
from hermes.tui.mode_control import cycle_mode
from hermes.tui.notifier import TurnNotifier, terminal_writer
from hermes.tui.renderer import history_widgets
from hermes.tui.screens.folder_gone import FolderGoneDialog
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.shell_mode import SHELL_RUNNING, ShellMode
from hermes.tui.turn_controller import TURN_RUNNING, TurnController
from hermes.tui.widgets.activity import Activity
from hermes.tui.widgets.chat_input import ChatInput
from hermes.tui.widgets.command_menu import CommandMenu
from hermes.tui.widgets.find_bar import FindBar
from hermes.tui.widgets.history_head import HistoryHead
from hermes.tui.widgets.image_chips import REMOVE_KEY as REMOVE_IMAGE_KEY
from hermes.tui.widgets.image_chips import ImageChips
from hermes.tui.widgets.mention_menu import MentionMenu
from hermes.tui.widgets.notice import Notice, NoticeKind
from hermes.tui.widgets.queued_prompts import QueuedPrompts
from hermes.tui.widgets.remote_line import RemoteLine
from hermes.tui.widgets.status_bar import StatusBar
from hermes.tui.widgets.transcript import Transcript
from hermes.turn_outcomes import TurnMark, turn_marks

if TYPE_CHECKING:
    from hermes.agent.mcp import McpManager
    from hermes.backend import SessionFiles
    from hermes.tui.command_screen import ThemeSwitcher

HISTORY_PAGE = 16
"""Messages rendered when a session opens (a screenful or more); older ones load when the
user scrolls to the top, clicks the head line, or presses Ctrl+Home."""
FIRST_PAINT = 8
"""Messages shown before the first paint of an opened session."""
OLDER_PAGE = 100
"""Messages each "load more" (Ctrl+Home, click) adds."""
TAB_HINT = "Tab keeps you in the prompt (it completes / commands) · Ctrl+G opens tool results and reasoning"


class ChatScreen(Screen[None]):
    """One conversation on screen. `HermesApp` builds it and pushes it at mount."""

    AUTO_FOCUS = "#input"
    BINDINGS = [
        # The app's own ctrl+q quits over every screen; declared here too so the footer
        # shows it, first, as it always has.
        Binding("ctrl+q", "app.quit", "Quit", priority=True),
        Binding("escape", "interrupt", "Stop", show=True),
        Binding("ctrl+s", "sessions", "Sessions"),
        Binding("ctrl+n", "new_session", "New"),
        Binding("ctrl+r", "toggle_reasoning", "Reasoning"),
        Binding("ctrl+o", "toggle_focus", "Answer only"),
        Binding("ctrl+g", "toggle_details", "Details", show=False),  # /help and the Tab hint name it
        Binding("ctrl+f", "find", "Find", show=False, priority=True),
        Binding("alt+up", "edit_queued", "Edit queued", show=False),
        Binding(REMOVE_IMAGE_KEY, "remove_image", "Remove image", show=False),
        Binding("pageup", "scroll_transcript(-1)", show=False, priority=True),
        Binding("pagedown", "scroll_transcript(1)", show=False, priority=True),
        Binding("ctrl+home", "transcript_top", show=False, priority=True),
        Binding("ctrl+end", "transcript_bottom", show=False, priority=True),
        # Priority: the prompt box keeps the focus (Shift+Tab never moves it away).
        Binding("shift+tab", "cycle_mode", "Mode", show=False, priority=True),
    ]

    def __init__(
        self,
        agent: ChatAgent,
        store: ChatSessions,
        settings: Settings,
        *,
        session_id: str | None,
        approval_timeout: float,
        cwd: str | None,
        silence_warning: float,
        remote: str | None = None,
        files: SessionFiles | None = None,
    ) -> None:
        super().__init__()
        self.agent = agent
        self.store = store
        self.settings = settings
        self.session_id = session_id
        self.approval_timeout = approval_timeout
        self.home_folder = os.path.realpath(cwd or os.getcwd())
        """The folder the chat was started in (resolved): new sessions belong to it."""
        self.cwd = self.home_folder
        """The folder the open session's tools run in (its own folder when resumed from
        another; see hermes/session_folder.py)."""
        self.silence_warning = silence_warning
        self.remote = remote
        """The URL of the `hermes serve` holding the sessions and running the turns (None: local)."""
        self.files = files
        """Undo, redo and diffs of `store`'s turns (None: /undo, /redo and /diff are not offered)."""
        self.pending_title: str | None = None
        self.turns = TurnController(self)
        self.shell = ShellMode(self)
        """`!` commands (hermes/tui/shell_mode.py)."""
        self.notifier = TurnNotifier(settings, self._write_terminal)
        """The bell / OSC 9 after a long turn or at a waiting approval (hermes/tui/notifier.py)."""
        self.startup_notice: str | None = None
        """Shown once in the transcript at mount (e.g. which provider is in use)."""
        self.first_prompt: str | None = None
        """Sent once the screen is up (`hermes chat "prompt"`)."""
        self.mcp: McpManager | None = None
        """MCP servers to start (in the background, at mount) into the agent's tools; closed by the caller."""
        self.mcp_worker: Worker[None] | None = None
        self._older: list[MessageRecord] = []
        self._mention_picker: MentionPicker | None = None
        self.mode: Mode = DEFAULT_MODE
        """The mode every turn starts with (hermes/tui/mode_control.py)."""
        self._marks: dict[int, TurnMark] = {}
        """The failed and interrupted turns of the open session (by their last message id)."""

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        menu = CommandMenu(id="menu", extra=lambda: commands.custom_commands(self))
        yield StatusBar(id="status")
        transcript = Transcript(id="transcript")
        yield transcript
        yield FindBar(transcript, id="find")
        yield Activity(silence_after=self.silence_warning, id="activity")
        yield menu
        yield QueuedPrompts(id="queued")
        mentions = MentionMenu(id="mentions")
        yield mentions
        yield ImageChips(id="images")
        chat_input = ChatInput(menu=menu, mentions=mentions, id="input")
        chat_input.paste_filter = lambda text: image_commands.pasted_paths(text) is not None
        yield chat_input
        if self.remote is not None:
            yield RemoteLine(self.remote, id="remote")
        yield Footer()

    def _write_terminal(self, text: str) -> None:
        terminal_writer(self.app)(text)

    @property
    def hermes_app(self) -> ThemeSwitcher:
        return cast("ThemeSwitcher", self.app)  # always a HermesApp (it pushes this screen)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def find_bar(self) -> FindBar:
        return self.query_one("#find", FindBar)

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
    def image_chips(self) -> ImageChips:
        return self.query_one("#images", ImageChips)

    @property
    def mention_picker(self) -> MentionPicker:
        if self._mention_picker is None:
            self._mention_picker = MentionPicker(self, self.query_one("#mentions", MentionMenu))
        return self._mention_picker

    @property
    def queue_view(self) -> QueuedPrompts:
        return self.query_one("#queued", QueuedPrompts)

    async def on_mount(self) -> None:
        self.status_bar.window_for = self.agent.context_window
        self.status_bar.model = self.agent.model
        self.status_bar.yolo = self.settings.yolo
        self.status_bar.mode = self.mode
        self.status_bar.folder = "" if self.remote else self.cwd
        if self.startup_notice:
            self.say(self.startup_notice)
        if self.agent.instructions is not None and self.agent.instructions.notice:
            self.say(self.agent.instructions.notice, "warning")
        if self.mcp is not None:
            self.mcp_worker = self.run_worker(self._start_mcp(self.mcp), group="mcp", exit_on_error=False)
        if self.session_id is not None:
            await self.open_session(self.session_id)
        self.chat_input.focus()
        if self.first_prompt:  # `hermes chat "prompt"`: sent as if typed
            self.turns.submit(self.first_prompt)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if event.widget is self.chat_input:
            self.hermes_app.prompt_ready()  # typing held since launch goes in now

    def on_screen_resume(self) -> None:
        # Back from a dialog shown at start-up (a session's folder is gone): the prompt's
        # focus comes back without a focus event, and the prompt is ready all the same.
        if self.is_mounted:
            self.hermes_app.prompt_ready()

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

    def say(self, text: str, kind: NoticeKind = "info") -> Notice:
        notice = Notice(text, kind)
        self.transcript.add(notice)
        return notice

    def refused_during_turn(self) -> bool:
        """True (and the user is told) when a turn is running."""
        if self.turns.turn_running:
            self.notify(TURN_RUNNING, severity="warning")
            return True
        return False

    # -- input ----------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        text = event.value.strip("\n")
        if commands.is_command(text):
            await commands.run(self, text)
            return
        command = shell_command(text)
        if command is not None:
            self.shell.submit(command)
            return
        if self.shell.running:
            self.notify(SHELL_RUNNING, severity="warning")
            self.chat_input.load_text(text)
            return
        self.turns.submit(text)

    @on(ChatInput.MentionTyped)
    def _mention_typed(self, event: ChatInput.MentionTyped) -> None:
        self.mention_picker.typed(event.query)

    @on(ChatInput.PastedText)
    async def _pasted(self, event: ChatInput.PastedText) -> None:
        await image_commands.pasted(self, event.text)

    def action_remove_image(self) -> None:
        removed = self.image_chips.remove_last()
        if removed is not None:
            self.notify(f"Removed {removed.name}.", timeout=1.5)

    @on(ChatInput.EditorRequested)
    def _editor_requested(self, event: ChatInput.EditorRequested) -> None:
        commands.compose_in_editor(self, self.chat_input.text)

    def action_find(self) -> None:
        self.find_bar.open()

    @on(FindBar.Closed)
    def _find_closed(self, event: FindBar.Closed) -> None:
        self.chat_input.focus()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.turns.worker_ended(event)

    def action_cycle_mode(self) -> None:
        cycle_mode(self)

    def action_edit_queued(self) -> None:
        self.turns.take_back_queued()

    def action_interrupt(self) -> None:
        if self.menu.is_open:
            self.menu.hide()
            return
        if self.shell.stop():
            return
        self.turns.interrupt()

    def stop_or_clear(self) -> bool:
        """Ctrl+C: interrupt the running turn (True), else clear the prompt (False)."""
        if self.turns.turn_running:
            self.action_interrupt()
            return True
        if self.chat_input.text:
            self.chat_input.clear()
        return False

    # -- sessions -------------------------------------------------------------------------

    async def refresh_session_info(self, *, tokens: bool = True) -> None:
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
        await self._refresh_cost(session_id)

    async def _refresh_cost(self, session_id: str) -> None:
        """The status bar's session cost, priced from the stored usage rows."""
        try:
            usage = await self.store.session_usage([session_id])
        except HermesError:
            return  # the bar keeps its last figure; refresh_session_info already says why
        if session_id == self.session_id:
            self.status_bar.session_cost = self.settings.prices.total(usage)

    async def open_session(self, session_id: str, *, announce: bool = True, run_here: bool = False) -> bool:
        """Show a stored session (its newest messages; older ones on demand) and continue it.

        `announce`: end with the "resumed …" notice (not when the same session is redrawn).
        The session's tools run in its own folder (said when that is not this one); a
        session whose folder is gone is opened only when the user agrees to run its tools
        here (`run_here`, asked with `FolderGoneDialog`). A server runs them in its own."""
        if self.refused_during_turn():
            return False
        try:
            record = await self.store.get_session(session_id)
            messages = await self.store.get_messages(session_id)
        except HermesError as exc:
            self.say(f"✗ {exc}", "error")
            return False
        if self.refused_during_turn():  # a prompt was sent while the session loaded
            return False
        check = None if self.remote else check_folder(record.cwd, here=self.home_folder)
        if check is not None and check.run_in is None and not run_here:
            if self.session_id == record.id:  # `--resume` set it: no turn may continue it unasked
                self.session_id = None
            self._ask_folder(check, record.id, announce)
            return False
        self.cwd = self.home_folder if check is None or check.run_in is None else check.run_in
        self.status_bar.folder = (record.cwd or "") if self.remote else self.cwd
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
        self._marks = turn_marks(messages, record.end_reason)
        transcript.add(*history_widgets(shown, stall_after=self.settings.tool_stall_warning, marks=self._marks))
        if self._older:
            self.call_after_refresh(self.load_older, HISTORY_PAGE - len(shown))
        if announce:
            transcript.add(Notice(f"resumed “{record.title or record.id}” · {len(messages)} messages", "info"))
        if check is not None and check.state == "gone":
            transcript.add(Notice(f"{check.notice()}: its tools run in this folder, {self.cwd}", "warning"))
        elif check is not None and check.state == "elsewhere":
            transcript.add(Notice(str(check.notice()), "warning"))
        self.status_bar.model = self.agent.model
        self.run_worker(self._estimate_context(record), group="context-estimate", exclusive=True)
        self.status_bar.turn_seconds = None
        bar = self.status_bar
        bar.title = record.title or ""
        bar.reset_usage()
        bar.input_tokens = record.input_tokens
        bar.output_tokens = record.output_tokens
        self.run_worker(self._refresh_cost(record.id), group="session-cost", exclusive=True)
        transcript.scroll_end(animate=False)
        return True

    def _ask_folder(self, check: FolderCheck, session_id: str, announce: bool) -> None:
        """Ask whether the session whose folder is gone runs its tools here; open it if so."""

        async def decided(here: bool | None) -> None:
            if here:
                await self.open_session(session_id, announce=announce, run_here=True)
            else:
                self.say(f"not opened: {check.notice()}", "warning")
            self.chat_input.focus()

        self.app.push_screen(FolderGoneDialog(check), decided)

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
        transcript.add_before_first(
            history_widgets(page, stall_after=self.settings.tool_stall_warning, marks=self._marks)
        )
        for head in transcript.query(HistoryHead):
            if self._older:
                head.set_hidden(len(self._older))
            else:
                head.remove()

    def new_session(self) -> None:
        if self.refused_during_turn():
            return
        self.session_id = None
        self.pending_title = None
        self.cwd = self.home_folder
        self.status_bar.folder = "" if self.remote else self.cwd
        self._older = []
        self.transcript.remove_children()
        bar = self.status_bar
        bar.title = ""
        bar.reset_usage()
        bar.turn_seconds = None
        self.say("new session", "info")
        changed = reload_instructions(self.agent, self.settings, self.cwd)
        if changed is not None:
            self.say(changed, "info")

    def action_sessions(self) -> None:
        if self.refused_during_turn():
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
                await self.refresh_session_info(tokens=False)  # it may have been renamed
            self.chat_input.focus()

        home = None if self.remote else self.settings.home  # snapshots are pruned where they live
        picker = SessionPicker(self.store, current=self.session_id, home=home, folder=self.home_folder)
        self.app.push_screen(picker, picked)

    def action_new_session(self) -> None:
        self.new_session()

    # -- view -----------------------------------------------------------------------------

    def action_toggle_reasoning(self) -> None:
        hidden = self.transcript.toggle_class("-hide-reasoning").has_class("-hide-reasoning")
        self.notify("Reasoning hidden." if hidden else "Reasoning shown.", timeout=1.5)

    def action_toggle_details(self) -> None:
        opened = toggle_details(self.transcript)
        text = {None: "No tool results or reasoning to open.", True: "Details open.", False: "Details closed."}
        self.notify(text[opened], timeout=1.5)

    def focus_next(self, selector: str | type[QueryType] = "*") -> Widget | None:
        return self._keep_prompt()

    def focus_previous(self, selector: str | type[QueryType] = "*") -> Widget | None:
        return self._keep_prompt()

    def _keep_prompt(self) -> Widget:
        """Tab and Shift+Tab never take the focus out of the prompt box (where the next key
        would be lost): they bring it back there and say what opens the details instead."""
        box = self.chat_input
        if self.focused is box:
            self.notify(TAB_HINT, timeout=2.5)
        box.focus()
        return box

    def action_toggle_focus(self) -> None:
        focus = self.transcript.toggle_class("-focus").has_class("-focus")
        self.notify("Answer-only view." if focus else "Full view.", timeout=1.5)

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
