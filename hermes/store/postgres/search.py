"""Full-text search text and queries for PostgreSQL, matching SQLite's FTS5 behaviour.

SQLite indexes messages with FTS5 (`porter unicode61 remove_diacritics 2`) and turns
user text into plain AND-ed words, the last one a prefix (`hermes.store.sqlite.fts_query`).
Here the same contract is met with the `hermes.search` configuration (English Snowball
stemming, no stop words) over text normalised in Python:

- `search_text()` is what a message contributes to the index: plain content as is, the
  `text` of content parts joined by newlines, tool results only up to their first 8,192
  characters; diacritics removed (NFD, combining marks dropped, NFC) and NUL removed.
- `ts_query()` turns user text into a `to_tsquery` string that cannot fail: every word
  (whitespace-separated, with a letter or digit) becomes its letter/digit runs, quoted
  and joined as a phrase (`<->`); words are AND-ed (`&`); the last run of the last word
  is a prefix (`:*`) unless the text ends with whitespace. Operators in the user's text
  are never passed through: only letter/digit runs reach the query.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["TOOL_PREFIX_CHARS", "normalize", "search_text", "ts_query"]

TOOL_PREFIX_CHARS = 8192
MAX_TOKEN_CHARS = 2046
"""PostgreSQL ignores longer words (2 KiB lexeme limit); so does the query."""
_RUN = re.compile(r"[^\W_]+")


def normalize(text: str) -> str:
    """`text` without diacritics or NUL characters."""
    decomposed = unicodedata.normalize("NFD", text.replace("\x00", " "))
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped)


def search_text(role: str, content: object) -> str | None:
    """The normalised searchable text of a message, or None when it has none."""
    if isinstance(content, list):
        texts = [
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        text = "\n".join(texts) or None
    elif isinstance(content, str):
        text = content[:TOOL_PREFIX_CHARS] if role == "tool" else content
    else:
        text = None
    return None if text is None else normalize(text)


def ts_query(text: str) -> str:
    """A safe `to_tsquery` string for free user text ("" when nothing is searchable)."""
    words = [word for word in text.split() if any(ch.isalnum() for ch in word)]
    clauses: list[str] = []
    for index, word in enumerate(words):
        runs = [run for run in _RUN.findall(normalize(word)) if len(run) <= MAX_TOKEN_CHARS]
        if not runs:
            continue
        quoted = [f"'{run}'" for run in runs]
        if index == len(words) - 1 and not text[-1].isspace():
            quoted[-1] += ":*"
        clauses.append("(" + " <-> ".join(quoted) + ")")
    return " & ".join(clauses)
