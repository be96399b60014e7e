"""The chat TUI: `make_app(agent, store, settings)` builds it for `hermes chat` and for tests.

`HermesApp` is thin: it holds what the whole run shares (the CSS, the theme, the keys that
work over every screen) and pushes one `ChatScreen` at mount, which owns the conversation.
Everything a session shows, and every turn, lives in that screen and its `TurnController`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.filter import LineFilter
from textual.screen import ModalScreen

from hermes.backend import ChatAgent, ChatSessions
from hermes.config import Settings
from hermes.tui.early_keys import EarlyKeys
from hermes.tui.screens.chat import ChatScreen
from hermes.tui.terminal_filter import ControlsFilter
from hermes.tui.widgets.activity import SILENCE_AFTER

if TYPE_CHECKING:
    from hermes.agent.mcp import McpManager
    from hermes.backend import SessionFiles

QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C quits."""
DARK_THEME = "textual-dark"
LIGHT_THEME = "textual-light"


class HermesApp(App[int]):
    """The chat app. Build it with `make_app`; its conversation is `chat`."""

    CSS_PATH = "hermes.tcss"
    TITLE = "hermes"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("ctrl+c", "ctrl_c", "Stop/quit", show=False, priority=True),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
    ]
    """Keys that work over every screen (Textual's own ctrl+q quits too)."""

    def __init__(self, chat: ChatScreen, *, theme: str | None = None) -> None:
        super().__init__()
        self.chat = chat
        self.theme = theme or DARK_THEME
        self.startup_notice: str | None = None
        """Shown once in the transcript when the app starts (e.g. which provider is in use)."""
        self.mcp: McpManager | None = None
        """MCP servers to start (in the background, at mount) into the agent's tools; closed by the caller."""
        self.first_prompt: str | None = None
        """Sent as the first prompt once the chat is up (`hermes chat "prompt"`)."""
        self._last_ctrl_c = 0.0
        self.early_keys = EarlyKeys()
        """Typing that arrives before the prompt box is ready (`prompt_ready` types it in)."""
        self._controls_filter = ControlsFilter()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then one that keeps every control character of the shown
        text (model, tool, file) from the terminal (hermes/tui/terminal_filter.py)."""
        return [*super().get_line_filters(), self._controls_filter]

    @property
    def session_id(self) -> str | None:
        """The session open in the chat (the one to resume after the app exits)."""
        return self.chat.session_id

    async def on_event(self, event: events.Event) -> None:
        if not self._dialog_open() and self.early_keys.hold(event):
            return
        await super().on_event(event)

    def _dialog_open(self) -> bool:
        """A modal screen (a question such as "run here?") is on top: keys are its answers."""
        return bool(self.screen_stack) and isinstance(self.screen_stack[-1], ModalScreen)

    def prompt_ready(self) -> None:
        """The prompt box has focus: what was typed before goes into it (once the keys the
        app is still to read have been read, and held, too)."""
        if not self.early_keys.ready and not self.early_keys.releasing:
            self.early_keys.releasing = True
            self.call_later(self.early_keys.release, self.chat.chat_input)

    async def on_mount(self) -> None:
        self.chat.startup_notice = self.startup_notice
        self.chat.first_prompt = self.first_prompt
        self.chat.mcp = self.mcp
        await self.push_screen(self.chat)

    def action_ctrl_c(self) -> None:
        """Interrupt the turn (or clear the prompt); a second press within QUIT_WINDOW quits."""
        now = time.monotonic()
        if now - self._last_ctrl_c <= QUIT_WINDOW:
            self.exit(0)
            return
        self._last_ctrl_c = now
        if self.chat.stop_or_clear():
            self.notify("Interrupted. Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)
        else:
            self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT_THEME if self.theme == DARK_THEME else DARK_THEME

    def switch_theme(self, name: str) -> None:
        """`/theme dark|light` sets that theme; anything else toggles."""
        if name in ("dark", "light"):
            self.theme = DARK_THEME if name == "dark" else LIGHT_THEME
        else:
            self.action_toggle_theme()


def make_app(
    agent: ChatAgent,
    store: ChatSessions,
    settings: Settings,
    *,
    session_id: str | None = None,
    approval_timeout: float | None = None,
    theme: str | None = None,
    cwd: str | None = None,
    silence_warning: float = SILENCE_AFTER,
    remote: str | None = None,
    files: SessionFiles | None = None,
) -> HermesApp:
    """The chat app, as `hermes chat` runs it. Tests call this too.

    Args:
        agent: the engine, or a `RemoteAgent` (its `model` is shown and changed by /model).
        store: the session store the agent writes to (`storage.sessions`: SQLite or
            PostgreSQL), or the server's (`RemoteSessions`).
        settings: resolved settings (`tool_stall_warning`, `yolo`).
        session_id: a stored session to open and continue.
        approval_timeout: seconds before an unanswered approval is denied (default: the
            `approval_timeout` setting, which `chat -q` uses too).
        theme: a Textual theme name (default textual-dark).
        cwd: working directory for tools and /export (default: the process's).
        silence_warning: seconds without any event before "waiting for the model (Ns)".
        remote: the URL of the `hermes serve` that `agent` and `store` talk to (shown in the
            footer line), None for a local session.
        files: undo, redo and diffs of `store`'s turns (`LocalSessionFiles(store, home)`,
            or the `RemoteSessions` itself); None: /undo, /redo and /diff say they are not
            offered.
    """
    chat = ChatScreen(
        agent,
        store,
        settings,
        session_id=session_id,
        approval_timeout=settings.approval_timeout if approval_timeout is None else approval_timeout,
        cwd=cwd,
        silence_warning=silence_warning,
        remote=remote,
        files=files,
    )
    return HermesApp(chat, theme=theme)
