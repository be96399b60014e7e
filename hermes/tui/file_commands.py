"""`/undo [N]`, `/redo` and `/diff [N]` of the chat TUI (rules in hermes/checkpoints/undo.py).

The screen's `files` (hermes/checkpoints/files.py `SessionFiles`) does the work: the local
rules for a local session, the server's API for a remote one (its files are the
server's); a screen without it says so in one line. Undo and redo refuse during a turn; a
file changed outside hermes since the checkpoint is never overwritten silently:
`ConfirmOverwrite` asks, and only "overwrite" retries with `force`. After either, the
session is shown again from the store, so undone turns leave the transcript and redone
ones come back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.errors import FilesChangedOutside, UsageError
from hermes.tui.screens.confirm_overwrite import ConfirmOverwrite
from hermes.tui.widgets.diff_view import DiffView

if TYPE_CHECKING:
    from hermes.backend import SessionFiles
    from hermes.tui.command_screen import CommandScreen


NOT_OFFERED = "/undo, /redo and /diff are not offered in this session: it keeps no file checkpoints"


def _files(chat: CommandScreen) -> SessionFiles | None:
    """The screen's `SessionFiles`; None, after one line, when it has none."""
    if chat.files is None:
        chat.say(NOT_OFFERED, "warning")
    return chat.files


def _number(arg: str, what: str) -> int | None:
    if not arg:
        return None
    if not arg.isdigit() or int(arg) < 1:
        raise UsageError(f"{what} takes a positive number, not {arg!r}")
    return int(arg)


async def undo(chat: CommandScreen, arg: str) -> None:
    turns = _number(arg, "/undo") or 1
    await _move(chat, "undo", turns, force=False)


async def redo(chat: CommandScreen, arg: str) -> None:
    await _move(chat, "redo", 0, force=False)


async def _move(chat: CommandScreen, verb: str, turns: int, *, force: bool) -> None:
    if chat.refused_during_turn():
        return
    files = _files(chat)
    if files is None:
        return
    session_id = chat.session_id
    if session_id is None:
        chat.say(f"nothing to {verb} yet", "warning")
        return
    try:
        if verb == "undo":
            outcome = await files.undo(session_id, turns=turns, force=force)
        else:
            outcome = await files.redo(session_id, force=force)
    except FilesChangedOutside as exc:

        async def decided(overwrite: bool | None) -> None:
            if overwrite:
                await _move(chat, verb, turns, force=True)
            else:
                chat.say(f"{verb} cancelled: nothing was changed", "info")

        chat.app.push_screen(ConfirmOverwrite(verb, exc.paths), decided)
        return
    await chat.open_session(session_id, announce=False)
    count = len(outcome.turns)
    mark = "↶" if verb == "undo" else "↷"
    changed = f": {', '.join(outcome.files)}" if outcome.files else " (no files changed)"
    done = "undid" if verb == "undo" else "redid"
    chat.say(f"{mark} {done} {count} turn{'s' if count != 1 else ''}{changed}", "info")


async def diff(chat: CommandScreen, arg: str) -> None:
    files = _files(chat)
    if files is None:
        return
    if chat.session_id is None:
        chat.say("nothing to diff yet", "warning")
        return
    change = await files.turn_changes(chat.session_id, _number(arg, "/diff"))
    if not change.files:
        chat.say(f"turn {change.number} changed no files", "info")
        return
    chat.transcript.add(DiffView(change.number, change.files, change.patch))
    if change.truncated:
        chat.say(f"turn {change.number}'s diff was cut at the size cap (max_diff_bytes)", "warning")
