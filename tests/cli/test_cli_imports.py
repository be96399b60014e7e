"""What each fast command imports: `hermes --help` and `hermes sessions list` (on the
SQLite files) load no event loop, no network stack, no server, TUI or model client, and
no logging (a server's background checkpoints are not a command's).

A behaviour test, not a timing test: the command runs in a fresh interpreter, which
then prints the modules it holds (`sys.modules`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_RUN = (
    "import json, sys\n"
    "from hermes.cli.main import main\n"
    "sys.argv = ['hermes', *sys.argv[1:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exit:\n"
    "    assert exit.code in (0, None), exit.code\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)
HEAVY = ("asyncio", "ssl", "aiohttp", "openai", "textual", "rich", "psycopg", "psycopg_pool", "hermes.server",
         "hermes.agent", "hermes.tui", "hermes.runs", "hermes.runtime", "logging",
         "hermes.store.sqlite.wal_flusher")  # fmt: skip


def _modules(home: Path, *argv: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, timeout=60,
        env={**os.environ, "HERMES_HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["sessions", "list"], ["sessions", "list", "--json"]])
def test_fast_commands_import_nothing_heavy(hermes_home: Path, argv: list[str]) -> None:
    assert _heavy(_modules(hermes_home, *argv)) == []


def test_help_imports_no_storage(hermes_home: Path) -> None:
    modules = _modules(hermes_home, "--help")
    assert not any(m.startswith("hermes.store") for m in modules)
    assert "hermes.config" not in modules


def test_sessions_list_uses_one_command_module_and_the_store_rules(hermes_home: Path) -> None:
    modules = _modules(hermes_home, "sessions", "list")
    assert "hermes.cli.sessions" in modules
    assert "hermes.store.rules.sessions" in modules  # the rules' one home, run by `StateDb.run`
    assert not {"hermes.cli.chat", "hermes.cli.serve", "hermes.cli.doctor"} & modules
    assert "hermes.store.sqlite.assemble" not in modules  # runs, responses, events: not needed
    # The URL helpers only (which backend `database_url` selects), never the driver.
    assert {m for m in modules if m.startswith("hermes.store.postgres")} <= {
        "hermes.store.postgres",
        "hermes.store.postgres.connect",
    }
