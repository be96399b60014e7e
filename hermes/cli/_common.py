"""Small helpers shared by the commands: settings, JSON output (storage: `_storage`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from hermes.config import Settings


def load_settings(**flags: Any) -> Settings:
    """Settings with command-line flags on top (None = flag not given)."""
    return Settings.load(flags)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
