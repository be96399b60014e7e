"""Values computed over a list of messages, found again for a longer list that starts with
the same message objects: `PrefixMemo`.

    memo: PrefixMemo[list[int]] = PrefixMemo()
    found = memo.find(messages)   # (how many leading messages it shares with a kept list, its value)
    ...  the value for `messages`: the shared part's, plus the rest computed ...
    memo.keep(messages, value, weight=...)

A session's requests repeat their history as the same dicts turn after turn (the history
cache, `hermes.agent.history`) and call after call within a turn (the context grows at its
end), so the size estimate and the JSON of a request need only be computed for what is new.

Invariants:
- The shared part is the leading elements that are the very objects kept (identity,
  checked in C). That is right as long as no message is changed in place
  once it is in a request: the engine never does (it builds new dicts, and
  `context.shrink_to_fit` changes copies).
- Entries are keyed by the id of their first message, which they hold (so the id is
  theirs while they are kept); at most `entries` of them and `max_weight` in all (the
  weights the caller gives), least recently used dropped first.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Generic, TypeVar

__all__ = ["PrefixMemo"]

V = TypeVar("V")


class PrefixMemo(Generic[V]):
    """See the module docstring."""

    def __init__(self, *, entries: int = 64, max_weight: int = 64 * 1024 * 1024) -> None:
        self._entries: OrderedDict[int, tuple[list[Any], V, int]] = OrderedDict()
        self._max_entries = max(1, entries)
        self._max_weight = max_weight
        self._weight = 0

    def find(self, messages: list[Any]) -> tuple[int, V] | None:
        """(n, value) of the entry kept for a list that began with `messages[0]`, n being
        how many leading messages the two lists share (at least 1); else None. The value
        is the caller's, for the kept list: the caller takes its first n messages' part."""
        if not messages:
            return None
        key = id(messages[0])
        hit = self._entries.get(key)
        if hit is None:
            return None
        kept, value, _ = hit
        same = list(map(operator.is_, messages, kept))  # in C, as long as the shorter list
        shared = same.index(False) if False in same else len(same)
        self._entries.move_to_end(key)
        return shared, value

    def keep(self, messages: list[Any], value: V, *, weight: int = 0) -> None:
        """Remember `value` for `messages` (a copy of the list is kept, not the list)."""
        if not messages or weight > self._max_weight:
            return
        key = id(messages[0])
        old = self._entries.pop(key, None)
        if old is not None:
            self._weight -= old[2]
        self._entries[key] = (list(messages), value, weight)
        self._weight += weight
        while len(self._entries) > self._max_entries or self._weight > self._max_weight:
            _, (_, _, dropped) = self._entries.popitem(last=False)
            self._weight -= dropped
