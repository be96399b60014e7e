"""Shared fixtures: every test gets its own HERMES_HOME and no stray endpoint settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pg_fixtures"]
"""PostgreSQL fixtures (`pg_server`, `pg_url`, `empty_pg_url`) for every test folder."""

_CLEARED_PREFIXES = ("HERMES_", "API_SERVER_", "OPENAI_")
"""Every setting a developer's shell may carry (endpoint, database, sandbox, …) is cleared."""
_KEPT_PREFIXES = ("HERMES_HOME", "HERMES_TEST_")
"""HERMES_HOME is set right here; HERMES_TEST_* configure the test harness itself."""


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) and not name.startswith(_KEPT_PREFIXES):
            monkeypatch.delenv(name)
    return home
