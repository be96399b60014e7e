"""Modal screens of the chat TUI."""
