"""Without PostgreSQL its cases skip with a visible reason, except under CI where they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CASE = "tests/storage_contract/test_records_contract.py::test_runs_prune_only_old_settled_rows"


def run_case(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "HERMES_TEST_PG_BIN": str(tmp_path / "no-postgres-here"), "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", CASE, "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_missing_postgres_skips_with_a_reason_on_a_laptop(tmp_path: Path) -> None:
    done = run_case(tmp_path, ci="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout
    assert "PostgreSQL tests skipped: " in done.stdout  # no server binaries (or no driver)


def test_missing_postgres_fails_under_ci(tmp_path: Path) -> None:
    done = run_case(tmp_path, ci="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 error" in done.stdout
    assert "PostgreSQL tests cannot run under CI" in done.stdout
