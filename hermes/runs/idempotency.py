"""In-memory idempotency for the non-streaming OpenAI endpoints (`Idempotency-Key`).

A request is identified by its key *and* a fingerprint of the fields that define it:

- same key, same fingerprint, finished within `ttl` → the cached value is returned;
- same key, same fingerprint, still running → the caller awaits the one shared task
  (concurrent identical requests run once);
- same key, different fingerprint → computed afresh (and replaces the cached value).

The shared computation runs in its own task behind `asyncio.shield`, so a waiter that
is cancelled (its client went away) never cancels the work the others wait for; the
result is still cached for the retry. Failures are not cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def fingerprint(body: Mapping[str, Any], fields: Iterable[str], **extra: Any) -> str:
    """sha256 over the named body fields (absent = null) plus `extra` (e.g. headers)."""
    material = {"body": {name: body.get(name) for name in fields}, "extra": extra}
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


class IdempotencyCache:
    """See the module docstring."""

    def __init__(self, *, max_items: int = 1000, ttl: float = 300.0) -> None:
        self.max_items = max_items
        self.ttl = ttl
        self._done: OrderedDict[str, tuple[str, float, Any]] = OrderedDict()
        self._inflight: dict[tuple[str, str], asyncio.Task[Any]] = {}

    def _purge(self, now: float) -> None:
        while self._done:
            _key, (_, expires, _) = next(iter(self._done.items()))
            if expires > now and len(self._done) <= self.max_items:
                break
            self._done.popitem(last=False)

    def _lookup(self, key: str, fp: str) -> tuple[bool, Any]:
        now = time.monotonic()
        self._purge(now)
        entry = self._done.get(key)
        if entry is not None and entry[0] == fp and entry[1] > now:
            self._done.move_to_end(key)
            return True, entry[2]
        return False, None

    async def get_or_set(self, key: str, fp: str, compute: Callable[[], Awaitable[T]]) -> T:
        hit, value = self._lookup(key, fp)
        if hit:
            return value  # type: ignore[no-any-return]
        slot = (key, fp)
        task = self._inflight.get(slot)
        if task is None:
            task = asyncio.ensure_future(compute())
            self._inflight[slot] = task

            def settle(t: asyncio.Task[Any], slot: tuple[str, str] = slot) -> None:
                if self._inflight.get(slot) is t:
                    del self._inflight[slot]
                if not t.cancelled() and t.exception() is None:
                    self._done[slot[0]] = (slot[1], time.monotonic() + self.ttl, t.result())
                    self._done.move_to_end(slot[0])
                    self._purge(time.monotonic())

            task.add_done_callback(settle)
        return await asyncio.shield(task)

    def __len__(self) -> int:
        return len(self._done)
