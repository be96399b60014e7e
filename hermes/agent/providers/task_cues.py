"""Cues read from a user's request, for steering a small model (the JSON-action adapter).

    named_check(request)          -> the check command it names (`python -m pytest -q`), or None
    asks_for_change(request)      -> False for a plain question (no word asking for a change)
    existing_files(request, cwd)  -> the file names it mentions that exist in `cwd`, in order

Heuristics on English text: they only decide what the adapter offers or does first,
never what a tool may do.
"""

from __future__ import annotations

import re
from pathlib import Path

WRITE_TOOLS = frozenset({"write_file", "patch"})
"""Tools that change files: offered only when the request asks for a change (`asks_for_change`)."""
_CHANGE_WORDS = re.compile(
    r"\b(fix|change|edit|modify|update|add|append|insert|create|make|write|rename|replace|remove|delete|"
    r"refactor|implement|rewrite|move|set|turn|convert|bump|correct|patch|apply|save|put|generate|format)\b",
    re.IGNORECASE,
)
_CHECK_IN_TICKS = re.compile(r"`([^`\n]{2,120})`")
_CHECK_START = re.compile(
    r"^(\./|python3?\b|py\.?test\b|pytest\b|npm\b|npx\b|yarn\b|pnpm\b|make\b|cargo\b|go\b|node\b|"
    r"bash\b|sh\b|tox\b|nox\b|uv\b|ruff\b|mypy\b|deno\b|bun\b|mvn\b|gradle\b|dotnet\b|ctest\b)"
)
_CHECK_PLAIN = re.compile(
    r"\b(python3? -m pytest(?: -q)?|pytest(?: -q)?|npm test|make test|cargo test|go test \./\.\.\.)"
)


def named_check(request: str) -> str | None:
    """The command a request names as its check (`python -m pytest -q` in backticks, or a
    plain `pytest` / `npm test` / …), else None."""
    for match in _CHECK_IN_TICKS.finditer(request):
        quoted = match.group(1).strip()
        if _CHECK_START.match(quoted):
            return str(quoted)
    plain = _CHECK_PLAIN.search(request)
    return str(plain.group(1)) if plain else None


def asks_for_change(request: str) -> bool:
    """True unless the request is plainly a question: no word asking to change something."""
    return _CHANGE_WORDS.search(request) is not None


_FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")


def existing_files(request: str, cwd: Path) -> list[str]:
    """The file names (`stats.py`, `src/app.js`) the request mentions that exist in `cwd`."""
    return [name for name in _FILE_NAME.findall(request) if (cwd / name).is_file()]
