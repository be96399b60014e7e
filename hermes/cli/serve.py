"""`hermes serve`: run the OpenAI-compatible agent server until SIGTERM/SIGINT.

    hermes serve [--host H] [--port P] [--key K] [--cors-origin O …] [--model-name M] [--yolo]
                 [--database-url URL] [--workers N] [--sandbox auto|on|off]

Flags win over the API_SERVER_* (and HERMES_DATABASE_URL) environment variables, which
win over config.toml. Start-up prints one line on stderr once the socket is bound:

    hermes serve: listening on http://127.0.0.1:8642

`--workers N` (N > 1, PostgreSQL only) runs N full server processes on that one port
under a supervising parent (`hermes.cli.serve_workers`); the ready line comes once every
worker is up, followed by a line naming the workers' pids.

The tool sandbox fails closed here: a server runs the model's commands with nobody
watching, so `sandbox = auto` (the default) without a working bwrap refuses to start
(exit 2, one line naming the opt-out `--sandbox off`), where `hermes chat` falls back to
unsandboxed tools with a notice. The check comes before the provider, the database and
any worker (a worker checks again: its probe is its own).

Exit codes: 0 after a clean shutdown; 2 for bad configuration (including a non-loopback
host without an API key, --workers above 1 without PostgreSQL, and no working bwrap
unless `sandbox = off`); 75 when the port is already in use; 1 for other bind errors and
an unreachable database.

Shutdown (SIGTERM or SIGINT): stop accepting connections, cancel running turns, mark
in-flight runs `interrupted` in the run store, close the databases, exit 0 — all within
`SHUTDOWN_BUDGET` seconds.
"""

from __future__ import annotations

import errno
import sys
from typing import TYPE_CHECKING, Any

import typer

from hermes.errors import HermesError, UsageError

if TYPE_CHECKING:
    from aiohttp import web

    from hermes.cli.serve_workers import WorkerLink
    from hermes.config import Settings
    from hermes.server.http.protocol import ConnectionLimits

EXIT_PORT_IN_USE = 75
SHUTDOWN_BUDGET = 4.5
"""Seconds from the signal to the end of cleanup (the contract says 5)."""
HANDLER_GRACE = 1.0
"""Seconds open requests get to finish once running turns have been settled."""
LISTEN_BACKLOG = 2048
"""Connections the kernel queues while the loop is busy (capped by net.core.somaxconn).
aiohttp's default of 128 overflows in a burst (a client opening 200 streams at once):
the dropped SYNs are retried after 1 s and 3 s, which is what the burst's slowest first
chunks waited for."""


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
    database_url: str | None = typer.Option(
        None,
        "--database-url",
        metavar="URL",
        help="postgresql:// URL of the database shared by every instance (HERMES_DATABASE_URL; default: "
        "SQLite files in HERMES_HOME).",
    ),
    workers: int = typer.Option(
        1, "--workers", metavar="N", help="Server processes sharing the port (more than 1 needs PostgreSQL)."
    ),
    sandbox: str | None = typer.Option(
        None,
        "--sandbox",
        metavar="auto|on|off",
        help="Tool sandbox (HERMES_SANDBOX; default auto): without a working bwrap, auto and on refuse to "
        "start; off runs tools unsandboxed.",
    ),
    worker_channel: int | None = typer.Option(None, "--worker-channel", hidden=True),
) -> None:
    """Run the OpenAI-compatible HTTP server."""
    if worker_channel is not None:
        raise typer.Exit(_serve_as_worker(worker_channel))
    from hermes.config import Settings

    overrides: dict[str, Any] = {
        "server_host": host,
        "server_port": port,
        "server_key": key,
        "server_cors_origins": list(cors_origin) if cors_origin else None,
        "server_model_name": model_name,
        "yolo": True if yolo else None,
        "database_url": database_url,
        "sandbox": sandbox,
    }
    overrides = {name: value for name, value in overrides.items() if value is not None}
    settings = Settings.load(overrides)
    try:
        check_binding(settings)
        from hermes.cli.serve_workers import check_workers

        check_workers(workers, settings.database_url)
        check_sandbox(settings)  # before the provider, the database and any worker
    except HermesError as exc:
        _say(f"hermes serve: {exc}")
        raise typer.Exit(exc.exit_code) from None
    if workers > 1:
        raise typer.Exit(_supervise(settings, overrides, workers))
    _prepare(settings, announce=True)
    app = _build_app(settings)
    code = _run(app, settings)
    if code:
        raise typer.Exit(code)


def check_sandbox(settings: Settings) -> None:
    """Refuse to serve unless tools run sandboxed or the settings say `sandbox = off`.

    ConfigError (exit 2): `on` without a working bwrap (from resolve_sandbox, as everywhere),
    and `auto` without one, whose fallback to off is only for a person at the keyboard. The
    probe is cached per process, so a second call costs nothing.
    """
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
    from hermes.errors import ConfigError

    state = resolve_sandbox(SandboxConfig.from_settings(settings))
    if state.fallback is not None:
        raise ConfigError(
            f"sandbox = auto, but {state.fallback}; with nobody watching, a server does not run tools "
            'unsandboxed: install bubblewrap (bwrap), or opt out with --sandbox off (or sandbox = "off")'
        )


def _prepare(settings: Settings, *, announce: bool) -> None:
    """Check the sandbox, choose the provider and do its slow one-time work.

    Raises ConfigError for settings the agent cannot run with. With `announce`, the
    provider's notice is printed now (a worker leaves that to its parent).
    """
    from hermes.agent.factory import choose_provider, prepare_provider
    from hermes.progress_bar import rich_progress

    check_sandbox(settings)  # a worker's own probe: the parent's said yes, this one must too
    choice = choose_provider(settings)
    if choice.notice and announce:
        _say(f"hermes serve: {choice.notice}")
    with rich_progress() as progress:  # the app builds the agent; the slow part is done here
        prepare_provider(settings, choice, progress)


def _build_app(settings: Settings) -> web.Application:
    from hermes.server.http import log_limit
    from hermes.server.http.app import create_app

    app = create_app(settings)
    log_limit.install()
    _raise_open_file_limit()
    return app


def _run(app: web.Application, settings: Settings, *, worker: WorkerLink | None = None) -> int:
    import asyncio

    from hermes.server.http.protocol import ConnectionLimits

    limits = ConnectionLimits.from_settings(settings)
    return asyncio.run(
        run_server(app, settings.server_host, settings.server_port, limits=limits, worker=worker)
    )


def _supervise(settings: Settings, overrides: dict[str, Any], workers: int) -> int:
    """The parent of `--workers N`: check once, migrate once, hold the port, run the workers."""
    import asyncio

    from hermes.cli import serve_workers
    from hermes.store.schema_admin import schema_upgrade

    _prepare(settings, announce=True)
    asyncio.run(schema_upgrade(settings))  # once here, so N workers do not queue on the migration lock
    host = settings.server_host
    try:
        reserved = serve_workers.reserve_port(host, settings.server_port)
    except serve_workers.PortInUse:
        _say(f"hermes serve: port {settings.server_port} on {host} is already in use")
        return EXIT_PORT_IN_USE
    except OSError as exc:
        _say(f"hermes serve: cannot bind {host}:{settings.server_port} ({exc.strerror or exc})")
        return 1

    def ready_lines(first_worker_notices: list[str]) -> list[str]:
        """The AGENTS.md lines (as a single process prints them before it binds), the ready line."""
        return [*first_worker_notices, f"hermes serve: listening on {_url(host, reserved.port)}"]

    try:
        return serve_workers.supervise(
            workers, {**overrides, "server_port": reserved.port}, say=_say, ready_lines=ready_lines
        )
    finally:
        reserved.close()


def _serve_as_worker(channel: int) -> int:
    """One worker of `hermes serve --workers N`: settings from the parent, report ready to it."""
    from hermes.cli.serve_workers import WorkerLink
    from hermes.config import Settings

    link = WorkerLink.from_fd(channel)
    try:
        hello = link.receive_hello()
        settings = Settings.load(hello.overrides)
        _prepare(settings, announce=False)
        app = _build_app(settings)
        return _run(app, settings, worker=link)
    except HermesError as exc:
        _say(f"hermes serve: worker {link.index}: {exc}")
        return exc.exit_code
    finally:
        link.close()


def _instruction_lines(app: web.Application) -> list[str]:
    """Name the AGENTS.md files the agent loaded, and say so when the cap cut them.

    Read once the app has started: on PostgreSQL the agent is built in its start-up.
    """
    from hermes.server.http.state import AGENT

    agent = app.get(AGENT)
    instructions = agent.instructions if agent is not None else None
    if instructions is None:
        return []
    return [f"hermes serve: {line}" for line in (instructions.summary, instructions.notice) if line]


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
    limits: ConnectionLimits | None = None,
    worker: WorkerLink | None = None,
) -> int:
    """Serve `app` until SIGTERM/SIGINT; returns the process exit code.

    The AGENTS.md lines come once the app has started (before the socket is bound). As a
    `worker` of `hermes serve --workers`, the socket is bound with SO_REUSEPORT, readiness
    and those lines go to the parent instead of stderr, the parent's exit stops the server
    as a signal does, and repeated signals during shutdown are ignored (the parent enforces
    the deadline).
    Shutdown order: the listening socket closes, the app's on_shutdown hooks interrupt
    turns and wait (bounded) for every stream's terminal frame, then aiohttp cancels
    what is left (`HANDLER_GRACE`), then the app's cleanup closes the stores.
    """
    import asyncio
    import signal

    from aiohttp import web

    from hermes.server.http.protocol import ConnectionLimits, HermesAppRunner

    runner = HermesAppRunner(
        app,
        limits=limits or ConnectionLimits(),
        handle_signals=False,
        access_log=None,
        shutdown_timeout=HANDLER_GRACE,
    )
    await runner.setup()  # the app's start-up: storage opened and migrated, agent built
    instruction_lines = _instruction_lines(app)
    if worker is None:
        for line in instruction_lines:
            _say(line)
    site = web.TCPSite(runner, host, port, reuse_port=True if worker is not None else None, backlog=LISTEN_BACKLOG)
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
    if worker is not None:
        worker.report_ready(instruction_lines)
        worker.watch_parent(loop, stop.set)
    else:
        _say(f"hermes serve: listening on {_url(host, bound)}")
    try:
        await stop.wait()
    finally:
        if worker is None:
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
