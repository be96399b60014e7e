"""`hermes chat` without -q: open the runtime (or attach to a server), run the app, say how to resume.

The runtime (`hermes.runtime.open_runtime`: the storage — SQLite files, or PostgreSQL when
`database_url` is set — its repair, the agent, MCP) is opened inside the asyncio loop the
app runs on, because a PostgreSQL connection pool belongs to the loop that opened it; it
is closed on that loop when the app has exited, whatever happened.

With `--server URL` (or `server_url`) nothing local is opened: the app drives the server's
sessions and turns (`hermes.remote`) through the same screens; the server is asked once
before the TUI takes the screen, so an unreachable server or a wrong key is one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

from hermes.config import Settings
from hermes.errors import UsageError
from hermes.tui.backend import ChatSessions

if TYPE_CHECKING:
    from hermes.tui.app import HermesApp


async def resolve_session(store: ChatSessions, *, continue_last: bool, resume: str | None) -> str | None:
    """The session to open: --resume ID (must exist), -c the newest one of any source, else None."""
    if resume:
        return (await store.get_session(resume)).id
    if continue_last:
        latest = await store.latest_session()
        return latest.id if latest is not None else None
    return None


def run_tui(
    settings: Settings,
    *,
    continue_last: bool,
    resume: str | None,
    model: str | None,
    yolo: bool,
    server: str | None = None,
    key: str | None = None,
) -> int:
    """Run the chat TUI until the user quits; return the process exit code.

    Raises HermesError (bad configuration, an unusable or unreachable database, unknown
    --resume id) for the CLI to report, before the TUI takes the screen.
    """
    if continue_last and resume:
        raise UsageError("use either --continue or --resume, not both")
    if model:
        settings = settings.replace(model=model)
    if yolo:
        settings = settings.replace(yolo=True)
    if server:
        app, code = asyncio.run(
            _run_remote_app(settings, server, key, model=model, continue_last=continue_last, resume=resume)
        )
    else:
        settings.ensure_home()
        app, code = asyncio.run(_run_app(settings, continue_last=continue_last, resume=resume))
    if app.session_id is not None:
        where = f" --server {server}" if server else ""
        print(f"Resume with: hermes chat{where} --resume {app.session_id}", file=sys.stdout)
    return code or 0


async def _run_app(settings: Settings, *, continue_last: bool, resume: str | None) -> tuple[HermesApp, int | None]:
    """Open the runtime, run the app on this loop until it exits, close everything.

    Returns the app (its last session) and the code it exited with. The app starts the
    MCP servers itself once its screen is up (`defer_mcp`); the runtime closes them.
    """
    from hermes.agent.factory import choose_provider
    from hermes.agent.restore_guard import restore_guard
    from hermes.agent.sandbox import sandbox_notice
    from hermes.checkpoints.files import LocalSessionFiles
    from hermes.cli._progress import rich_progress
    from hermes.runtime import open_runtime
    from hermes.store.api import Storage
    from hermes.tui.app import make_app

    choice = choose_provider(settings)
    session_id: str | None = None

    async def prepare(storage: Storage) -> None:
        # After the repair of what a crashed owner left open, before --continue picks one.
        nonlocal session_id
        session_id = await resolve_session(storage.sessions, continue_last=continue_last, resume=resume)

    async with contextlib.AsyncExitStack() as stack:
        with rich_progress() as progress:  # drawn before the TUI takes the screen
            runtime = await stack.enter_async_context(
                open_runtime(settings, prepare=prepare, choice=choice, progress=progress, defer_mcp=True)
            )
        sessions = runtime.storage.sessions
        files = LocalSessionFiles(
            sessions, settings.home, max_diff_bytes=settings.max_diff_bytes, guard=restore_guard(settings)
        )
        app = make_app(runtime.agent, sessions, settings, session_id=session_id, files=files)
        app.startup_notice = "\n".join(n for n in (choice.notice, sandbox_notice(settings)) if n) or None
        app.mcp = runtime.mcp
        code = await app.run_async()
        return app, code


async def _run_remote_app(
    settings: Settings, server: str, key: str | None, *, model: str | None, continue_last: bool, resume: str | None
) -> tuple[HermesApp, int | None]:
    """Attach the app to the server at `server`; the client is closed when the app exits.

    Only `-m` picks a model for the server's turns; otherwise the server uses its own.
    """
    from hermes.remote.agent import NOT_OFFERED, RemoteAgent
    from hermes.remote.client import RemoteClient
    from hermes.remote.sessions import RemoteSessions
    from hermes.tui.app import make_app

    async with RemoteClient(server, key) as client:
        sessions = RemoteSessions(client)
        await sessions.count_sessions()  # reachable, and the key is right: else one line, no TUI
        session_id = await resolve_session(sessions, continue_last=continue_last, resume=resume)
        agent = RemoteAgent(client, model=model)
        app = make_app(agent, sessions, settings, session_id=session_id, remote=client.base_url, files=sessions)
        app.startup_notice = NOT_OFFERED
        code = await app.run_async()
        return app, code
