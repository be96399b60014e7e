"""Full-text search text and queries for PostgreSQL, matching SQLite's FTS5 behaviour.

SQLite indexes messages with FTS5 (`porter unicode61 remove_diacritics 2`) and turns
user text into plain AND-ed words, the last one a prefix (`hermes.store.sqlite.dialect.fts_query`).
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

Search itself (`search_messages`) ranks by cover density (`ts_rank_cd`) divided by
1 + log(document length), like FTS5's bm25 favouring repeated terms and shorter
messages, among the newest RANK_WINDOW matches (drafts left out), with `ts_headline`
snippets (match wrapped in >>> <<<, "…" where text was cut).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from hermes.store.records import SearchHit, SessionRecord
from hermes.store.rules.session_record import SESSION_COLUMNS_S, SNIPPET_TOKENS
from hermes.store.sql import Executor

__all__ = ["RANK_WINDOW", "TOOL_PREFIX_CHARS", "normalize", "search_messages", "search_text", "ts_query"]

RANK_WINDOW = 20_000
"""search_messages() ranks at most this many of the newest matching messages (as on SQLite)."""
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


_HEADLINE_OPTIONS = (
    f'StartSel=">>>", StopSel="<<<", MaxWords={SNIPPET_TOKENS}, MinWords={SNIPPET_TOKENS // 2}, '
    'ShortWord=0, MaxFragments=1, FragmentDelimiter=" … "'
)


def _with_ellipses(headline: str, text: str) -> str:
    """Mark with "…" the ends where the headline cut the text."""
    plain = headline.replace(">>>", "").replace("<<<", "")
    where = text.find(plain)
    if where < 0:
        return headline
    head = "…" if where > 0 else ""
    tail = "…" if where + len(plain) < len(text) else ""
    return head + headline + tail


def _snippet(row: Any) -> str:
    """The headline of the text as written when it marks the match; else (the match was
    inside a word PostgreSQL's parser keeps whole, like "config.py") the headline of
    the text's words, where punctuation is spaces."""
    text, headline, words, words_headline = row[2] or "", row[3] or "", row[4] or "", row[5] or ""
    if ">>>" in headline:
        return _with_ellipses(headline, text)
    return _with_ellipses(words_headline, words)


async def search_messages(db: Executor, query: str, *, limit: int, source: str | None) -> list[SearchHit]:
    """Best match first among the newest RANK_WINDOW matching messages (see the module docstring)."""
    tsquery = ts_query(query)
    if not tsquery or limit <= 0:
        return []
    join, where, params = "", "", []
    if source is not None:
        join = "JOIN hermes.sessions AS ws ON ws.id = m.session_id "
        where = "AND ws.source = %s "
        params = [source]
    # The window (newest matches, an index scan) is ranked; only the returned rows get a
    # headline, which is the expensive part.
    sql = (
        "WITH q AS (SELECT to_tsquery('hermes.search', %s) AS q), "
        "win AS (SELECT m.id, m.session_id, m.role, m.search_text, m.search_vector "
        f"FROM hermes.messages AS m {join}"
        f"WHERE m.search_vector @@ (SELECT q FROM q) AND NOT m.draft AND m.undone IS NULL {where}"
        "ORDER BY m.id DESC LIMIT %s), "
        "best AS (SELECT win.*, ts_rank_cd(win.search_vector, (SELECT q FROM q), 1) AS rank "
        "FROM win ORDER BY rank DESC, win.id DESC LIMIT %s) "
        "SELECT best.id, best.role, best.search_text, "
        "ts_headline('hermes.search', best.search_text, (SELECT q FROM q), %s), "
        "hermes.search_words(best.search_text), "
        "ts_headline('hermes.search', hermes.search_words(best.search_text), (SELECT q FROM q), %s), "
        f"{SESSION_COLUMNS_S} FROM best JOIN hermes.sessions AS s ON s.id = best.session_id "
        "ORDER BY best.rank DESC, best.id DESC"
    )
    rows = await db.fetch_all(sql, (tsquery, *params, RANK_WINDOW, limit, _HEADLINE_OPTIONS, _HEADLINE_OPTIONS))
    return [
        SearchHit(session=SessionRecord(*row[6:]), message_id=int(row[0]), role=row[1], snippet=_snippet(row))
        for row in rows
    ]
