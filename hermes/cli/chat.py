"""`hermes chat`: the TUI, or with -q a one-shot turn that streams to stdout.

    hermes chat                       interactive TUI (also bare `hermes`)
    hermes chat "prompt"              the TUI, sending this prompt first
    hermes chat -c [--any-folder]     continue the newest session of this folder (of any)
    hermes chat -q "question"         one turn; answer on stdout, activity on stderr
    git diff | hermes chat -q "review this"   piped stdin is added as context
    hermes chat -q "…" --json         one JSON object per event, then the result
    hermes chat --server URL [--key-file PATH]  the same, driving a remote `hermes serve`
                                      (also `server_url` / HERMES_SERVER_URL; the key:
                                      --key > --key-file > HERMES_SERVER_KEY > server_key)

On a terminal, control characters in what the model, a tool or the server sends are
shown as visible stand-ins (hermes.terminal_text); a piped stdout gets the answer
byte-exact.

Exit codes of a one-shot turn: 0 completed, 1 failed or partial, 2 usage or
configuration error, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hermes.cli._server_key import KEY_FILE_OPTION, KEY_OPTION
from hermes.errors import UsageError
from hermes.terminal_text import for_terminal

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from hermes.agent.mcp.status import McpServerStatus
    from hermes.agent.modes import Mode
    from hermes.agent.turn_handle import TurnHandle
    from hermes.backend import Backend, ChatAgent
    from hermes.cli._status import StatusLine
    from hermes.config import Settings

MAX_STDIN_BYTES = 5_000_000


def register(app: typer.Typer) -> None:
    app.command("chat")(chat)


def chat(
    prompt: str | None = typer.Argument(None, help="Open the chat and send this prompt first."),
    query: str | None = typer.Option(None, "-q", "--query", help="Ask one question and exit (no TUI)."),
    as_json: bool = typer.Option(False, "--json", help="With -q: print JSON lines, one per event, then the result."),
    continue_last: bool = typer.Option(
        False, "-c", "--continue", help="Continue the newest session of this folder."
    ),
    any_folder: bool = typer.Option(
        False, "--any-folder", help="With -c: continue the newest session of any folder."
    ),
    resume: str | None = typer.Option(
        None, "-r", "--resume", help="Continue the session with this id (or a unique start of it)."
    ),
    model: str | None = typer.Option(None, "-m", "--model", help="Model name for this run."),
    yolo: bool = typer.Option(False, "--yolo", help="Approve every command that is not hard-blocked."),
    quiet: bool = typer.Option(
        False, "--quiet", help="With -q: no waiting status on stderr (phase, elapsed time, tokens/s)."
    ),
    server: str | None = typer.Option(
        None, "--server", metavar="URL", help="Drive this hermes serve (sessions, turns, tools run there)."
    ),
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
    image: list[str] = typer.Option(  # noqa: B008 - typer's declaration style
        [], "-i", "--image", metavar="PATH", help="With -q: attach this image (PNG, JPEG, GIF, WebP); repeatable."
    ),
    mode_name: str | None = typer.Option(
        None, "--mode", metavar="MODE", help="Start in this mode: default, accept-edits or plan (read-only)."
    ),
) -> None:
    """Chat with the agent: the TUI, or one turn with -q."""
    from hermes.cli._common import load_settings
    from hermes.cli._server_key import server_key

    mode = _mode_option(mode_name)

    if continue_last and resume:
        raise UsageError("use either --continue or --resume, not both")  # before anything is opened
    if any_folder and not continue_last:
        raise UsageError("--any-folder goes with --continue")
    if prompt is not None and query is not None:
        raise UsageError("give the prompt either as an argument (the TUI) or with -q (one turn), not both")
    if prompt is not None and not prompt.strip():
        raise UsageError("the prompt is empty")
    here = None if any_folder else os.getcwd()
    settings = load_settings(model=model, yolo=yolo or None)
    server = server or settings.server_url
    if server and yolo:
        raise UsageError("--yolo does not reach a server: its own approval policy applies (hermes serve --yolo)")
    key = server_key(settings.server_key, key=key, key_file=key_file) if server else None
    piped = None if sys.stdin is None or sys.stdin.isatty() else _read_stdin()
    if query is None and (piped is None or prompt is not None):
        if image:
            raise UsageError("-i/--image needs -q (in the TUI: /image PATH)")
        if as_json:
            raise UsageError("--json needs -q (or a prompt on stdin)")
        from hermes.tui.launch import run_tui

        raise typer.Exit(
            run_tui(
                settings,
                continue_last=continue_last,
                resume=resume,
                model=model,
                yolo=settings.yolo,
                server=server,
                key=key,
                mode=mode,
                folder=here,
                first_prompt=prompt,
            )
        )
    import asyncio

    prompt = _compose_prompt(query, piped)
    code = asyncio.run(
        _one_shot(
            settings,
            prompt,
            server=server,
            key=key,
            model=model,
            as_json=as_json,
            continue_last=continue_last,
            resume=resume,
            quiet=quiet,
            images=image,
            mode=mode,
            folder=here,
        )
    )
    raise typer.Exit(code)


def _mode_option(name: str | None) -> Mode:
    from hermes.agent.modes import DEFAULT_MODE, parse_mode

    if name is None:
        return DEFAULT_MODE
    try:
        return parse_mode(name)
    except ValueError as exc:
        raise UsageError(f"--mode: {exc}") from None


def _read_stdin() -> str | None:
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise UsageError(f"stdin is larger than {MAX_STDIN_BYTES:,} bytes; pass a smaller excerpt")
    text = data.decode("utf-8", errors="replace")
    return text if text.strip() else None


def _compose_prompt(query: str | None, piped: str | None) -> str:
    if query is not None and not query.strip():
        raise UsageError("-q needs a non-empty prompt")
    if piped is None:
        assert query is not None
        return query
    if query is None:
        return piped
    return f"{query}\n\n<stdin>\n{piped.rstrip()}\n</stdin>"


async def _one_shot(
    settings: Settings,
    prompt: str,
    *,
    server: str | None = None,
    key: str | None = None,
    model: str | None = None,
    as_json: bool,
    continue_last: bool,
    resume: str | None,
    quiet: bool = False,
    images: list[str] | None = None,
    mode: Mode = "default",
    folder: str | None = None,
) -> int:
    """One turn on the backend (local, or the server at `server`), streamed to stdout.

    `folder`: `-c` continues the newest session of this folder (None: of any folder)."""
    from hermes.agent.progress import ProgressUpdate
    from hermes.backend import open_backend, resolve_session
    from hermes.cli._attach import prepare_input
    from hermes.cli._status import StatusLine, plain_interval

    status: StatusLine | None = None
    await prepare_input(settings, "", images or [])  # a bad image fails now, before anything starts

    def progress(update: ProgressUpdate) -> None:
        if status is not None:
            status.on_progress(update)

    try:
        async with open_backend(settings, server, key, model=model) as backend:
            # After the repair (before --continue picks a session), before the model is loaded.
            session_id = await resolve_session(
                backend.sessions, continue_last=continue_last, resume=resume, cwd=folder
            )
            run_in = await _tools_folder(backend, session_id, as_json=as_json)
            for notice in backend.notices():
                if not as_json:
                    sys.stderr.write(f"hermes: {for_terminal(notice)}\n")
            # The status line covers preparing the model too (--quiet: nothing at all).
            if not quiet:
                status = StatusLine(sys.stderr, tty=sys.stderr.isatty(), interval=plain_interval()).start()
            agent = await backend.open_agent(progress=None if quiet else progress, defer_mcp=True)
            return await _run_turn(
                backend, agent, prompt, session_id, status, as_json=as_json, images=images or [], mode=mode, cwd=run_in
            )
    finally:
        if status is not None:
            status.close()


async def _tools_folder(backend: Backend, session_id: str | None, *, as_json: bool) -> str:
    """The folder this turn's tools run in: the resumed session's own (said on stderr when it
    is not this one), this one for a new session. A session whose folder is gone (or is now
    a link elsewhere) stops here with FolderGone: its tools never run in another folder.
    A server runs the tools in its own folder; nothing is checked here for it."""
    from hermes.session_folder import FolderGone, check_folder

    here = os.getcwd()
    if session_id is None or backend.remote:
        return here
    record = await backend.sessions.get_session(session_id)
    check = check_folder(record.cwd, here=here)
    if check.run_in is None:
        raise FolderGone(check)
    notice = check.notice()
    if notice and not as_json:
        sys.stderr.write(f"hermes: {for_terminal(notice)}\n")
    return check.run_in


async def _run_turn(
    backend: Backend,
    agent: ChatAgent,
    prompt: str,
    session_id: str | None,
    status: StatusLine | None,
    *,
    as_json: bool,
    images: list[str],
    mode: Mode = "default",
    cwd: str | None = None,
) -> int:
    """Run the turn, rendering its events; `status` (a StatusLine or None) is erased before every write."""
    import asyncio
    from contextlib import nullcontext

    from hermes.agent.turn_handle import TurnCrashed
    from hermes.agent.types import TurnRequest
    from hermes.cli._approval import ApprovalOrder, tty_approver
    from hermes.cli._attach import prepare_input
    from hermes.cli._custom_prompt import expand_slash_prompt
    from hermes.cli._render import make_renderer
    from hermes.cli._turn_signals import TurnSignals

    settings = backend.settings

    def quiet_output() -> AbstractContextManager[None]:
        return status.paused() if status is not None else nullcontext()

    if agent.instructions is not None and agent.instructions.notice and not as_json:
        with quiet_output():
            sys.stderr.write(f"hermes: {for_terminal(agent.instructions.notice)}\n")
    slash = expand_slash_prompt(prompt, home=settings.home, cwd=Path.cwd(), skills=agent.skills)
    if slash.note is not None and not as_json:
        with quiet_output():
            sys.stderr.write(f"hermes: {for_terminal(slash.note)}\n")
    # after the command's expansion: its text's `@` mentions are read here, also for a server
    content, notes = await prepare_input(settings, slash.prompt, images)
    for note in notes:
        with quiet_output():
            sys.stderr.write(f"hermes: {for_terminal(note)}\n")
    renderer = make_renderer(as_json)
    order = ApprovalOrder()
    approve = order.ordered(None if settings.yolo else tty_approver(settings.approval_timeout))
    request = TurnRequest(
        input=content,
        session_id=session_id,
        source="cli",
        approve=status.around_approval(approve) if status is not None else approve,
        yolo=settings.yolo,
        mode=mode,
        cwd=cwd,
    )
    handle: TurnHandle | None = None
    result = None

    def report_mcp(mcp_status: McpServerStatus) -> None:
        with quiet_output():
            _report_mcp(mcp_status)

    with TurnSignals() as signals:
        try:
            await backend.start_mcp(report_mcp)
            handle = agent.start(request)
            signals.attach(handle)
            async for event in handle.events():
                with quiet_output():
                    if status is not None:
                        status.observe(event)
                    if event.type in ("model.progress", "tool.output"):
                        continue  # for the status line only (also left out of --json)
                    if event.type == "turn.completed":
                        result = event.result
                        if not as_json:
                            continue
                    renderer.handle(event)
                if event.type == "approval.requested":
                    order.shown(event.call_id)  # its tool's line is out: the question may follow
        except TurnCrashed as crash:
            raise crash.cause from None  # reported like any error of the command
        except asyncio.CancelledError:
            if not signals.stop_asked:
                raise
            if status is not None:
                status.close()
            if not as_json:
                sys.stderr.write("hermes: interrupted\n")
            return 130
        finally:
            if handle is not None:
                await handle.aclose(grace=0)  # the first signal's stop was the grace; ended turns are done already
            with quiet_output():
                renderer.close()
            if status is not None:
                status.close()
    assert result is not None
    if as_json:
        from hermes.cli._common import json_line
        from hermes.cli._usage import result_line

        line = result_line(result, settings.prices)
        sys.stdout.write(json_line(line))
    return _report(result, as_json)


def _report_mcp(status: McpServerStatus) -> None:
    sys.stderr.write(f"hermes: {for_terminal(status.line())}\n")


def _report(result: Any, as_json: bool) -> int:
    if result.status == "completed":
        return 0
    if result.status == "interrupted":
        if not as_json:
            sys.stderr.write("hermes: interrupted\n")
        return 130
    if not as_json:
        label = "incomplete answer" if result.status == "partial" else "failed"
        sys.stderr.write(f"hermes: {label}: {for_terminal(str(result.error))}\n")
    return 1
