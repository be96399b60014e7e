"""hermes: a terminal-first AI agent.

One asynchronous engine (`hermes.agent`) and one session database (`hermes.store`) sit
under three front ends: the Textual TUI (`hermes chat`), the OpenAI-compatible server
(`hermes serve`) and the scriptable commands (`hermes chat -q`, `hermes sessions …`).

Importing this package is cheap on purpose: nothing heavy (openai, textual, aiohttp)
is imported until a command needs it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
