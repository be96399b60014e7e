"""One turn at a time per session across every instance sharing the storage.

A claim is a receipt (`ReceiptStore`, scope ``session.turn``, key = the session id) with
an expiry: `claim_receipt` is one atomic insert-or-get, so of two instances claiming one
session at once exactly one wins, and no database lock is held past that statement (never
across a model call).

Invariants:
- The holder refreshes its claim every `hold / 3` seconds while its turn runs, and
  releases it when the turn's block ends; a dead instance's claim lapses after `hold`.
- A claimant that finds the session claimed polls (doubling from `poll` up to 0.5 s)
  until it wins or `wait` seconds have passed (then `acquire` answers None).
- A store failure while claiming is logged and taken as a claim without a receipt (the
  in-process lock of `hermes.server.openai.conversation` still serialises this
  instance's turns), never as a failed request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from hermes.errors import StoreError
from hermes.store.api import ReceiptStore

__all__ = ["SCOPE", "SessionClaim", "acquire"]

log = logging.getLogger(__name__)

SCOPE = "session.turn"
"""The receipts scope of session claims."""


@dataclass(slots=True)
class SessionClaim:
    """A held claim on one session's next turn; `release()` ends it (idempotent)."""

    receipts: ReceiptStore | None
    """None when the claim was taken without a receipt (the store failed)."""
    session_id: str
    token: str
    _keeper: asyncio.Task[None] | None = field(default=None, repr=False)

    async def release(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        receipts, self.receipts = self.receipts, None
        if receipts is None:
            return
        try:
            await receipts.release_receipt(SCOPE, self.session_id, self.token)
        except StoreError as exc:  # it lapses after `hold` anyway
            log.warning("releasing the turn claim on session %s failed: %s", self.session_id, exc)


async def acquire(
    receipts: ReceiptStore,
    session_id: str,
    *,
    wait: float,
    hold: float = 30.0,
    poll: float = 0.05,
    clock: Callable[[], float] = time.time,
) -> SessionClaim | None:
    """The claim on `session_id`, once no other holder has it; None after `wait` seconds."""
    token = f"turn_{uuid.uuid4().hex}"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    delay = poll
    while True:
        now = clock()
        try:
            found = await receipts.claim_receipt(SCOPE, session_id, "", token, now=now, expires_at=now + hold)
        except StoreError as exc:
            log.warning("claiming session %s failed, going on without a claim: %s", session_id, exc)
            return SessionClaim(None, session_id, token)
        if found is None:
            claim = SessionClaim(receipts, session_id, token)
            claim._keeper = loop.create_task(_keep(receipts, session_id, token, hold, clock))
            return claim
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.5)


async def _keep(receipts: ReceiptStore, session_id: str, token: str, hold: float, clock: Callable[[], float]) -> None:
    while True:
        await asyncio.sleep(hold / 3)
        try:
            await receipts.hold_receipt(SCOPE, session_id, token, expires_at=clock() + hold)
        except StoreError as exc:
            log.warning("refreshing the turn claim on session %s failed: %s", session_id, exc)
