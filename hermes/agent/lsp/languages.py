"""Which language a file is, and which language server command serves it.

A configured command (`[lsp.LANGUAGE]`) wins; otherwise the first known server found on
the tool environment's PATH, in the order below. None found: no diagnostics for that
language (and `hermes doctor` says which servers it looked for).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

LANGUAGE_OF_SUFFIX: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "typescript",
    ".jsx": "typescript",
    ".mjs": "typescript",
    ".cjs": "typescript",
    ".go": "go",
    ".rs": "rust",
}
"""typescript-language-server serves JavaScript too."""

LANGUAGE_ID: Mapping[str, str] = {
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
}  # fmt: skip
"""LSP's languageId where it is not the language's name."""

KNOWN_SERVERS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "python": (("pylsp",), ("pyright-langserver", "--stdio")),
    "typescript": (("typescript-language-server", "--stdio"),),
    "go": (("gopls",),),
    "rust": (("rust-analyzer",),),
}


def language_of(path: Path) -> str | None:
    return LANGUAGE_OF_SUFFIX.get(path.suffix.lower())


def language_id(path: Path) -> str:
    suffix = path.suffix.lower()
    return LANGUAGE_ID.get(suffix) or LANGUAGE_OF_SUFFIX.get(suffix, "plaintext")


def server_command(
    language: str, configured: Mapping[str, tuple[str, ...]], path_env: str | None
) -> tuple[str, ...] | None:
    """The command that serves `language`, or None when there is none."""
    if language in configured:
        return configured[language]
    for command in KNOWN_SERVERS.get(language, ()):
        if shutil.which(command[0], path=path_env) is not None:
            return command
    return None
