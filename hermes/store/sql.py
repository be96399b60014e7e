"""What a storage backend gives the rules (`hermes.store.rules`): an
`Executor` and a `Dialect`.

The rules are written once, in neutral SQL: `?` placeholders (named parameters only in a
dialect's own statements), tables named `hermes.<table>`, `true` /
`false` / `NOT draft` for the draft flag. An executor turns that into its backend's SQL
and runs it; a dialect names the few differences the SQL cannot hide.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from hermes.errors import StoreError
from hermes.store.records import SearchHit

__all__ = ["TURN_COLUMNS", "Dialect", "Executor", "FusedWrites", "Params", "Row", "encode_json"]

Params = Sequence[Any] | Mapping[str, Any]
Row = Sequence[Any]

TURN_COLUMNS = (
    "id, session_id, after_message_id, draft_message_id, started_at, ended_at, end_reason, "
    "owner_host, owner_pid, owner_started"
)
"""A turn's columns in `TurnRecord` order, less the owner instance (a dialect's own)."""


def encode_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Executor(Protocol):
    """Runs the neutral SQL of this module on one backend (see the module docstring).

    Every method raises StoreError (one line, prefixed with `where`) for a database error.
    """

    where: str
    """How messages name the database: "session database <file>", "database <url>"."""

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    async def insert(self, sql: str, params: Params = ()) -> int | None:
        """Run an INSERT of at most one row; the new row's id, None when nothing was inserted."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[None]:
        """The statements in the block form one transaction (joining an enclosing one)."""
        ...

    def block(self) -> AbstractAsyncContextManager[None]:
        """A caller's `transaction()` block: one transaction; nested, a savepoint."""
        ...


@dataclass(frozen=True, slots=True)
class FusedWrites:
    """One-statement forms of writes, for a backend where a round trip is the cost.

    Each is native SQL with the parameters documented at its use in `Sessions`."""

    append: str
    append_to_turn: str
    start_turn: str
    create_with_turn: str
    finish_turn: str
    end_turn: str
    begin_turn: str
    save_draft: str


class Dialect(Protocol):
    """The named differences between backends (see the module docstring)."""

    content_columns: str
    """The stored columns of a message's content, in `encode_content` order."""
    content_width: int
    """How many of `content_columns` (a prefix) a message row selects for `decode_content`."""
    session_order: str
    """The column that orders sessions inserted at equal times."""
    no_limit: int | None
    """LIMIT's parameter for "no limit"."""
    for_update: str
    """The suffix that locks the selected rows until the transaction ends ("" when the
    transaction already holds the whole database)."""
    tool_call_count: str
    """The SQL expression for the length of the `tool_calls` JSON array of a message."""
    turn_instance: str
    """The SQL of a turn's owner instance column (NULL when turns belong to processes)."""
    fused: FusedWrites | None
    settled_runs_final: bool
    """A settled run's row keeps its status whatever a later `put` says (where other
    instances may settle a run its owner still writes)."""
    db_now: str
    """The SQL expression of the database's clock, in seconds since the epoch."""
    response_recency: str
    """The SQL expression of a stored response's next recency stamp (greater than every
    stamp so far)."""
    skip_locked: str
    """The suffix of a subquery that picks rows to delete, skipping rows another
    transaction holds ("" when the transaction holds the whole database)."""
    find_output_item: str
    """A statement selecting, as JSON text, the output item with id `?` of any stored
    response (its `response.output`)."""

    def unique_violation(self, error: StoreError, index: str) -> bool:
        """Whether `error` is a write refused by the unique index `index`."""
        ...

    def encode_content(self, role: str, content: object) -> tuple[Any, ...]:
        """The values of `content_columns` for a message's content (TypeError for a bad type)."""
        ...

    def decode_content(self, stored: Row) -> str | list[dict[str, Any]] | None:
        """The content from its first `content_width` stored values."""
        ...

    def lineage_titles(self, base: str) -> list[tuple[str, Params]]:
        """Statements whose last one selects every title that may be "<base> #N"
        (earlier ones serialise lineage numbering across connections, where needed)."""
        ...

    def abandoned(self) -> tuple[str, str]:
        """(every open turn that may be abandoned, that one turn again by id, locked and
        still open and abandoned), both selecting `TURN_COLUMNS` and the owner instance."""
        ...

    async def search(self, db: Executor, query: str, *, limit: int, source: str | None) -> list[SearchHit]: ...

    async def db_bytes(self, db: Executor) -> int: ...
