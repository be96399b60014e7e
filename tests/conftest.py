"""Shared fixtures: every test gets its own HERMES_HOME and no stray endpoint settings."""

from __future__ import annotations

from pathlib import Path

import pytest

_ENDPOINT_VARS = (
    "HERMES_MODEL",
    "HERMES_BASE_URL",
    "HERMES_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "HERMES_PROVIDER",
    "HERMES_YOLO",
    "HERMES_STREAM_RETRIES",
    "HERMES_STREAM_STALE_TIMEOUT",
    "HERMES_SYSTEM_PROMPT",
    "HERMES_TOOL_PROTOCOL",
    "HERMES_INSTRUCTIONS_MAX_BYTES",
    "API_SERVER_KEY",
    "API_SERVER_HOST",
    "API_SERVER_PORT",
    "API_SERVER_CORS_ORIGINS",
)


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in _ENDPOINT_VARS:
        monkeypatch.delenv(name, raising=False)
    return home
