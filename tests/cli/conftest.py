"""Fixtures for the CLI tests: the real root app, a real state.db under HERMES_HOME.

HERMES_HOME itself points at tmp_path through the autouse fixture in tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from hermes.cli.main import app
from hermes.testing.state_db import SyncStateDb, open_sync_state


@pytest.fixture
def store(hermes_home: Path) -> Iterator[SyncStateDb]:
    """The store the CLI will open ($HERMES_HOME/state.db), for setting up and checking."""
    store = open_sync_state(hermes_home / "state.db")
    yield store
    store.close()


@pytest.fixture
def invoke() -> Any:
    """Run `hermes ARGS…` in process; stdout and stderr are kept apart."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return run


@pytest.fixture
def run_hermes() -> Any:
    """Run `python -m hermes ARGS…` as a real subprocess (it inherits HERMES_HOME)."""

    def run(*args: str, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hermes", *args],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )

    return run
