"""`hermes chat` without -q: open the store, build the agent, run the app, say how to resume."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hermes.config import Settings
from hermes.errors import UsageError
from hermes.store.base import SessionStore


def resolve_session(store: SessionStore, *, continue_last: bool, resume: str | None) -> str | None:
    """The session to open: --resume ID (must exist), -c the newest one of any source, else None."""
    if resume:
        return store.get_session(resume).id
    if continue_last:
        latest = store.latest_session()
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

    Raises HermesError (bad configuration, unknown --resume id) for the CLI to report.
    """
    from hermes.agent.factory import build_agent, choose_provider
    from hermes.agent.mcp import McpManager
    from hermes.cli._progress import rich_progress
    from hermes.store import open_session_store
    from hermes.store.sqlite_async import SqliteSessions
    from hermes.tui.app import make_app

    if continue_last and resume:
        raise UsageError("use either --continue or --resume, not both")
    if model:
        settings = settings.replace(model=model)
    if yolo:
        settings = settings.replace(yolo=True)
    settings.ensure_home()
    store = open_session_store(settings.state_db_path)
    try:
        from hermes.store.repair import repair_after_crash

        repair_after_crash(store)  # turns a crashed process left open (before --continue picks one)
        session_id = resolve_session(store, continue_last=continue_last, resume=resume)
        choice = choose_provider(settings)
        with rich_progress() as progress:  # drawn before the TUI takes the screen
            agent = build_agent(settings, SqliteSessions(store), choice=choice, progress=progress)
        app = make_app(agent, store, settings, session_id=session_id)
        from hermes.agent.sandbox import sandbox_notice

        app.startup_notice = "\n".join(n for n in (choice.notice, sandbox_notice(settings)) if n) or None
        app.mcp = McpManager.from_settings(settings, cwd=Path.cwd())

        async def main() -> int | None:
            try:
                return await app.run_async()
            finally:
                if app.mcp is not None:
                    await app.mcp.aclose()
                await agent.aclose()

        code = asyncio.run(main())
        if app.session_id is not None:
            print(f"Resume with: hermes chat --resume {app.session_id}", file=sys.stdout)
        return code or 0
    finally:
        store.close()
