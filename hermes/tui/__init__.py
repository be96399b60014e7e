"""The Textual chat TUI (`hermes chat`). Importing this package does no work.

    from hermes.tui import run_tui        # what the CLI calls
    from hermes.tui.app import make_app    # what tests call
"""

from __future__ import annotations

from hermes.tui.launch import run_tui

__all__ = ["run_tui"]
