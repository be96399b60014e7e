"""Small helpers shared by the commands: settings, JSON output (a command's event loop: `_command_loop`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config import Settings


def load_settings(**flags: Any) -> Settings:
    """Settings with command-line flags on top (None = flag not given)."""
    from hermes.config import Settings

    return Settings.load(flags)


def json_line(value: Any) -> str:
    """`value` as one line of JSON (UTF-8 as it is; DEL and C1 controls escaped, so a
    terminal showing it cannot take them for control sequences)."""
    from hermes.terminal_text import json_for_terminal

    return json_for_terminal(json.dumps(value, ensure_ascii=False, default=str)) + "\n"


def print_json(value: Any) -> None:
    sys.stdout.write(json_line(value))
