"""Storage: the interface (`api`: one Protocol per record kind and the `Storage` bundle),
the records that cross it (`records`), the rules written once (`rules`) and the two
backends that execute them (`sqlite`, `postgres`); `configured.open_storage(settings)`
opens the configured one."""

from __future__ import annotations

from hermes.store.records import (
    MessageRecord,
    NewMessage,
    RepairedTurn,
    SearchHit,
    SessionRecord,
    StoreStats,
    TurnRecord,
)

__all__ = [
    "MessageRecord",
    "NewMessage",
    "RepairedTurn",
    "SearchHit",
    "SessionRecord",
    "StoreStats",
    "TurnRecord",
]
