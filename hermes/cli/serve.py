"""`hermes serve`: run the OpenAI-compatible agent server until SIGTERM/SIGINT.

    hermes serve [--host H] [--port P] [--key K] [--cors-origin O …] [--model-name M] [--yolo]

Flags win over the API_SERVER_* environment variables, which win over config.toml.
Start-up prints one line on stderr once the socket is bound:

    hermes serve: listening on http://127.0.0.1:8642

Exit codes: 0 after a clean shutdown; 2 for bad configuration (including a non-loopback
host without an API key); 75 when the port is already in use; 1 for other bind errors.

Shutdown (SIGTERM or SIGINT): stop accepting connections, cancel running turns, mark
in-flight runs `interrupted` in the run store, close the databases, exit 0 — all within
`SHUTDOWN_BUDGET` seconds.
"""

from __future__ import annotations

import errno
import sys
from typing import TYPE_CHECKING

import typer

from hermes.errors import UsageError

if TYPE_CHECKING:
    from aiohttp import web

    from hermes.config import Settings
    from hermes.server.protocol import ConnectionLimits

EXIT_PORT_IN_USE = 75
SHUTDOWN_BUDGET = 4.5
"""Seconds from the signal to the end of cleanup (the contract says 5)."""
HANDLER_GRACE = 1.0
"""Seconds open requests get to finish once running turns have been settled."""


def register(app: typer.Typer) -> None:
    """Add the `serve` command to the root app."""
    app.command("serve", help="Run the OpenAI-compatible HTTP server.")(serve)


def serve(
    host: str | None = typer.Option(None, "--host", help="Address to bind (API_SERVER_HOST; default 127.0.0.1)."),
    port: int | None = typer.Option(
        None, "--port", help="Port to bind, 0 for any free one (API_SERVER_PORT; default 8642)."
    ),
    key: str | None = typer.Option(None, "--key", help="Bearer key clients must send (API_SERVER_KEY)."),
    cors_origin: list[str] | None = typer.Option(
        None, "--cors-origin", help="Browser origin allowed to call the server; repeatable (API_SERVER_CORS_ORIGINS)."
    ),
    model_name: str | None = typer.Option(
        None, "--model-name", help="Model id the server advertises (API_SERVER_MODEL_NAME)."
    ),
    yolo: bool = typer.Option(
        False, "--yolo", help="Run commands that need approval without asking (hard-blocked ones never run)."
    ),
) -> None:
    """Run the OpenAI-compatible HTTP server."""
    from hermes.config import Settings

    settings = Settings.load(
        {
            "server_host": host,
            "server_port": port,
            "server_key": key,
            "server_cors_origins": tuple(cors_origin) if cors_origin else None,
            "server_model_name": model_name,
            "yolo": True if yolo else None,
        }
    )
    try:
        check_binding(settings)
    except UsageError as exc:
        _say(f"hermes serve: {exc}")
        raise typer.Exit(exc.exit_code) from None
    from hermes.agent.factory import choose_provider, prepare_provider
    from hermes.agent.sandbox import sandbox_notice
    from hermes.cli._progress import rich_progress
    from hermes.server.app import create_app

    choice = choose_provider(settings)
    if choice.notice:
        _say(f"hermes serve: {choice.notice}")
    sandbox = sandbox_notice(settings)  # raises for `sandbox = on` without a working bwrap
    with rich_progress() as progress:  # the app builds the agent; the slow part is done here
        prepare_provider(settings, choice, progress)
    app = create_app(settings)
    _report_instructions(app)
    import asyncio

    from hermes.server import log_limit
    from hermes.server.protocol import ConnectionLimits

    log_limit.install()
    _raise_open_file_limit()
    after_ready = (f"hermes serve: {sandbox}",) if sandbox else ()
    limits = ConnectionLimits.from_settings(settings)
    code = asyncio.run(
        run_server(app, settings.server_host, settings.server_port, notices=after_ready, limits=limits)
    )
    if code:
        raise typer.Exit(code)


def _report_instructions(app: web.Application) -> None:
    """Name the AGENTS.md files the agent loaded, and say so when the cap cut them."""
    from hermes.agent.instructions import ProjectInstructions
    from hermes.server.state import AGENT

    instructions = getattr(app[AGENT], "instructions", None)
    if isinstance(instructions, ProjectInstructions):
        for line in (instructions.summary, instructions.notice):
            if line:
                _say(f"hermes serve: {line}")


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(settings: Settings) -> None:
    """Refuse settings the server must not start with (UsageError → exit 2)."""
    if not settings.server_host.strip():
        raise UsageError("the host must not be empty")
    if not 0 <= settings.server_port <= 65535:
        raise UsageError(f"port {settings.server_port} is out of range (0-65535)")
    if settings.server_key is not None and not settings.server_key.strip():
        raise UsageError("the API key must not be blank")
    if settings.server_key is None and not is_loopback(settings.server_host):
        raise UsageError(
            f"refusing to bind {settings.server_host} without an API key "
            "(set API_SERVER_KEY or --key, or bind 127.0.0.1)"
        )


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def _raise_open_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit, so the connection cap is reached before EMFILE."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard > soft:
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):
        pass  # not available (or not allowed): the defaults stay


async def run_server(
    app: web.Application,
    host: str,
    port: int,
    *,
    notices: tuple[str, ...] = (),
    limits: ConnectionLimits | None = None,
) -> int:
    """Serve `app` until SIGTERM/SIGINT; returns the process exit code.

    `notices` are printed right after the listening line (which stays the first line).
    Shutdown order: the listening socket closes, the app's on_shutdown hooks interrupt
    turns and wait (bounded) for every stream's terminal frame, then aiohttp cancels
    what is left (`HANDLER_GRACE`), then the app's cleanup closes the stores.
    """
    import asyncio
    import signal

    from aiohttp import web

    from hermes.server.protocol import ConnectionLimits, HermesAppRunner

    runner = HermesAppRunner(
        app,
        limits=limits or ConnectionLimits(),
        handle_signals=False,
        access_log=None,
        shutdown_timeout=HANDLER_GRACE,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        if exc.errno == errno.EADDRINUSE:
            _say(f"hermes serve: port {port} on {host} is already in use")
            return EXIT_PORT_IN_USE
        _say(f"hermes serve: cannot bind {host}:{port} ({exc.strerror or exc})")
        return 1
    server = site._server  # aiohttp keeps the bound sockets here; needed for --port 0
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    _say(f"hermes serve: listening on {_url(host, bound)}")
    for line in notices:
        _say(line)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        try:
            await asyncio.wait_for(runner.cleanup(), SHUTDOWN_BUDGET)
        except TimeoutError:
            _say("hermes serve: shutdown took too long; exiting anyway")
    return 0


def _say(line: str) -> None:
    from hermes.redact import redact_text

    sys.stderr.write(redact_text(line) + "\n")
    sys.stderr.flush()
