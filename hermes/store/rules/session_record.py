"""Session-record rules shared by every storage backend (SQLite, PostgreSQL).

Titles are whitespace-folded and never empty; a fork lineage numbers its titles
"<base> #<n>"; timestamps handed out by one store strictly increase; a new session starts
with no messages, tokens or end.
"""

from __future__ import annotations

import re
import time
from dataclasses import fields

from hermes.store.records import SessionRecord

# The sessions table has one column per SessionRecord field, selected in field order
# (the same on both backends).
SESSION_FIELDS = tuple(f.name for f in fields(SessionRecord))
SESSION_COLUMNS = ", ".join(SESSION_FIELDS)
SESSION_COLUMNS_S = ", ".join(f"s.{name}" for name in SESSION_FIELDS)

SNIPPET_TOKENS = 16
"""Words of context a search hit's snippet shows."""

# "<base> #<n>": a title in a fork lineage.
NUMBERED_TITLE = re.compile(r"^(?P<base>.*\S) #(?P<n>[0-9]{1,9})$", re.DOTALL)


class Clock:
    """Unix seconds that strictly increase from one call to the next."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self) -> float:
        now = time.time()
        if now <= self._last:
            now = self._last + 1e-6
        self._last = now
        return now


def fresh_session(
    session_id: str,
    now: float,
    *,
    source: str,
    title: str | None,
    model: str | None,
    parent_session_id: str | None,
    system_prompt: str | None,
    cwd: str | None = None,
    parent_call_id: str | None = None,
) -> SessionRecord:
    """A session that has just started: no messages, tokens or end yet."""
    return SessionRecord(
        id=session_id,
        source=source,
        title=title,
        model=model,
        parent_session_id=parent_session_id,
        started_at=now,
        updated_at=now,
        ended_at=None,
        end_reason=None,
        message_count=0,
        tool_call_count=0,
        input_tokens=0,
        output_tokens=0,
        system_prompt=system_prompt,
        cwd=cwd,
        parent_call_id=parent_call_id,
    )


def clean_title(title: str | None) -> str | None:
    if title is None:
        return None
    title = " ".join(title.split())
    return title or None
