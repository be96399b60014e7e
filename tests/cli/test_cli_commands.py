"""The root command: every command module imports, every command is registered, and a
command module that fails to import fails `hermes` at start instead of vanishing."""

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
    assert sorted(root.commands) == sorted(COMMANDS)
    groups = {name: command for name, command in root.commands.items() if isinstance(command, typer.core.TyperGroup)}
    assert sorted(groups) == ["config", "db", "mcp", "sessions"]
    assert sorted(groups["sessions"].commands) == [
        "delete", "diff", "export", "fork", "list", "redo", "rename", "search", "show", "stats", "undo",
    ]
    assert sorted(groups["config"].commands) == ["get", "path", "set", "show", "unset"]
    assert sorted(groups["mcp"].commands) == ["add", "list", "remove"]
    assert sorted(groups["db"].commands) == ["status", "upgrade"]


def test_help_lists_every_command(run_hermes) -> None:  # type: ignore[no-untyped-def]
    proc = run_hermes("--help")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= listed, proc.stdout


def test_a_command_module_that_fails_to_import_fails_at_start() -> None:
    # `None` in sys.modules makes `from hermes.cli import serve` raise ImportError.
    script = "import sys; sys.modules['hermes.cli.serve'] = None; import hermes.cli.main"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )
    assert proc.returncode != 0
    assert "hermes.cli.serve" in proc.stderr.strip().splitlines()[-1], proc.stderr
