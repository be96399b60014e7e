"""A bounded FIFO between one producer and one consumer on one event loop (`Channel`).

It replaces `asyncio.Queue` where a turn hands its events to its consumer
(`hermes.agent.turn_handle`): the same order and backpressure, with at most one waiting
getter and one waiting putter, so a hand-over is a deque append and, when the other side
waits, one future resolved.

Invariants:
- Items come out in the order they went in; `put_nowait` requires room (`full()` is false),
  `get_nowait` an item (`len() > 0`).
- `put` waits while `maxsize` items are held; `get` waits while none is. Taking items
  (`get_nowait`, `clear`) wakes a waiting putter; adding one wakes a waiting getter.
- A cancelled `put` or `get` leaves the channel as it was (no item added or lost) and no
  waiter behind.
- One producer and one consumer: a second concurrent `put` (or `get`) is a usage error.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Channel(Generic[T]):
    """See the module docstring."""

    __slots__ = ("_getter", "_items", "_maxsize", "_putter")

    def __init__(self, maxsize: int) -> None:
        assert maxsize > 0
        self._items: deque[T] = deque()
        self._maxsize = maxsize
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def full(self) -> bool:
        return len(self._items) >= self._maxsize

    def put_nowait(self, item: T) -> None:
        assert len(self._items) < self._maxsize, "put_nowait on a full channel"
        self._items.append(item)
        getter = self._getter
        if getter is not None:
            self._getter = None
            if not getter.done():
                getter.set_result(None)

    async def put(self, item: T) -> None:
        while len(self._items) >= self._maxsize:
            assert self._putter is None, "one producer at a time"
            putter = self._putter = asyncio.get_running_loop().create_future()
            try:
                await putter
            finally:
                if self._putter is putter:
                    self._putter = None
        self.put_nowait(item)

    def get_nowait(self) -> T:
        item = self._items.popleft()
        self._wake_putter()
        return item

    async def get(self) -> T:
        while not self._items:
            assert self._getter is None, "one consumer at a time"
            getter = self._getter = asyncio.get_running_loop().create_future()
            try:
                await getter
            finally:
                if self._getter is getter:
                    self._getter = None
        return self.get_nowait()

    def clear(self) -> None:
        """Drop every item held."""
        self._items.clear()
        self._wake_putter()

    def _wake_putter(self) -> None:
        putter = self._putter
        if putter is not None:
            self._putter = None
            if not putter.done():
                putter.set_result(None)
