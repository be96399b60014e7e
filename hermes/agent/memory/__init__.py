"""Memory across sessions: `$HERMES_HOME/memories/MEMORY.md` and `USER.md`.

    entries.py   the text of one file as entries, and add / replace / remove on it
    files.py     reading and changing the files (locked, atomic, no symlink followed)
    section.py   the "# Memory" section a new session's system prompt gets

The `memory` tool (hermes/agent/tools/memory.py) changes the files; `hermes memory show`
and `hermes memory edit` (hermes/cli/memory_cmd.py) let the person see and edit them.
"""
