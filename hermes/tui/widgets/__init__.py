"""Widgets of the chat TUI, one per module."""
