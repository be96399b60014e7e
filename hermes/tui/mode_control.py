"""The chat screen's mode (default, accept-edits, plan): Shift+Tab, `/mode NAME`, `/plan`.

The mode is the user's choice on this screen (`CommandScreen.mode`); every turn the screen
starts carries it (`TurnRequest.mode`), so a change applies from the next turn on, local
and remote alike. The status bar shows it whenever it is not `default`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.agent.modes import MODE_HELP, MODES, Mode, next_mode, parse_mode

if TYPE_CHECKING:
    from hermes.tui.command_screen import CommandScreen


def set_mode(chat: CommandScreen, mode: Mode) -> None:
    """Switch the screen to `mode` and say so (a running turn keeps the mode it started with)."""
    chat.mode = mode
    chat.status_bar.mode = mode
    after = " (from the next turn; the running one keeps its mode)" if chat.turns.turn_running else ""
    chat.notify(f"mode: {mode} — {MODE_HELP[mode]}{after}", timeout=3)


def cycle_mode(chat: CommandScreen) -> None:
    """Shift+Tab: the next mode (default → accept-edits → plan → default)."""
    set_mode(chat, next_mode(chat.mode))


def mode_command(chat: CommandScreen, arg: str) -> None:
    """`/mode` shows the modes; `/mode NAME` switches."""
    if not arg:
        lines = [f"{'▸' if mode == chat.mode else ' '} {mode:<13} {MODE_HELP[mode]}" for mode in MODES]
        chat.say("mode (Shift+Tab cycles, /mode NAME sets):\n" + "\n".join(lines), "info")
        return
    try:
        mode = parse_mode(arg)
    except ValueError as exc:
        chat.say(f"✗ {exc}", "error")
        return
    set_mode(chat, mode)


def plan_command(chat: CommandScreen, arg: str) -> None:
    """`/plan`: plan mode (read-only); `/mode default` or Shift+Tab leaves it."""
    set_mode(chat, "plan")
