"""Approve a risky command: run once, allow for this session, or deny. Denies on timeout.

"Allow for this session" is offered only when the request carries a grant, and the modal
says what it covers (the exact command or path: hermes/agent/safety/grants.py); otherwise the
action always asks and the session key does nothing.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from hermes.agent.types import ApprovalDecision, ApprovalRequest


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
    }
    ApprovalScreen > Vertical {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 90%;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ApprovalScreen .approval-title { text-style: bold; color: $text-warning; }
    ApprovalScreen .approval-command {
        margin: 1 0;
        padding: 0 1;
        background: $boost;
        max-height: 12;
        overflow-y: auto;
    }
    ApprovalScreen .approval-countdown { color: $text-muted; }
    ApprovalScreen Horizontal { height: auto; margin-top: 1; }
    ApprovalScreen Button { margin-right: 1; min-width: 10; }
    """

    BINDINGS = [
        Binding("y,o", "decide('once')", "Run once"),
        Binding("a,s", "decide('session')", "Allow for session"),
        Binding("n,d,escape", "decide('deny')", "Deny"),
    ]

    def __init__(self, request: ApprovalRequest, *, timeout: float = 120.0) -> None:
        super().__init__()
        self.request = request
        self.timeout = timeout
        self.timed_out = False
        """Nobody answered in `timeout` seconds: the screen denied on its own."""
        self._deadline = time.monotonic() + timeout

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"⚠ {self.request.tool_name} wants to run a risky command", classes="approval-title")
            yield Static(Text(self.request.command), classes="approval-command", markup=False)
            yield Static(Text(f"Why: {self.request.reason}"), markup=False)
            grant = self.request.grant
            covers = f"Allow for session covers {grant}" if grant else "Asked every time: no session grant for this."
            yield Static(Text(covers), id="grant", markup=False)
            yield Static(Text(self.key_hint), id="keys", markup=False)
            yield Static("", id="countdown", classes="approval-countdown")
            with Horizontal():
                yield Button("Run once [y]", id="once", variant="warning")
                if grant:
                    yield Button("Allow for session [a]", id="session")
                yield Button("Deny [n]", id="deny", variant="error")

    @property
    def key_hint(self) -> str:
        """The keys that answer, as one line (the buttons carry them too)."""
        session = " · a: allow for this session" if self.request.grant else ""
        return f"Keys: y: run once{session} · n or Esc: deny"

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()
        self._tick()
        self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            self.timed_out = True
            self.dismiss(ApprovalDecision.DENY)
            return
        self.query_one("#countdown", Static).update(f"Denied automatically in {left:.0f}s")

    def action_decide(self, decision: str) -> None:
        if decision == "session" and not self.request.grant:
            return  # not offered: the action always asks
        self.dismiss(ApprovalDecision(decision))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(ApprovalDecision(event.button.id or "deny"))
