"""Small helpers shared by the commands: settings, the store, JSON output."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from hermes.config import Settings

if TYPE_CHECKING:
    from hermes.store.base import SessionStore


def load_settings(**flags: Any) -> Settings:
    """Settings with command-line flags on top (None = flag not given)."""
    return Settings.load(flags)


def open_store(settings: Settings) -> SessionStore:
    from hermes.store import open_session_store

    settings.ensure_home()
    return open_session_store(settings.state_db_path)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
