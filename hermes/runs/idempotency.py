"""`Idempotency-Key` answers, kept as storage receipts: one mechanism for chat
completions, Responses and runs (its HTTP side is `hermes.server.http.idempotent`).

A request is identified by its scope (`receipt_scope`: one per endpoint) and key *and* a
fingerprint (`fingerprint`) of the fields that define it. The answer (a JSON object) is
computed once per (scope, key, fingerprint) across every instance sharing the storage
(`Storage.receipts`, whose `claim_receipt` is atomic across processes):

- same key, same fingerprint, answered within `ttl` (the policy's, or the caller's) →
  the stored answer is returned;
- same key, same fingerprint, still computing → the caller waits for that answer: on
  this instance it awaits the one shared task, elsewhere it polls the receipt (doubling
  from `poll` to 1 s) and gives up with `AnswerPending` after `wait` seconds;
- same key, different fingerprint → computed afresh; the new answer replaces the stored
  one unless another claim is computing; or, for a caller that asks `refuse_reuse`
  (runs: a run must never start twice for one key), `KeyReused`.

Invariants:
- The computation runs in its own task behind `asyncio.shield`, so a waiter that is
  cancelled (its client went away) never cancels the work the others wait for; the
  answer is still stored for the retry.
- A claim lapses `hold` seconds after its last refresh: the computing task refreshes it
  every `hold / 3` seconds, so only a dead instance's claim lapses, and a retry then
  computes afresh instead of waiting out `wait`.
- Failures are not stored: a computation that raises (or answers `Transient`) releases
  its claim, so a retry runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes.errors import StoreError
from hermes.store.api import ReceiptStore

__all__ = [
    "ANSWER_RETENTION_SECONDS",
    "AnswerPending",
    "IdempotencyPolicy",
    "KeyReused",
    "IdempotentAnswers",
    "Transient",
    "fingerprint",
    "receipt_scope",
]

logger = logging.getLogger(__name__)

ANSWER_RETENTION_SECONDS = 300.0
"""How long an answer is replayed for its key (`/v1/models` reports it)."""

Answer = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Transient:
    """An answer to give but not to store: its computation was cut short (the instance is
    shutting down), so its claim is released and a retry computes afresh."""

    answer: Answer


Compute = Callable[[], Awaitable[Answer | Transient]]


def receipt_scope(endpoint: str) -> str:
    """The receipts scope of an endpoint's keys: a key is one request per endpoint."""
    return f"idempotency.{endpoint}"


def fingerprint(body: Mapping[str, Any], fields: Iterable[str], **extra: Any) -> str:
    """sha256 over the named body fields (absent = null) plus `extra` (e.g. headers)."""
    material = {"body": {name: body.get(name) for name in fields}, "extra": extra}
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


class KeyReused(Exception):
    """The key was already used with another fingerprint, and the caller refuses reuse."""


class AnswerPending(Exception):
    """Another instance still computes the answer for this key after the wait ran out."""

    def __init__(self, scope: str, waited: float) -> None:
        super().__init__(f"the answer for this {scope} Idempotency-Key is still being computed ({waited:g} s)")
        self.waited = waited


@dataclass(frozen=True, slots=True)
class IdempotencyPolicy:
    ttl: float = ANSWER_RETENTION_SECONDS
    """Seconds an answer is replayed."""
    hold: float = 30.0
    """Seconds a claim lives without a refresh (its instance died)."""
    wait: float = 600.0
    """Seconds a retry waits for an answer computed on another instance."""
    poll: float = 0.05
    """First interval between reads of a receipt computed elsewhere (doubles up to 1 s)."""


class IdempotentAnswers:
    """See the module docstring. One per app; `clock` is Unix seconds (tests move it)."""

    def __init__(self, policy: IdempotencyPolicy | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.policy = policy or IdempotencyPolicy()
        self._clock = clock
        self._computing: dict[tuple[str, str, str], asyncio.Task[Answer]] = {}

    async def once(
        self, receipts: ReceiptStore, scope: str, key: str, fp: str, compute: Compute, *, ttl: float | None = None,
        refuse_reuse: bool = False,
    ) -> Answer:  # fmt: skip
        """The answer of (scope, key, fp): stored, awaited, or computed here by `compute()`
        and kept `ttl` seconds (default: the policy's); `KeyReused` when `refuse_reuse` and
        the key stands for another fingerprint."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.policy.wait
        delay = self.policy.poll
        while True:
            local = self._computing.get((scope, key, fp))
            if local is not None:
                return await asyncio.shield(local)
            token = f"claim_{uuid.uuid4().hex}"
            now = self._clock()
            found = await receipts.claim_receipt(scope, key, fp, token, now=now, expires_at=now + self.policy.hold)
            if found is None:
                return await asyncio.shield(self._start(receipts, scope, key, fp, token, compute, ttl, claimed=True))
            if found.fingerprint == fp and found.answer is not None:
                return found.answer
            if found.fingerprint != fp and refuse_reuse:
                raise KeyReused(scope)
            if found.fingerprint != fp or not found.pending:  # another request used the key
                return await asyncio.shield(self._start(receipts, scope, key, fp, token, compute, ttl, claimed=False))
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AnswerPending(scope, self.policy.wait)
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 1.0)

    def _start(
        self, receipts: ReceiptStore, scope: str, key: str, fp: str, token: str, compute: Compute,
        ttl: float | None, *, claimed: bool,
    ) -> asyncio.Task[Answer]:  # fmt: skip
        slot = (scope, key, fp)
        task = asyncio.get_running_loop().create_task(
            self._compute(receipts, scope, key, fp, token, compute, ttl, claimed=claimed)
        )
        self._computing[slot] = task  # concurrent identical requests here await this task

        def settle(done: asyncio.Task[Answer]) -> None:
            if self._computing.get(slot) is done:
                del self._computing[slot]
            if not done.cancelled():
                done.exception()  # retrieved: the waiters got it

        task.add_done_callback(settle)
        return task

    async def _compute(
        self, receipts: ReceiptStore, scope: str, key: str, fp: str, token: str, compute: Compute,
        ttl: float | None, *, claimed: bool,
    ) -> Answer:  # fmt: skip
        holder = asyncio.get_running_loop().create_task(self._hold(receipts, scope, key, token)) if claimed else None
        try:
            computed = await compute()
        except BaseException:
            if claimed:
                await self._release(receipts, scope, key, token)
            raise
        finally:
            if holder is not None:
                holder.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await holder
        if isinstance(computed, Transient):
            if claimed:
                await self._release(receipts, scope, key, token)
            return computed.answer
        answer = computed
        try:
            stored = await receipts.store_answer(
                scope, key, fp, token, answer, expires_at=self._clock() + (self.policy.ttl if ttl is None else ttl)
            )
        except StoreError as exc:
            logger.warning("idempotency: storing the answer for a %s key failed: %s", scope, exc)
            stored = False
        if claimed and not stored:
            await self._release(receipts, scope, key, token)
        return answer

    async def _hold(self, receipts: ReceiptStore, scope: str, key: str, token: str) -> None:
        while True:
            await asyncio.sleep(self.policy.hold / 3)
            try:
                await receipts.hold_receipt(scope, key, token, expires_at=self._clock() + self.policy.hold)
            except StoreError as exc:
                logger.warning("idempotency: refreshing a %s claim failed: %s", scope, exc)

    @staticmethod
    async def _release(receipts: ReceiptStore, scope: str, key: str, token: str) -> None:
        try:
            await receipts.release_receipt(scope, key, token)
        except StoreError as exc:  # the claim lapses after `hold` anyway
            logger.warning("idempotency: releasing a %s claim failed: %s", scope, exc)
