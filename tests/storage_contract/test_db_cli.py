"""`hermes db status|upgrade` as a user runs them, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def hermes(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_sqlite_status_then_upgrade(hermes_home: Path) -> None:
    status = hermes("db", "status")
    assert status.returncode == 0, status.stderr
    assert "backend: sqlite" in status.stdout and "not created yet" in status.stdout
    upgrade = hermes("db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert "applied to" in upgrade.stdout and "m012_runs_and_responses" in upgrade.stdout
    data = json.loads(hermes("db", "status", "--json").stdout)
    assert data["object"] == "db.status" and data["backend"] == "sqlite" and data["current"] is True
    assert [Path(db["database"]).name for db in data["databases"]] == ["state.db"]  # one file
    again = hermes("db", "upgrade")
    assert "already up to date" in again.stdout


def test_postgres_status_and_upgrade_mask_the_password(empty_pg_url: str) -> None:
    # trust authentication ignores the password, so it can be any secret-looking text
    url = empty_pg_url.replace("postgres@", "postgres:hunter2secret@")
    env = {"HERMES_DATABASE_URL": url}
    status = hermes("db", "status", env=env)
    assert status.returncode == 0, status.stderr
    assert "backend: postgres" in status.stdout and "pending" in status.stdout
    assert "hunter2secret" not in status.stdout and "postgres:****@" in status.stdout
    upgrade = hermes("db", "upgrade", "--json", env=env)
    assert upgrade.returncode == 0, upgrade.stderr
    data = json.loads(upgrade.stdout)
    assert data["backend"] == "postgres" and data["current"] is True
    assert "hunter2secret" not in upgrade.stdout


@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
def test_bad_urls_are_one_line_errors(hermes_home: Path) -> None:
    unreachable = hermes("db", "status", env={"HERMES_DATABASE_URL": "postgresql://u:pw-secret@127.0.0.1:1/x"})
    assert unreachable.returncode == 1
    assert unreachable.stderr.count("\n") == 1 and "pw-secret" not in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
    unsupported = hermes("db", "upgrade", env={"HERMES_DATABASE_URL": "mysql://u:pw-secret@h/x"})
    assert unsupported.returncode == 2 and "database_url" in unsupported.stderr
    assert "pw-secret" not in unsupported.stderr
