"""The `lsp` key of config.toml: diagnostics after edits, off or with chosen servers.

    lsp = false                          # no language servers at all

    [lsp.python]                         # or: pick the command of a language
    command = ["pyright-langserver", "--stdio"]

Without either, a known server found on PATH serves its language (see
hermes/agent/lsp/languages.py). TOML cannot have both forms, so a table means "on".
"""

from __future__ import annotations

from collections.abc import Mapping

from hermes.errors import ConfigError

TABLE = "lsp"
LANGUAGES = ("python", "typescript", "go", "rust")


def parse_lsp(raw: object, where: str) -> tuple[bool, tuple[tuple[str, tuple[str, ...]], ...]]:
    """(on, ((language, command), ...)) from the `lsp` key's value."""
    if isinstance(raw, bool):
        return raw, ()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: lsp is true, false, or [lsp.LANGUAGE] tables with a command")
    servers: list[tuple[str, tuple[str, ...]]] = []
    for language, entry in raw.items():
        label = f"{where}: [lsp.{language}]"
        if language not in LANGUAGES:
            raise ConfigError(f"{label}: the language is one of {', '.join(LANGUAGES)}")
        if not isinstance(entry, Mapping) or set(entry) != {"command"}:
            raise ConfigError(f"{label}: takes one key, command = [\"program\", \"arg\", …]")
        command = entry["command"]
        if not isinstance(command, list) or not command or not all(isinstance(p, str) and p for p in command):
            raise ConfigError(f"{label}: command must be a non-empty list of strings")
        servers.append((str(language), tuple(command)))
    return True, tuple(servers)
