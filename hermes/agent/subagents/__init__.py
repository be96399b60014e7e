"""Subagents: the `task` tool runs a child turn with a fresh context (task.py), as one of
the user's agent definitions (definitions.py) or the read-only default."""
