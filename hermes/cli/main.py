"""The root `hermes` command: assembles the command groups, maps errors to exit codes.

No work happens at import: a command's module is imported when the command line names
it (or `--help` lists it), and each command imports what it needs when it runs, so
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
from hermes.terminal_text import for_terminal


class HermesGroup(TyperGroup):
    """Turns every HermesError raised by a command, and every command-line parse error,
    into one line on stderr and its exit code; loads a command's module when it is needed."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args:
            args = ["chat"]  # bare `hermes` opens the chat
        result: list[str] = super().parse_args(ctx, args)
        return result

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
            # An error can quote a server, an upstream or a file name: controls made visible.
            typer.echo(f"hermes: {for_terminal(redact_text(str(exc)))}", err=True)
            raise typer.Exit(exc.exit_code) from None


def _usage_error(exc: ClickUsageError) -> NoReturn:
    where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
    typer.echo(f"hermes: {exc.format_message()}{where}", err=True)
    raise typer.Exit(2) from None


app = typer.Typer(
    name="hermes",
    cls=HermesGroup,
    help="hermes: a terminal-first AI agent (chat, serve, sessions).",
    no_args_is_help=False,
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


COMMANDS = {
    "acp": "acp_cmd",
    "chat": "chat",
    "doctor": "doctor",
    "serve": "serve",
    "sessions": "sessions",
    "config": "config_cmd",
    "mcp": "mcp_cmd",
    "hooks": "hooks_cmd",
    "memory": "memory_cmd",
    "models": "models_cmd",
    "db": "db_cmd",
}
"""Every top-level command and command group (in the order `hermes --help` lists them)
and its module in `hermes.cli`: one with `register(app)` adds itself, else its `app`
is the group."""


def _load(name: str) -> Any:
    """The click command of one top-level command, from its module. A module that fails
    to import fails the command line that needs it (and `hermes --help`, which lists
    them all): none is optional, so none is skipped."""
    import importlib

    module = importlib.import_module(f"hermes.cli.{COMMANDS[name]}")
    holder = typer.Typer(rich_markup_mode=None)
    holder.callback()(_no_op)  # a group, so the one command keeps its own name
    if hasattr(module, "register"):
        module.register(holder)
    else:
        holder.add_typer(module.app, name=name)
    group = typer.main.get_command(holder)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


def _no_op() -> None:
    return None


def main() -> None:
    try:
        app(prog_name="hermes")
    except KeyboardInterrupt:
        sys.stderr.write("\nhermes: interrupted\n")
        sys.exit(130)
