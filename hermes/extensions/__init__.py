"""Extension files a user or a project keeps beside hermes: custom slash commands
(`commands.py`: `*.md` files in `commands/` folders) and skills (`skills.py`: folders with a
`SKILL.md`), both with the simple front matter of `frontmatter.py`, read through
`files.py`'s guarded reader (no symlink out of its folder, no huge file).

This package reads files only: it knows nothing about the engine, the TUI or the server.
The `skill` tool (hermes/agent/tools/skill.py) and the front ends build on it.
"""
