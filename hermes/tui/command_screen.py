"""What the slash commands (hermes/tui/commands.py, file_commands.py) need of the chat screen.

The commands are functions of a `CommandScreen`, not of `ChatScreen`: the screen looks commands
up (and its command menu lists them), so the commands must not import the screen back.
`ChatScreen` satisfies this interface; mypy checks that where the screen runs a command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.notifications import SeverityLevel

    from hermes.agent.mcp import McpManager
    from hermes.agent.modes import Mode
    from hermes.backend import ChatAgent, ChatSessions, SessionFiles
    from hermes.config import Settings
    from hermes.tui.turn_controller import PromptBox, TurnController
    from hermes.tui.widgets.find_bar import FindBar
    from hermes.tui.widgets.image_chips import ImageChips
    from hermes.tui.widgets.notice import Notice, NoticeKind
    from hermes.tui.widgets.status_bar import StatusBar
    from hermes.tui.widgets.transcript import Transcript


class ThemeSwitcher(Protocol):
    """The app, as the screen and `/theme` use it (`HermesApp`)."""

    def switch_theme(self, name: str) -> None: ...

    def prompt_ready(self) -> None:
        """The prompt box has focus: typing held since launch goes into it."""
        ...


class CommandScreen(Protocol):
    """The open session, its stores and widgets, and the screen actions commands share with keys."""

    agent: ChatAgent
    store: ChatSessions
    files: SessionFiles | None
    """Undo, redo and diffs (None: /undo, /redo and /diff are not offered)."""
    mcp: McpManager | None
    turns: TurnController
    session_id: str | None
    pending_title: str | None
    cwd: str
    remote: str | None
    """The URL of the server the session lives on; None: local."""
    mode: Mode
    """The mode the next turn starts in (hermes/tui/mode_control.py)."""
    settings: Settings

    @property
    def app(self) -> App[object]: ...

    @property
    def hermes_app(self) -> ThemeSwitcher: ...

    @property
    def status_bar(self) -> StatusBar: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def image_chips(self) -> ImageChips: ...

    @property
    def find_bar(self) -> FindBar: ...

    @property
    def chat_input(self) -> PromptBox: ...

    def say(self, text: str, kind: NoticeKind = "info") -> Notice: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def refused_during_turn(self) -> bool: ...

    def new_session(self) -> None: ...

    async def refresh_session_info(self, *, tokens: bool = True) -> None: ...

    async def open_session(self, session_id: str, *, announce: bool = True) -> bool: ...

    def action_sessions(self) -> None: ...

    def action_toggle_reasoning(self) -> None: ...

    def action_toggle_focus(self) -> None: ...
