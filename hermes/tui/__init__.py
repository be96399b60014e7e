"""The Textual chat TUI (`hermes chat`). Importing this package does no work.

    from hermes.tui.launch import run_tui   # what the CLI calls
    from hermes.tui.app import make_app     # what tests call
"""
