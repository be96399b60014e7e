"""The store side of one running turn: its turn row and checkpoints of the streaming text.

    checkpoints = TurnCheckpoints(store, session_id)     # None store: everything is a no-op
    checkpoints.record(NewMessage(...))                   # every message of the turn
    checkpoints.streamed(text_parts)                      # after every TextDelta
    checkpoints.end("completed")

Invariants:

- The turn row is opened (`store.begin_turn`) by the turn's first message, so a crash at
  any later point leaves an open turn that start-up repair finds.
- `streamed()` costs a clock read per delta; the text is written (`store.save_draft`) at
  most once per `interval` while it changes, and never later than `interval` after it
  changed (a timer covers a stream that pauses). Recording the segment's assistant
  message (before SegmentEnd, or at the turn's end) replaces the draft in place.
- Checkpoint writes are best effort: a store failure is logged once and the turn goes on
  (the real messages are still written, and fail the turn, as before).
- `end()` cancels the timer first, whatever happens next, so no write follows the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from hermes.store.base import MessageRecord, NewMessage, SessionStore

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL = 1.0
"""Seconds between checkpoints of streaming text (at most; see the module invariants)."""


class TurnCheckpoints:
    """See the module docstring."""

    def __init__(
        self,
        store: SessionStore | None,
        session_id: str,
        *,
        interval: float = CHECKPOINT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._interval = interval
        self._clock = clock
        self.turn_id: int | None = None
        self._parts: list[str] | None = None
        """The live text of the streaming segment (the engine's list), while it is unsaved."""
        self._saved_at: float | None = None
        """When the segment's text was last saved (or began streaming); None between segments."""
        self._timer: asyncio.TimerHandle | None = None
        self._warned = False

    def record(self, message: NewMessage) -> MessageRecord | None:
        """Write one message of the turn (an assistant message replaces the draft)."""
        if self._store is None:
            return None
        if self.turn_id is None:
            self.turn_id = self._store.begin_turn(self._session_id).id
        if message.role == "assistant":
            self._segment_closed()
        return self._store.append_message(self._session_id, message, turn_id=self.turn_id)

    def streamed(self, parts: list[str]) -> None:
        """The segment's text (`parts`, joined) grew; checkpoint it when one is due."""
        if self._store is None or self.turn_id is None:
            return
        self._parts = parts
        now = self._clock()
        if self._saved_at is None:
            self._saved_at = now  # the segment starts: its first save is one interval away
        elif now - self._saved_at >= self._interval:
            self._save()
            return
        if self._timer is None:
            delay = max(0.0, self._saved_at + self._interval - now)
            self._timer = asyncio.get_running_loop().call_later(delay, self._save)

    def end(self, reason: str) -> None:
        """Save the newest text and end the turn (its leftover draft is kept by the store)."""
        self._cancel_timer()
        if self._store is None or self.turn_id is None:
            return
        if self._parts is not None:
            self._save()
        self._store.end_turn(self.turn_id, reason)

    # ---- internals ------------------------------------------------------------------

    def _segment_closed(self) -> None:
        self._cancel_timer()
        self._parts = None
        self._saved_at = None

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _save(self) -> None:
        self._cancel_timer()
        parts, self._parts = self._parts, None
        if parts is None or self._store is None or self.turn_id is None:
            return
        self._saved_at = self._clock()
        try:
            self._store.save_draft(self.turn_id, "".join(parts))
        except Exception:  # best effort, see the module docstring
            if not self._warned:
                self._warned = True
                log.warning("could not checkpoint the streaming text of session %s", self._session_id, exc_info=True)
