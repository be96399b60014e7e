"""The root `hermes` command: assembles the command groups, maps errors to exit codes.

No work happens at import: each command imports what it needs when it runs, so
`hermes --help` and `hermes sessions list` stay fast.

Exit codes: 0 success; 1 failure (HermesError, unknown id, failed/partial turn);
2 usage or configuration error; 75 port in use (serve); 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

try:  # typer vendors click from 0.27 on
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - older typer
    # mypy sees the vendored class; the older typer's click class stands in for it at runtime.
    from click.exceptions import UsageError as ClickUsageError  # type: ignore[assignment, no-redef, unused-ignore]

from hermes import __version__
from hermes.errors import HermesError
from hermes.redact import redact_text


class HermesGroup(TyperGroup):
    """Turns every HermesError raised by a command, and every command-line parse error,
    into one line on stderr and its exit code."""

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except ClickUsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                raise
            _usage_error(exc)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ClickUsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                raise
            _usage_error(exc)
        except HermesError as exc:
            typer.echo(f"hermes: {redact_text(str(exc))}", err=True)
            raise typer.Exit(exc.exit_code) from None


def _usage_error(exc: ClickUsageError) -> NoReturn:
    where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
    typer.echo(f"hermes: {exc.format_message()}{where}", err=True)
    raise typer.Exit(2) from None


app = typer.Typer(
    name="hermes",
    cls=HermesGroup,
    help="hermes: a terminal-first AI agent (chat, serve, sessions).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hermes {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """hermes: a terminal-first AI agent (chat, serve, sessions)."""


COMMANDS = ("acp", "chat", "config", "db", "doctor", "mcp", "serve", "sessions")
"""Every top-level command and command group; `hermes --help` lists exactly these."""


def _register() -> None:
    """Add every command. A command module that fails to import fails `hermes` at start:
    none is optional, so none is skipped. (The modules import their heavy parts lazily.)"""
    from hermes.cli import acp_cmd, chat, config_cmd, db_cmd, doctor, mcp_cmd, serve, sessions

    acp_cmd.register(app)
    chat.register(app)
    app.add_typer(sessions.app, name="sessions")
    app.add_typer(config_cmd.app, name="config")
    app.add_typer(mcp_cmd.app, name="mcp")
    db_cmd.register(app)
    doctor.register(app)
    serve.register(app)


_register()


def main() -> None:
    try:
        app(prog_name="hermes")
    except KeyboardInterrupt:
        sys.stderr.write("\nhermes: interrupted\n")
        sys.exit(130)
