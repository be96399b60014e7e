"""The root command: every command module imports, every command is registered (its
module loaded when a command line needs it), and a command module that fails to import
fails `hermes --help` and its own command instead of vanishing."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys

import pytest
import typer

import hermes.cli
from hermes.cli.main import COMMANDS, app

_CLI_MODULES = sorted(info.name for info in pkgutil.iter_modules(hermes.cli.__path__))


@pytest.mark.parametrize("name", _CLI_MODULES)
def test_every_cli_module_imports(name: str) -> None:
    importlib.import_module(f"hermes.cli.{name}")


def test_every_command_and_group_is_registered() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    with root.make_context("hermes", ["--help"], resilient_parsing=True) as ctx:
        assert root.list_commands(ctx) == list(COMMANDS)
        commands = {name: root.get_command(ctx, name) for name in COMMANDS}
    assert all(command is not None and command.name == name for name, command in commands.items())
    groups = {name: command for name, command in commands.items() if isinstance(command, typer.core.TyperGroup)}
    assert sorted(groups) == ["config", "db", "hooks", "mcp", "memory", "sessions"]
    assert sorted(groups["sessions"].commands) == [
        "delete", "diff", "export", "fork", "list", "redo", "rename", "search", "show", "stats", "undo",
    ]
    assert sorted(groups["config"].commands) == ["get", "path", "set", "show", "unset"]
    assert sorted(groups["mcp"].commands) == ["add", "list", "remove", "serve"]
    assert sorted(groups["db"].commands) == ["status", "upgrade"]
    assert sorted(groups["hooks"].commands) == ["list"]
    assert sorted(groups["memory"].commands) == ["edit", "show"]


def test_help_lists_every_command(run_hermes) -> None:  # type: ignore[no-untyped-def]
    proc = run_hermes("--help")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= listed, proc.stdout


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"]])
def test_a_command_module_that_fails_to_import_fails_the_command_line(argv: list[str]) -> None:
    # `None` in sys.modules makes importing hermes.cli.serve raise ImportError.
    script = "import sys; sys.modules['hermes.cli.serve'] = None; from hermes.cli.main import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )  # fmt: skip
    assert proc.returncode != 0
    assert "hermes.cli.serve" in proc.stderr.strip().splitlines()[-1], proc.stderr
