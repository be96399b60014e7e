"""Which session an OpenAI-shaped request continues when it names no stored session.

A request that names no stored session outright (`hermes.server.http.request_session`:
chat `messages` without the session header, Responses `input` without
`previous_response_id`) resends its conversation. It is placed, in this order:

1. keyed: the request names the client's chat (`RequestedSession.chat_key`: Open WebUI's
   chat id header or `metadata.chat_id`, read by `requested_session`). The chat's
   session is the one its key was last pointed at (`AsyncSessionStore.find_chat_key`),
   at first `owui-<16 hex>` of that id (`hermes.ids.keyed_session_id`). The resent
   history is matched against that session's own marks (as in 2 and 3, `_keyed`): the
   session's newest turn (or a session with nothing yet, or a continuation after the
   client's tool calls): keyed, that session; an earlier point (the client edited a
   message or regenerated an answer): a fork at that point, which takes the parent's
   marks along and the key with it ("forked"); no point at all (the first message was
   edited): a new session the key is pointed at once the turn has written it ("forked").
   The abandoned branch stays in the old session only.
2. continued: the resent history (everything before the new input) has the fingerprint
   that a session's newest message was marked with: that session.
3. forked: the history matches an earlier point of a session (an edit or a regeneration),
   or only a prefix of it matches: a fork of that session at that point
   (`AsyncSessionStore.fork_session`), which also holds, imported (`IMPORTED`), the
   history after the matched point (`unseen_after`), so the fork's transcript is the
   whole branch; the model still gets each message once (the request's history).
4. derived (chat only): the derived id (`api-…` of system prompt + first user message),
   unless another request here is placing it (then new at once). The turn creates the
   session "with that id, or a fresh one if a session has it" (`TurnRequest.fresh_if_taken`)
   in its opening write, so the first conversation with a given opening gets the derived
   id; a later one lands in a fresh session, and `Placement.landed` makes it new.
5. new: a fresh id.

The session is marked with the fingerprint of the conversation as the client will resend
it (history + input + the answer's text, `Placement.resent`): by the turn's end write
(`TurnRequest.conversation_mark` = `Placement.mark_of`), or after a turn that ended
otherwise by `Placement.settle_after`.

Fingerprints (`fingerprints`): a sha256 chain over the user/assistant texts, normalised
so a client's rendering does not matter: Open WebUI's `<details>` blocks are dropped,
whitespace runs become one space, consecutive messages of one role are one message
(a client that splits an answer around its tool calls resends the same conversation),
empty messages and every other role are left out.

Invariants: one placement at a time per session in this process (a per-session lock,
held until the request's block ends); a keyed chat is locked and claimed across instances
(`hermes.runs.session_claims`, when `place_conversation` gets the receipts store) under
its `owui-…` id, wherever its key points, until the block ends, so two instances given
one chat id at once place and run its turns one after the other (the later one continues
what the first answered, or forks where its history differs; past `BUSY_WAIT`, it gets a
new session, as in-process); a chat key moves only to a fork of its session or to a
session its turn has just written, never to a session another chat holds;
a derived id is never claimed: the session-creating write decides, atomically, so of two
instances given one opening at once exactly one creates the derived session and the other
a fresh one (two conversations never share a session, and no transcript interleaves); a
derived placement that landed elsewhere lets go of the derived id's lock at once;
a request whose history names a session busy here
waits for it at most `BUSY_WAIT` seconds, then looks again (a continuation of what that
turn answered continues it; the same history again is now an earlier point: it forks), so
one transcript never interleaves two turns. Across instances a continuation first claims
the mark (`AsyncSessionStore.claim_conversation`, once per answer), so of two instances
continuing one answer at once the second forks. A store failure while placing or marking degrades to a fresh
session (logged), never to a failed request.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

from hermes.errors import HermesError
from hermes.ids import derived_session_id, keyed_session_id, new_session_id
from hermes.runs.session_claims import SessionClaim
from hermes.runs.session_claims import acquire as acquire_claim
from hermes.runs.wire import answer_text
from hermes.store.api import AsyncSessionStore, ReceiptStore, Storage
from hermes.store.records import IMPORTED, ConversationMark, NewMessage
from hermes.store.rules.conversation_marks import MAX_FINGERPRINTS

if TYPE_CHECKING:
    from hermes.agent.types import TurnResult

__all__ = [
    "BUSY_WAIT",
    "CONVERSATIONS",
    "ConversationLocks",
    "Placement",
    "fingerprints",
    "place_conversation",
    "unseen_after",
]

log = logging.getLogger(__name__)

BUSY_WAIT = 30.0
"""Seconds a request waits for another turn of the session it would continue."""

How = Literal["keyed", "continued", "forked", "derived", "new"]
"""How a request was placed; the response says it in `request_session.PLACEMENT_HEADER`."""


@dataclass(slots=True)
class _Hold:
    """A placement's hold on its session's lock; `release()` is idempotent."""

    lock: asyncio.Lock | None

    def release(self) -> None:
        lock, self.lock = self.lock, None
        if lock is not None:
            lock.release()


_DETAILS = re.compile(r"<details\b[^>]*>.*?</details>", re.DOTALL | re.IGNORECASE)


def _text(content: Any) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    else:
        return ""
    return " ".join(_DETAILS.sub(" ", text).split())


def normalised(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant messages, as the module docstring says."""
    out: list[tuple[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        text = _text(message.get("content"))
        if not text:
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, f"{out[-1][1]} {text}")
        else:
            out.append((role, text))
    return out


def fingerprints(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fingerprint of every non-empty prefix of the conversation, longest first."""
    chain: list[str] = []
    digest = ""
    for role, text in normalised(messages):
        digest = hashlib.sha256(f"{digest}\x1f{role}\x1f{text}".encode("utf-8", "surrogatepass")).hexdigest()
        chain.append(digest)
    return chain[::-1][:MAX_FINGERPRINTS]


class ConversationLocks:
    """One `asyncio.Lock` per session id, alive while anyone holds or awaits it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock


CONVERSATIONS = web.AppKey("hermes.conversations", ConversationLocks)
"""The app's per-session placement locks (set by `create_app`)."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a request's turn goes, and how it got there."""

    session_id: str
    how: How
    store: AsyncSessionStore
    history: list[dict[str, Any]]
    forked_from: str | None = None
    start: int = 0
    """How many messages the session held when placed (this turn's come after)."""
    _hold: _Hold = field(default_factory=lambda: _Hold(None), repr=False)
    _claim: SessionClaim | None = field(default=None, repr=False)
    _rekey: str | None = field(default=None, repr=False)
    """A chat key to point at this (new) session once its turn has written it."""

    @property
    def fresh_if_taken(self) -> bool:
        """The turn creates the session, with a fresh id if a session has this one (derived)."""
        return self.how == "derived"

    def landed(self, session_id: str) -> Placement:
        """The placement of the session the turn really used: this one, or, for a derived
        id a session already had, the fresh one, placed new (the derived id's lock is
        released now, so a request continuing that other session need not wait)."""
        if session_id == self.session_id:
            return self
        self._hold.release()
        return replace(self, session_id=session_id, how="new", _hold=_Hold(None))

    def resent(self, input: Any, answer: str | None) -> str | None:
        """The fingerprint of the conversation the client will resend next time (an empty
        input or answer, as after a turn that ended in the client's tool calls, is simply
        left out); None when it has no text at all."""
        chain = fingerprints(
            [*self.history, {"role": "user", "content": input}, {"role": "assistant", "content": answer}]
        )
        return chain[0] if chain else None

    def mark_of(self, input: Any, result: TurnResult) -> str | None:
        """`resent` for a turn's result: what `TurnRequest.conversation_mark` gives the
        engine, which writes it with the turn's end."""
        return self.resent(input, answer_text(result))

    async def settle_after(self, input: Any, result: TurnResult) -> None:
        """Mark the session after a turn whose end did not (a stop, a failed end write)."""
        if result.conversation_mark is None:
            await self.settle(input, answer_text(result))

    async def settle(self, input: Any, answer: str | None) -> None:
        """Mark the session with `resent(input, answer)` now (for a turn whose end did not:
        `TurnRequest.conversation_mark` marks in the turn's end write)."""
        mark = self.resent(input, answer)
        if mark is None:
            return
        try:
            await self.store.mark_conversation(self.session_id, mark)
        except HermesError as exc:
            log.warning("conversation mark failed for session %s: %s", self.session_id, exc)

    async def settle_from_store(self, input: Any) -> None:
        """`settle` with the answer read back from the session: the assistant messages this
        turn added (for a front end that does not keep the result; history a new session
        imported is not the answer)."""
        try:
            added = await self.store.get_messages(self.session_id, offset=self.start)
        except HermesError as exc:
            log.warning("conversation mark failed for session %s: %s", self.session_id, exc)
            return
        answer = " ".join(_text(m.content) for m in added if m.role == "assistant" and m.finish_reason != IMPORTED)
        await self.settle(input, answer)


async def _acquire(lock: asyncio.Lock, wait: float) -> bool:
    try:
        await asyncio.wait_for(lock.acquire(), wait)
    except TimeoutError:
        return False
    return True


def cross_instance_receipts(storage: Storage) -> ReceiptStore | None:
    """The receipts that claim sessions across instances, or None where no other instance
    can share the storage (`caps.multi_instance` false: the in-process lock is enough)."""
    return storage.receipts if storage.caps.multi_instance else None


@asynccontextmanager
async def place_conversation(
    store: AsyncSessionStore,
    locks: ConversationLocks,
    *,
    history: Sequence[Mapping[str, Any]],
    key: str | None,
    opening: tuple[str | None, str] | None,
    wait: float = BUSY_WAIT,
    receipts: ReceiptStore | None = None,
    continuing: bool = False,
) -> AsyncIterator[Placement]:
    """The placement of one request (see the module docstring); its session stays locked
    in this process (and a keyed one claimed across instances, given `receipts`) until the
    block ends. `continuing`: the request continues its session's last turn (the results
    of the client's tool calls), which a keyed chat never forks."""
    placement = await _place(store, locks, list(map(dict, history)), key, opening, wait, receipts, continuing)
    try:
        yield placement
    finally:
        try:
            if placement._rekey is not None:
                await _point_key(store, placement._rekey, placement.session_id)
            if placement._claim is not None:
                await placement._claim.release()
        finally:
            placement._hold.release()


async def _point_key(store: AsyncSessionStore, key: str, session_id: str) -> None:
    try:
        await store.point_chat_key(key, session_id)
    except HermesError as exc:  # no turn wrote the session: the key keeps its old one
        log.warning("chat key not moved to session %s: %s", session_id, exc)


async def _place(
    store: AsyncSessionStore,
    locks: ConversationLocks,
    history: list[dict[str, Any]],
    key: str | None,
    opening: tuple[str | None, str] | None,
    wait: float,
    receipts: ReceiptStore | None,
    continuing: bool,
) -> Placement:
    async def placed(session_id: str, how: How, lock: asyncio.Lock | None, parent: str | None = None) -> Placement:
        start = 0
        if how in ("keyed", "continued"):
            try:
                record = await store.find_session(session_id)
            except BaseException:
                if lock is not None:
                    lock.release()
                raise
            start = record.message_count if record is not None else 0
        return Placement(session_id, how, store, history, forked_from=parent, start=start, _hold=_Hold(lock))

    if key is not None:
        session_id = keyed_session_id(key)  # the chat's lock and claim, wherever its key points
        lock = locks.lock(session_id)
        if await _acquire(lock, wait):
            try:  # then across instances: its turns one after the other
                claim = None if receipts is None else await acquire_claim(receipts, session_id, wait=wait)
            except BaseException:
                lock.release()
                raise
            if receipts is None or claim is not None:
                try:
                    keyed = await _keyed(store, session_id, history, continuing)
                    return replace(keyed, _hold=_Hold(lock), _claim=claim)
                except BaseException:
                    lock.release()
                    if claim is not None:
                        await claim.release()
                    raise
            lock.release()
        return await placed(new_session_id(), "new", None)  # the chat is busy past the bound
    try:
        chain = fingerprints(history)
        mark = await store.find_conversation(chain) if chain else None
        if mark is not None and locks.lock(mark.session_id).locked():
            # A turn of that session is running here: once it has marked what it answered,
            # this history may be its continuation. Wait for it, then look again.
            busy = locks.lock(mark.session_id)
            if await _acquire(busy, wait):
                busy.release()
            mark = await store.find_conversation(chain)
        if mark is not None:
            lock = locks.lock(mark.session_id)
            if mark.open and mark.fingerprint == chain[0] and not lock.locked():
                await lock.acquire()  # free: taken at once
                try:  # one continuation per answer, whichever instance asks first
                    claimed = await store.claim_conversation(mark.session_id, mark.fingerprint)
                except BaseException:
                    lock.release()
                    raise
                if claimed:
                    return await placed(mark.session_id, "continued", lock)
                lock.release()
            child_id, start = await _fork(store, mark, history, chain)
            lock = locks.lock(child_id)
            await lock.acquire()  # a new id: nobody else holds it
            forked = await placed(child_id, "forked", lock, mark.session_id)
            return replace(forked, start=start)
        if opening is not None:
            derived = derived_session_id(*opening)
            lock = locks.lock(derived)
            if not lock.locked():
                await lock.acquire()  # free: taken at once, before any other request looks
                return await placed(derived, "derived", lock)  # (never raises for "derived")
    except HermesError as exc:
        log.warning("conversation lookup failed, starting a new session: %s", exc)
    session_id = new_session_id()
    return await placed(session_id, "new", None)


async def _keyed(
    store: AsyncSessionStore, key: str, history: list[dict[str, Any]], continuing: bool
) -> Placement:
    """A keyed chat's placement (module docstring, 1), without its hold (the caller holds
    the chat's lock). A store failure keeps the chat in the session it names."""
    session_id = key
    try:
        session_id = await store.find_chat_key(key) or key
        record = await store.find_session(session_id)
        start = 0 if record is None else record.message_count
        if start == 0 or continuing:
            return Placement(session_id, "keyed", store, history, start=start)
        chain = fingerprints(history)
        mark = await store.find_conversation(chain, session_id=session_id) if chain else None
        if mark is not None and mark.fingerprint == chain[0] and mark.latest:
            return Placement(session_id, "keyed", store, history, start=start)
        if mark is None:  # the first message differs: a new session, the key follows it
            return Placement(new_session_id(), "forked", store, history, forked_from=session_id, _rekey=key)
        child_id, child_start = await _fork(store, mark, history, chain, key=key)
        return Placement(child_id, "forked", store, history, forked_from=session_id, start=child_start)
    except HermesError as exc:
        log.warning("keyed chat lookup failed, staying in session %s: %s", session_id, exc)
        return Placement(session_id, "keyed", store, history)


async def _fork(
    store: AsyncSessionStore,
    mark: ConversationMark,
    history: list[dict[str, Any]],
    chain: list[str],
    *,
    key: str | None = None,
) -> tuple[str, int]:
    """(id, message count) of a fork of `mark`'s session at its message that also holds,
    imported, the history after the matched point (what hermes never saw); one transaction.
    With a chat `key`, the fork takes the parent's marks along and the key with it."""
    unseen = unseen_after(history, len(normalised(history)) - chain.index(mark.fingerprint))
    async with store.transaction():
        child = await store.fork_session(mark.session_id, at_message_id=mark.message_id, with_marks=key is not None)
        for message in unseen:
            await store.append_message(child.id, NewMessage.from_openai(message, finish_reason=IMPORTED))
        if key is not None:
            await store.point_chat_key(key, child.id)
    return child.id, child.message_count + len(unseen)


def unseen_after(history: Sequence[Mapping[str, Any]], matched: int) -> list[dict[str, Any]]:
    """The messages of `history` from the one that opens its normalised message number
    `matched + 1` on (empty when the first `matched` are all of it): what follows a
    conversation matched that far. The messages without text before it (a tool call, a
    tool result, another role) count as matched: they end the matched turn, which the
    session holds (a client tool's call, for one)."""
    count = 0
    role: str | None = None
    for index, message in enumerate(history):
        if message.get("role") not in ("user", "assistant") or not _text(message.get("content")):
            continue
        if message["role"] != role:
            role = message["role"]
            count += 1
            if count > matched:
                return [dict(m) for m in history[index:]]
    return []
