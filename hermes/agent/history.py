"""The model-ready history of a stored session, read once and kept per process.

    histories = SessionHistories(store)
    history = await histories.load(session_id)     # summary + messages since the compaction

What a turn sends for a stored session is what `hermes chat -r` sends: the latest
compaction's summary (as `context.summary_message`) plus the visible, finished messages
from its first kept message on, made valid for strict endpoints (`valid_transcript`);
without a compaction, the whole visible transcript (`store.history()`).

Invariants:
- Every `load` first reads the session's `HistoryMark` (one bounded aggregate statement)
  and answers from the cache only when the mark is the one the entry was built for, so a
  write through any path or any instance sharing the database (an append, an undo or
  redo, a compaction, a fork's new session) is seen by the next load.
- When only appends happened since the entry (same compaction, every message it held
  still visible), just the new messages are read; anything else (an undo, a new
  compaction, a transcript whose tail was an unanswered tool call) reads the history again
  from the compaction point. The store is never read further back than that point.
- The messages handed out are shared with the cache: callers build new lists and new
  message dicts (the engine does) and never change a message in place.
- A read of at least `LARGE_READ` messages (by the mark's count: the first load of a long
  session in a process, or one after an undo or a compaction) is asked of the store as
  `large` (SQLite reads it in a worker thread) and made model-ready in a worker thread
  too, so the event loop serves other requests meanwhile; smaller reads stay inline (a
  thread hop would cost more than they do).
- At most `max_sessions` sessions and `max_chars` characters of messages (`message_chars`)
  are kept, least recently loaded dropped first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass

from hermes.agent.context import CompactedHistory, message_chars, summary_message
from hermes.messages import ChatMessage
from hermes.store.records import CompactionRecord, HistoryMark, MessageRecord
from hermes.store.transcript import valid_transcript

__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_MAX_SESSIONS", "LARGE_READ", "SessionHistories", "history_is_closed"]

DEFAULT_MAX_SESSIONS = 256
DEFAULT_MAX_CHARS = 64 * 1024 * 1024
LARGE_READ = 256
"""Messages from which a read (and making it model-ready) leaves the event loop."""


def history_is_closed(messages: list[ChatMessage]) -> bool:
    """True when `messages` end where no tool call waits for its result (an assistant
    answer without calls, or a user message): messages appended later can then be made
    valid on their own (`valid_transcript(a + b) == valid_transcript(a) + valid_transcript(b)`)."""
    if not messages:
        return True
    last = messages[-1]
    role = last.get("role")
    return role == "user" or (role == "assistant" and not last.get("tool_calls"))


@dataclass(frozen=True, slots=True)
class _Entry:
    mark: HistoryMark
    summary: str | None
    messages: list[ChatMessage]
    """`valid_transcript` of the stored messages from the compaction point on."""
    closed: bool
    """The stored messages end with no tool call open (`history_is_closed`)."""
    head: tuple[ChatMessage, ...] = ()
    """The summary message (one dict, handed out every time), or nothing."""
    chars: int = 0
    """`message_chars` of the messages and the summary: what the entry weighs."""


class SessionHistories:
    """See the module docstring."""

    def __init__(
        self, store: CompactedHistory, *, max_sessions: int = DEFAULT_MAX_SESSIONS, max_chars: int = DEFAULT_MAX_CHARS
    ) -> None:
        self._store = store
        self._max = max(1, max_sessions)
        self._max_chars = max_chars
        self._chars = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.reads = {"hit": 0, "append": 0, "full": 0}
        """How each load was answered (for tests and the bench)."""

    async def load(self, session_id: str) -> list[ChatMessage]:
        """The session's model-ready history (a new list; see the module docstring)."""
        entry = await self._entry(session_id)
        return [*entry.head, *entry.messages]

    async def _entry(self, session_id: str) -> _Entry:
        store = self._store
        mark = await store.history_mark(session_id)
        entry = self._entries.get(session_id)
        if entry is not None and entry.mark == mark:
            self.reads["hit"] += 1
            self._entries.move_to_end(session_id)
            return entry
        grown = self._appended(entry, mark) if entry is not None else False
        if entry is not None and grown:
            large = mark.count - entry.mark.count >= LARGE_READ
            rows = [row for row in await store.history_since(session_id, entry.mark.last_message_id + 1, large=large)
                    if row.id <= mark.last_message_id]  # fmt: skip
            old = entry.mark
            if old.count + len(rows) == mark.count and old.id_sum + sum(r.id for r in rows) == mark.id_sum:
                entry = await asyncio.to_thread(_extend, entry, mark, rows) if large else _extend(entry, mark, rows)
                self.reads["append"] += 1
                return self._keep(session_id, entry)
        entry = await self._read(session_id, large=mark.count >= LARGE_READ)
        self.reads["full"] += 1
        return self._keep(session_id, entry)

    @staticmethod
    def _appended(entry: _Entry, mark: HistoryMark) -> bool:
        """Whether `mark` may be `entry` plus appended messages only (checked on the rows)."""
        old = entry.mark
        return (
            entry.closed
            and mark.compaction_id == old.compaction_id
            and mark.last_message_id > old.last_message_id
            and mark.count > old.count
        )

    async def _read(self, session_id: str, *, large: bool) -> _Entry:
        """The history from the latest compaction on; the mark is made from what was read
        (the compaction first, then its messages), so a write in between shows as a
        different mark at the next load. `large`: read and build it off the event loop."""
        compaction = await self._store.latest_compaction(session_id)
        first = compaction.first_kept_message_id if compaction is not None else 0
        rows = await self._store.history_since(session_id, first, large=large)
        if large:
            return await asyncio.to_thread(_build, compaction, first, rows)
        return _build(compaction, first, rows)

    def _keep(self, session_id: str, entry: _Entry) -> _Entry:
        old = self._entries.pop(session_id, None)
        if old is not None:
            self._chars -= old.chars
        if entry.chars > self._max_chars:
            return entry  # too big to keep: read again next time
        self._entries[session_id] = entry
        self._chars += entry.chars
        while len(self._entries) > self._max or self._chars > self._max_chars:
            _, dropped = self._entries.popitem(last=False)
            self._chars -= dropped.chars
        return entry


def _build(compaction: CompactionRecord | None, first: int, rows: list[MessageRecord]) -> _Entry:
    """The entry for `rows`, read from `first` (the `compaction`'s first kept message, or
    0): pure, so it may run in a worker thread."""
    stored = [row.to_openai() for row in rows]
    mark = HistoryMark(
        compaction_id=None if compaction is None else compaction.id,
        first_message_id=first,
        count=len(rows),
        last_message_id=rows[-1].id if rows else 0,
        id_sum=sum(row.id for row in rows),
    )
    summary = None if compaction is None else compaction.summary
    head = () if summary is None else (summary_message(summary),)
    messages = valid_transcript(stored)
    chars = sum(map(message_chars, [*head, *messages]))
    return _Entry(mark, summary, messages, history_is_closed(stored), head, chars)


def _extend(entry: _Entry, mark: HistoryMark, rows: list[MessageRecord]) -> _Entry:
    """`entry` with `rows` (the messages appended since, making `mark`) added: pure, so it
    may run in a worker thread."""
    added = [row.to_openai() for row in rows]
    more = valid_transcript(added)
    return _Entry(mark, entry.summary, entry.messages + more, history_is_closed(added), entry.head,
                  entry.chars + sum(map(message_chars, more)))  # fmt: skip
