"""The store side of one running turn: its turn row and drafts of the streaming text.

    recorder = TurnRecorder(store, session_id)         # None store: everything is a no-op
    await recorder.start(inputs, create)               # the turn's input (and new session)
    await recorder.record(NewMessage(...))             # every later message of the turn
    recorder.streamed(text_parts)                      # after every TextDelta (never waits)
    await recorder.finish("completed", usage, answer=NewMessage(...), mark=fingerprint)

Invariants:

- The turn row is opened with the turn's input messages, and a new session with them
  (`store.start_turn`: one write, all or nothing), so a crash at any later point leaves
  an open turn that start-up repair finds.
- `streamed()` costs a clock read per delta; the text is written (`store.save_draft`) at
  most once per `interval` while it changes, and never later than `interval` after it
  changed (a timer covers a stream that pauses). Recording the segment's assistant
  message (before SegmentEnd, or at the turn's end) replaces the draft in place.
- Draft writes are best effort: a store failure is logged once and the turn goes on
  (the real messages are still written, and fail the turn, as before).
- `end()` cancels the timer first, whatever happens next, so no write follows the end.
- Draft writes run in a task of their own (`streamed()` never waits on the store), one at
  a time and in order; recording a message or ending the turn first waits for the write
  in flight, so a draft never lands after the message that replaces it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from hermes.agent.types import Usage
from hermes.store.api import AsyncSessionStore
from hermes.store.records import MessageRecord, NewMessage, NewSession

log = logging.getLogger(__name__)

DRAFT_INTERVAL = 1.0
"""Seconds between draft saves of streaming text (at most; see the module invariants)."""


class TurnRecorder:
    """See the module docstring."""

    def __init__(
        self,
        store: AsyncSessionStore | None,
        session_id: str,
        *,
        interval: float = DRAFT_INTERVAL,
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
        self._writing: asyncio.Task[None] | None = None
        """The draft write in flight (each one waits for the one before)."""
        self._warned = False
        self._session_exists = True
        """False while the session is one `start` creates (and after that failed: all or nothing)."""

    @property
    def session_id(self) -> str:
        return self._session_id

    async def start(self, inputs: list[NewMessage], create: NewSession | None = None) -> None:
        """Open the turn with its input messages (creating the session first, when new): one write."""
        if self._store is None:
            return
        self._session_exists = create is None
        if not inputs:  # the turn row waits for the first message
            if create is not None:
                session = await self._store.create_session(
                    source=create.source, model=create.model, title=create.title,
                    system_prompt=create.system_prompt, session_id=create.id, fresh_if_taken=not create.given,
                    cwd=create.cwd,
                )  # fmt: skip
                self._session_id = session.id
                self._session_exists = True
            return
        turn, _ = await self._store.start_turn(create or self._session_id, inputs)
        self.turn_id = turn.id
        self._session_id = turn.session_id
        self._session_exists = True

    async def record(self, message: NewMessage) -> MessageRecord | None:
        """Write one message of the turn (an assistant message replaces the draft)."""
        if self._store is None:
            return None
        if self.turn_id is None:  # the turn's first message opens it, in the same write
            turn, record = await self._store.open_turn(self._session_id, message)
            self.turn_id = turn.id
            return record
        if message.role == "assistant":
            self._segment_closed()
        await self.drain()
        return await self._store.append_message(self._session_id, message, turn_id=self.turn_id)

    def streamed(self, parts: list[str]) -> None:
        """The segment's text (`parts`, joined) grew; save it as the draft when a save is due."""
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

    async def drain(self) -> None:
        """Wait for the draft write in flight, if any."""
        writing = self._writing
        if writing is not None:
            await asyncio.shield(writing)

    async def end(self, reason: str) -> None:
        """Save the newest text and end the turn (its leftover draft is kept by the store)."""
        self._cancel_timer()
        if self._store is None or self.turn_id is None:
            return
        if self._parts is not None:
            self._save()
        await self.drain()
        await self._store.end_turn(self.turn_id, reason)

    async def finish(
        self, reason: str, usage: Usage, model: str | None = None, *,
        answer: NewMessage | None = None, mark: str | None = None,
    ) -> None:  # fmt: skip
        """End the turn: its `answer` (which replaces the draft) or else the newest text,
        the turn's end, `usage`, the session's end and the conversation `mark`: one write.

        A turn that never opened (its first message was not stored) opens with its answer,
        else still gets the usage and the session's end, unless its session was to be
        created with it."""
        self._cancel_timer()
        store = self._store
        if store is None:
            return
        if answer is not None:
            self._segment_closed()  # the answer supersedes the streamed text
        elif self._parts is not None:
            self._save()
        await self.drain()
        if not self._session_exists:
            return  # its creation failed with the turn's opening: nothing was written
        if self.turn_id is None and answer is not None:
            await self.record(answer)  # opens the turn with it
            answer = None
        if self.turn_id is not None:
            await store.finish_turn(
                self.turn_id, self._session_id, reason,
                input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                cached_input_tokens=usage.cached_input_tokens, model=model, answer=answer, mark=mark,
            )  # fmt: skip
            return
        async with store.transaction():
            await store.add_usage(
                self._session_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_input_tokens=usage.cached_input_tokens,
                model=model,
            )
            await store.end_session(self._session_id, reason)
            if mark is not None:
                await store.mark_conversation(self._session_id, mark)

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
        self._writing = asyncio.ensure_future(self._write(self._writing, self.turn_id, "".join(parts)))

    async def _write(self, before: asyncio.Task[None] | None, turn_id: int, text: str) -> None:
        if before is not None:
            await before  # never raises: see below
        assert self._store is not None
        try:
            await self._store.save_draft(turn_id, text)
        except Exception:  # best effort, see the module docstring
            if not self._warned:
                self._warned = True
                log.warning("could not save the streaming draft of session %s", self._session_id, exc_info=True)
        finally:
            if self._writing is asyncio.current_task():
                self._writing = None
