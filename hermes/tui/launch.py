"""`hermes chat` without -q: open the backend, run the app, say how to resume.

The backend (`hermes.backend.open_backend`: the local storage — SQLite files, or
PostgreSQL when `database_url` is set — its repair, the agent, MCP; or with `--server URL`
a remote `hermes serve`'s sessions and turns) is opened inside the asyncio loop the app
runs on, because a PostgreSQL connection pool belongs to the loop that opened it; it is
closed on that loop when the app has exited, whatever happened. The session to open is
`resolve_session`'s, as for `chat -q`; a wrong `--resume`, an empty store with
`--continue`, an unreachable server or a wrong key is one line before the TUI takes the
screen.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING

from hermes.config import Settings

if TYPE_CHECKING:
    from hermes.agent.modes import Mode
    from hermes.tui.app import HermesApp


def run_tui(
    settings: Settings,
    *,
    continue_last: bool,
    resume: str | None,
    model: str | None,
    yolo: bool,
    server: str | None = None,
    key: str | None = None,
    mode: Mode = "default",
    folder: str | None = None,
    first_prompt: str | None = None,
) -> int:
    """Run the chat TUI until the user quits; return the process exit code.

    `folder`: `continue_last` continues the newest session of this folder (None: of any
    folder); `first_prompt` is sent once the chat is up.

    Raises HermesError (bad configuration, an unusable or unreachable database or server,
    unknown --resume id, nothing to --continue) for the CLI to report, before the TUI
    takes the screen.
    """
    if yolo:
        settings = settings.replace(yolo=True)
    app, code = asyncio.run(
        _run_app(
            settings,
            server=server,
            key=key,
            model=model,
            continue_last=continue_last,
            resume=resume,
            mode=mode,
            folder=folder,
            first_prompt=first_prompt,
        )
    )
    if app.session_id is not None:
        where = f" --server {server}" if server else ""
        print(f"Resume with: hermes chat{where} --resume {app.session_id}", file=sys.stdout)
    return code or 0


async def _run_app(
    settings: Settings,
    *,
    server: str | None,
    key: str | None,
    model: str | None,
    continue_last: bool,
    resume: str | None,
    mode: Mode = "default",
    folder: str | None = None,
    first_prompt: str | None = None,
) -> tuple[HermesApp, int | None]:
    """Open the backend, run the app on this loop until it exits, close everything.

    Returns the app (its last session) and the code it exited with. A local app starts
    the MCP servers itself once its screen is up (`defer_mcp`); the backend closes them.
    """
    from hermes.backend import open_backend, resolve_session
    from hermes.progress_bar import rich_progress
    from hermes.tui.app import make_app

    async with open_backend(settings, server, key, model=model) as backend:
        session_id = await resolve_session(
            backend.sessions, continue_last=continue_last, resume=resume, cwd=folder
        )
        notices = [backend.remote_notice] if backend.remote_notice else backend.notices()
        with rich_progress() as progress:  # drawn before the TUI takes the screen
            agent = await backend.open_agent(progress=progress, defer_mcp=True)
        app = make_app(
            agent,
            backend.sessions,
            backend.settings,
            session_id=session_id,
            remote=backend.server,
            files=backend.files,
            cwd=os.getcwd(),
        )
        app.startup_notice = "\n".join(notices) or None
        app.first_prompt = first_prompt
        app.mcp = backend.mcp
        app.chat.mode = mode
        code = await app.run_async()
        return app, code
