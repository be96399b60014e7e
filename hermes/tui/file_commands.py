"""`/undo [N]`, `/redo` and `/diff [N]` of the chat TUI (rules in hermes/checkpoints/undo.py).

Undo and redo refuse during a turn; a file changed outside hermes since the checkpoint is
never overwritten silently: `ConfirmOverwrite` asks, and only "overwrite" retries with
`force`. After either, the session is shown again from the store, so undone turns leave
the transcript and redone ones come back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from hermes.checkpoints import undo as checkpoints
from hermes.errors import FilesChangedOutside, UsageError
from hermes.store.api import AsyncSessionStore
from hermes.tui.screens.confirm_overwrite import ConfirmOverwrite
from hermes.tui.widgets.diff_view import DiffView

if TYPE_CHECKING:
    from hermes.tui.screens.chat import ChatScreen


REMOTE_REFUSAL = "/undo, /redo and /diff work on local sessions: the server's files are not offered over HTTP here"


def _local_store(chat: ChatScreen) -> AsyncSessionStore | None:
    """The screen's store when it is local (a screen without `remote` is given the local
    `AsyncSessionStore` by launch.py); None, after one line, for a remote session."""
    if chat.remote is not None:
        chat.say(REMOTE_REFUSAL, "warning")
        return None
    return cast(AsyncSessionStore, chat.store)


def _number(arg: str, what: str) -> int | None:
    if not arg:
        return None
    if not arg.isdigit() or int(arg) < 1:
        raise UsageError(f"{what} takes a positive number, not {arg!r}")
    return int(arg)


async def undo(chat: ChatScreen, arg: str) -> None:
    turns = _number(arg, "/undo") or 1
    await _move(chat, "undo", turns, force=False)


async def redo(chat: ChatScreen, arg: str) -> None:
    await _move(chat, "redo", 0, force=False)


async def _move(chat: ChatScreen, verb: str, turns: int, *, force: bool) -> None:
    if chat.refused_during_turn():
        return
    store = _local_store(chat)
    if store is None:
        return
    session_id = chat.session_id
    if session_id is None:
        chat.say(f"nothing to {verb} yet", "warning")
        return
    home = chat.settings.home
    try:
        if verb == "undo":
            outcome = await checkpoints.undo(store, home, session_id, turns=turns, force=force)
        else:
            outcome = await checkpoints.redo(store, home, session_id, force=force)
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
    files = f": {', '.join(outcome.files)}" if outcome.files else " (no files changed)"
    done = "undid" if verb == "undo" else "redid"
    chat.say(f"{mark} {done} {count} turn{'s' if count != 1 else ''}{files}", "info")


async def diff(chat: ChatScreen, arg: str) -> None:
    store = _local_store(chat)
    if store is None:
        return
    if chat.session_id is None:
        chat.say("nothing to diff yet", "warning")
        return
    change = await checkpoints.turn_changes(store, chat.settings.home, chat.session_id, _number(arg, "/diff"))
    if not change.files:
        chat.say(f"turn {change.number} changed no files", "info")
        return
    chat.transcript.add(DiffView(change.number, change.files, change.patch))
