"""`hermes chat` without -q: open the storage, build the agent, run the app, say how to resume.

The storage (SQLite files, or PostgreSQL when `database_url` is set) is opened inside the
asyncio loop the app runs on, because a PostgreSQL connection pool belongs to the loop
that opened it; it is closed on that loop when the app has exited, whatever happened.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config import Settings
from hermes.errors import UsageError
from hermes.store.api import AsyncSessionStore

if TYPE_CHECKING:
    from hermes.tui.app import HermesApp


async def resolve_session(store: AsyncSessionStore, *, continue_last: bool, resume: str | None) -> str | None:
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
    settings.ensure_home()
    app, code = asyncio.run(_run_app(settings, continue_last=continue_last, resume=resume))
    if app.session_id is not None:
        print(f"Resume with: hermes chat --resume {app.session_id}", file=sys.stdout)
    return code or 0


async def _run_app(settings: Settings, *, continue_last: bool, resume: str | None) -> tuple[HermesApp, int | None]:
    """Open the storage, run the app on this loop until it exits, close everything.

    Returns the app (its last session) and the code it exited with.
    """
    from hermes.agent.factory import build_agent, choose_provider
    from hermes.agent.mcp import McpManager
    from hermes.agent.sandbox import sandbox_notice
    from hermes.cli._progress import rich_progress
    from hermes.store.storage import open_storage
    from hermes.tui.app import make_app

    storage = await open_storage(settings)
    try:
        store = storage.sessions
        await store.repair_abandoned_turns()  # turns a crashed owner left open (before --continue picks one)
        session_id = await resolve_session(store, continue_last=continue_last, resume=resume)
        choice = choose_provider(settings)
        with rich_progress() as progress:  # drawn before the TUI takes the screen
            agent = build_agent(settings, store, choice=choice, progress=progress)
        try:
            app = make_app(agent, store, settings, session_id=session_id)
            app.startup_notice = "\n".join(n for n in (choice.notice, sandbox_notice(settings)) if n) or None
            app.mcp = McpManager.from_settings(settings, cwd=Path.cwd())
            try:
                code = await app.run_async()
            finally:
                if app.mcp is not None:
                    await app.mcp.aclose()
        finally:
            await agent.aclose()
        return app, code
    finally:
        await storage.aclose()
