"""Shared fixtures: every test gets its own HERMES_HOME and no stray endpoint settings.

The bundled model's per-user cache (HERMES_MODEL_CACHE) is one folder for the whole
session, removed at its end: the tests that run the real model assemble it once, and
never into (or from) the developer's own ~/.cache/hermes/models.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["pg_fixtures"]
"""PostgreSQL fixtures (`pg_server`, `pg_url`, `empty_pg_url`) for every test folder."""

_CLEARED_PREFIXES = ("HERMES_", "API_SERVER_", "OPENAI_")
"""Every setting a developer's shell may carry (endpoint, database, sandbox, …) is cleared."""
_KEPT_PREFIXES = ("HERMES_HOME", "HERMES_TEST_")
"""HERMES_HOME is set right here; HERMES_TEST_* configure the test harness itself."""


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's HERMES_MODEL_CACHE; its 1.1 GB model is deleted when the session ends."""
    folder = tmp_path_factory.mktemp("model-cache")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_cache: Path) -> Path:
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) and not name.startswith(_KEPT_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HERMES_MODEL_CACHE", str(model_cache))
    monkeypatch.setenv("HERMES_LSP", "false")  # language servers only where a test asks for them
    return home
