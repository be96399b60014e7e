"""Where `hermes sessions …` reads and writes: the local storage, or a remote `hermes serve`.

    with opened_sessions(settings, server=URL_or_None, key=KEY_or_None, key_file=PATH_or_None) as opened:
        record = opened.run(opened.sessions.get_session(session_id))

`server` (the `--server` flag, else `server_url`) picks the server's sessions REST API
(`hermes.remote.sessions.RemoteSessions`, with the bearer key `--key`, `--key-file`,
HERMES_SERVER_KEY or `server_key` resolved by `hermes.cli._server_key`); otherwise the
configured storage is opened and repaired (`opened_storage`). Both run on one
`CommandLoop` for the command; the server's HTTP client is closed on it.
`opened.files` undoes, redoes and diffs turns where their files are: on the server
(`RemoteSessions`), or here (`LocalSessionFiles` under `settings.home`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from hermes.cli._server_key import KEY_FILE_OPTION, KEY_OPTION, server_key
from hermes.cli._storage import CommandLoop, opened_storage

if TYPE_CHECKING:
    from hermes.checkpoints.files import SessionFiles
    from hermes.config import Settings
    from hermes.remote.sessions import RemoteSessions
    from hermes.store.api import AsyncSessionStore, Storage

T = TypeVar("T")

SERVER_OPTION: Any = typer.Option(
    None, "--server", metavar="URL", help="Use this hermes serve's sessions (default: server_url)."
)
__all__ = ["KEY_FILE_OPTION", "KEY_OPTION", "SERVER_OPTION", "OpenedSessions", "opened_sessions"]


@dataclass(frozen=True, slots=True)
class OpenedSessions:
    sessions: AsyncSessionStore | RemoteSessions
    loop: CommandLoop
    storage: Storage | None
    """The local storage (None for a server)."""
    files: SessionFiles
    """Undo, redo and diffs of `sessions`' turns (see the module docstring)."""

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        return self.loop.run(step)


@contextlib.contextmanager
def opened_sessions(
    settings: Settings, *, server: str | None, key: str | None, key_file: Path | None = None
) -> Iterator[OpenedSessions]:
    server = server or settings.server_url
    if not server:
        from hermes.checkpoints.files import LocalSessionFiles

        with opened_storage(settings) as opened:
            store = opened.storage.sessions
            files = LocalSessionFiles(
                store, settings.home, max_diff_bytes=settings.max_diff_bytes, guard=_restore_guard(settings)
            )
            yield OpenedSessions(store, opened.loop, opened.storage, files)
        return
    from hermes.remote.client import RemoteClient
    from hermes.remote.sessions import RemoteSessions

    bearer = server_key(settings.server_key, key=key, key_file=key_file)
    loop = CommandLoop()
    try:
        client = RemoteClient(server, bearer)
        try:
            sessions = RemoteSessions(client)
            yield OpenedSessions(sessions, loop, None, sessions)
        finally:
            loop.run(client.aclose())
    finally:
        loop.close()


def _restore_guard(settings: Settings) -> Callable[[Path, Path], str | None]:
    """The confinement's restore guard (hermes/agent/restore_guard.py), loaded on first use:
    only undo and redo need it, and the engine is heavy to import for the other commands."""

    loaded: list[Callable[[Path, Path], str | None]] = []

    def guard(path: Path, worktree: Path) -> str | None:
        if not loaded:
            from hermes.agent.restore_guard import restore_guard

            loaded.append(restore_guard(settings))
        return loaded[0](path, worktree)

    return guard
