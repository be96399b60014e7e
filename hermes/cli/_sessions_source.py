"""Where `hermes sessions …` reads and writes: the backend (hermes/backend.py), local or remote.

    with opened_sessions(settings, server=URL_or_None, key=KEY_or_None, key_file=PATH_or_None) as opened:
        record = opened.run(opened.sessions.get_session(session_id))

`server` (the `--server` flag, else `server_url`) picks the server's sessions REST API,
with the bearer key `--key`, `--key-file`, HERMES_SERVER_KEY or `server_key` resolved by
`hermes.cli._server_key`; otherwise the configured storage is opened and repaired. Either
way it is `open_backend`'s, entered and closed on one `CommandLoop` for the command, so a
command can await, ask the user something, and await again on the same connections.
`opened.files` undoes, redoes and diffs turns where their files are (the backend's files).
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from hermes.cli._command_loop import CommandLoop
from hermes.cli._server_key import KEY_FILE_OPTION, KEY_OPTION, server_key

if TYPE_CHECKING:
    from hermes.backend import Backend, ChatSessions, SessionFiles
    from hermes.config import Settings
    from hermes.store.api import Storage

T = TypeVar("T")

SERVER_OPTION: Any = typer.Option(
    None, "--server", metavar="URL", help="Use this hermes serve's sessions (default: server_url)."
)
__all__ = ["KEY_FILE_OPTION", "KEY_OPTION", "SERVER_OPTION", "OpenedSessions", "opened_sessions"]


@dataclass(frozen=True, slots=True)
class OpenedSessions:
    backend: Backend
    loop: CommandLoop

    @property
    def sessions(self) -> ChatSessions:
        return self.backend.sessions

    @property
    def storage(self) -> Storage | None:
        """The local storage (None for a server)."""
        return self.backend.storage

    @property
    def files(self) -> SessionFiles:
        """Undo, redo and diffs of `sessions`' turns (see the module docstring)."""
        return self.backend.files

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        return self.loop.run(step)

    def resolve(self, text: str) -> str:
        """The id of the session `text` names: a full id or any unique start of one
        (`hermes.backend.find_session_id`: SessionNotFound, AmbiguousSessionId)."""
        from hermes.backend import find_session_id

        return self.run(find_session_id(self.sessions, text))


@contextlib.contextmanager
def opened_sessions(
    settings: Settings, *, server: str | None, key: str | None, key_file: Path | None = None
) -> Iterator[OpenedSessions]:
    from hermes.backend import open_backend

    server = server or settings.server_url
    bearer = server_key(settings.server_key, key=key, key_file=key_file) if server else None
    loop = CommandLoop()
    try:
        opening = open_backend(settings, server, bearer)
        backend = loop.run(opening.__aenter__())
        try:
            yield OpenedSessions(backend, loop)
        except BaseException as exc:
            if not loop.run(opening.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            loop.run(opening.__aexit__(None, None, None))
    finally:
        loop.close()
