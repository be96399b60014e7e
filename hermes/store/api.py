"""The async storage interface: one Protocol per record kind, and the `Storage` bundle.

Two backends implement it, chosen by `database_url` (`hermes.store.configured.open_storage`);
the rules of every record kind are written once for both (`hermes.store.rules`), and what
a backend can do is asked through `Storage.caps`, never its name:

- SQLite (`hermes.store.sqlite`): one file, `$HERMES_HOME/state.db`. Run events live in the process (SQLite serves one
  process on one host), as the server always kept them.
- PostgreSQL (`hermes.store.postgres`): every record kind in one database, shared by any
  number of instances; run events are rows announced with NOTIFY.

Record types crossing this interface are the frozen dataclasses of `hermes.store.records`.
Every method raises `StoreError` (one line, credentials masked) when the database is
unusable, and the session methods raise `SessionNotFound` / `MessageNotFound` for
unknown ids.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Self, assert_never, runtime_checkable

from hermes.errors import StoreError
from hermes.messages import ChatMessage
from hermes.store.records import (
    CompactionRecord,
    ControlMessage,
    ControlReply,
    ConversationMark,
    HistoryMark,
    InstanceLease,
    MessageRecord,
    NewCompaction,
    NewMessage,
    NewSession,
    Receipt,
    RepairedTurn,
    RunRecord,
    SearchHit,
    SessionRecord,
    StoredRunEvent,
    StoreStats,
    TurnCheckpoint,
    TurnRecord,
    UsageTotal,
)

__all__ = [
    "AsyncResponseStore",
    "AsyncRunStore",
    "AsyncSessionStore",
    "Backend",
    "ControlChannel",
    "ControlHandler",
    "ControlUnanswered",
    "EventSubscription",
    "LeaseStore",
    "ReceiptStore",
    "RunEventStore",
    "Storage",
    "StorageCaps",
    "caps_of",
]

Backend = Literal["sqlite", "postgres"]


@runtime_checkable
class AsyncSessionStore(Protocol):
    """Sessions and messages. Unknown ids raise SessionNotFound / MessageNotFound.

    Both backends give the same semantics, method for method (ordering, fork titles,
    first end reason wins, counters, search syntax and ranking): the rules are written
    once in `hermes.store.rules.sessions`.
    """

    async def create_session(
        self,
        *,
        source: str,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        fresh_if_taken: bool = False,
        cwd: str | None = None,
    ) -> SessionRecord:
        """A new session; `session_id` existing is a StoreError, unless `fresh_if_taken`
        (then the session gets a fresh id, in the same write). `cwd`: the folder it belongs to."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def find_session(self, session_id: str) -> SessionRecord | None: ...

    async def latest_session(self, *, source: str | None = None, cwd: str | None = None) -> SessionRecord | None:
        """The session with the newest activity (of that source, in that folder)."""
        ...

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, cwd: str | None = None
    ) -> list[SessionRecord]:
        """Newest activity first; `cwd` keeps the sessions of that folder (exact match)."""
        ...

    async def count_sessions(self, *, source: str | None = None, cwd: str | None = None) -> int: ...

    async def sessions_with_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        """The sessions whose id starts with `prefix`, newest activity first (at most `limit`)."""
        ...

    async def rename_session(self, session_id: str, title: str) -> SessionRecord: ...

    async def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord: ...

    async def end_session(self, session_id: str, reason: str) -> None: ...

    async def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        model: str | None = None,
    ) -> None:
        """Add to the session's counters and write a usage row for `model` (the session's
        model when None) on today's UTC date; nothing is written for zero tokens."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete the session and its messages (children keep their rows, parent link cleared)."""
        ...

    async def append_message(
        self, session_id: str, message: NewMessage, *, turn_id: int | None = None
    ) -> MessageRecord:
        """Durable when it returns (or when the enclosing `transaction()` commits).

        With `turn_id`, an assistant message replaces that turn's draft (keeping the
        draft's id and place), when it has one.
        """
        ...

    # -- turns and their drafts (crash safety) --

    async def begin_turn(self, session_id: str) -> TurnRecord:
        """Open a turn owned by this process (SQLite) or this storage's instance (PostgreSQL)."""
        ...

    async def open_turn(self, session_id: str, first: NewMessage) -> tuple[TurnRecord, MessageRecord]:
        """`begin_turn` and `append_message(first, turn_id=…)` as one write (all or nothing)."""
        ...

    async def start_turn(
        self, session: str | NewSession, inputs: Sequence[NewMessage]
    ) -> tuple[TurnRecord, list[MessageRecord]]:
        """Open a turn with its input messages (after creating the session, for a
        `NewSession`) as one write, all or nothing; the turn names the session."""
        ...

    async def save_draft(self, turn_id: int, content: str) -> None:
        """Save the streaming assistant text of an open turn as its draft (no-op once it ended)."""
        ...

    async def finish_turn(
        self,
        turn_id: int,
        session_id: str,
        reason: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        model: str | None = None,
        answer: NewMessage | None = None,
        mark: str | None = None,
    ) -> MessageRecord | None:
        """The turn's end as one write, all or nothing: its `answer` (an assistant message,
        stored as `append_message(..., turn_id=)` stores it: it replaces an open draft),
        `end_turn`, `add_usage`, `end_session` (first reason wins) and, given `mark`,
        `mark_conversation(session_id, mark)` after the answer. The answer's record (None
        without one).

        StoreError when the turn does not belong to the session; SessionNotFound when the
        session is gone."""
        ...

    async def end_turn(self, turn_id: int, reason: str) -> None:
        """End an open turn; a draft still open is kept as a message (finish_reason `reason`)."""
        ...

    async def get_turn(self, turn_id: int) -> TurnRecord | None: ...

    # -- file checkpoints and undo (hermes/checkpoints) --

    async def set_turn_checkpoint(self, turn_id: int, *, worktree: str, before: str, after: str) -> None:
        """Record the snapshot commits of a turn's files (StoreError for an unknown turn)."""
        ...

    async def turn_checkpoints(self, session_id: str) -> list[TurnCheckpoint]:
        """Every turn of the session, oldest first, with its snapshots and undo marker."""
        ...

    async def undo_turns(self, session_id: str, count: int) -> list[int]:
        """Hide the newest `count` visible turns and their messages behind one new marker.

        Returns the hidden turn ids, oldest first (fewer when fewer are visible). The
        messages are kept; `history()`, `get_messages()` and forks leave them out."""
        ...

    async def redo_turns(self, session_id: str) -> list[int]:
        """Bring back the turns (and messages) of the newest undo marker, unless a visible
        turn came after them; the turn ids, oldest first (empty: nothing to redo)."""
        ...

    async def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        """The turn's messages, oldest first (a draft included)."""
        ...

    async def repair_abandoned_turns(self) -> list[RepairedTurn]:
        """End every open turn whose owner is gone.

        Each such turn ends "interrupted": its draft is kept as the assistant message,
        every unanswered tool call gets the SERVER_STOPPED_TOOL_RESULT result, and the
        session is ended "interrupted" (first reason wins). Cheap when nothing is open.

        "Gone" is a dead process on this host (SQLite, `owner.owner_gone`) or an instance
        whose lease expired or is missing (PostgreSQL). Open turns of live owners are
        never touched.
        """
        ...

    # -- compaction markers --

    async def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        """Record a marker; SessionNotFound for an unknown session."""
        ...

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's markers, oldest first (empty for an unknown session)."""
        ...

    async def latest_compaction(self, session_id: str) -> CompactionRecord | None:
        """The session's newest marker (None: never compacted, or an unknown session)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[None]:
        """The writes of this store inside the block form one transaction, committed at exit.

        The block awaits nothing but this store's own methods, and starts no task that
        uses the store (SQLite holds its lock; PostgreSQL pins one connection to the
        task's context). An exception leaving the block undoes all of it.
        """
        ...

    async def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Oldest first."""
        ...

    async def history(self, session_id: str) -> list[ChatMessage]:
        """The transcript as OpenAI messages (no system prompt), ready to send again.

        Drafts are left out, and it is valid for strict endpoints (see
        `transcript.valid_transcript`) even where the stored rows are not.
        """
        ...

    async def history_mark(self, session_id: str) -> HistoryMark:
        """The numbers that identify the session's model-ready history (`HistoryMark`):
        one cheap statement, bounded by the latest compaction; count 0 for an unknown session."""
        ...

    async def history_since(
        self, session_id: str, first_message_id: int, *, large: bool = False
    ) -> list[MessageRecord]:
        """The visible, finished (no draft) messages with id >= `first_message_id`, oldest
        first, as stored (not yet made valid by `transcript.valid_transcript`).

        `large`: the caller expects many rows; the backend then keeps the read from
        holding the event loop (SQLite: a worker thread with a connection of its own;
        PostgreSQL's reads always suspend). The rows are the same either way."""
        ...

    async def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
        with_marks: bool = False,
    ) -> SessionRecord: ...

    async def mark_conversation(self, session_id: str, fingerprint: str) -> ConversationMark:
        """Remember that the conversation `fingerprint` ends at the session's newest message.

        Marking the same fingerprint on the same session again moves the mark; a session
        without messages cannot be marked (MessageNotFound). Deleting the session deletes
        its marks.
        """
        ...

    async def find_conversation(
        self, fingerprints: Sequence[str], *, session_id: str | None = None
    ) -> ConversationMark | None:
        """The best mark among `fingerprints`, which come longest conversation first: the
        earliest-listed fingerprint that has a mark; of its marks, an `open` one (its session
        still ends there, unclaimed) before the others, then the newest. With `session_id`:
        that session's marks only."""
        ...

    async def point_chat_key(self, key: str, session_id: str) -> None:
        """Make the client's chat key `key` name `session_id` from now on (the session has
        messages, else MessageNotFound); deleting the session lets the key fall back to the
        session it named before."""
        ...

    async def find_chat_key(self, key: str) -> str | None:
        """The session the chat key was last pointed at (None: never, or deleted since)."""
        ...

    async def claim_conversation(self, session_id: str, fingerprint: str) -> bool:
        """Take an open mark for one continuation of its session: True for exactly one
        caller, on any instance, while the mark is `latest` and unclaimed (marking the
        fingerprint again reopens it)."""
        ...

    async def search(self, query: str, *, limit: int = 20, source: str | None = None) -> list[SearchHit]: ...

    async def stats(self) -> StoreStats: ...

    async def session_usage(self, session_ids: Sequence[str]) -> list[UsageTotal]:
        """The usage rows of these sessions summed per session and model (`day` None)."""
        ...

    async def usage_totals(self) -> list[UsageTotal]:
        """Every usage row summed per UTC day and model (`session_id` None), oldest day first."""
        ...


@runtime_checkable
class AsyncResponseStore(Protocol):
    """Stored Responses API records (JSON documents) and conversation names.

    LRU-bounded to `max_size`: `get` refreshes a record, `put` evicts the least recently
    used beyond it. A conversation name maps to a response id and disappears with it.
    A deleted record is gone for every reader at once (no reader caches records).
    """

    max_size: int

    async def get(self, response_id: str) -> dict[str, Any] | None: ...

    async def put(self, response_id: str, record: dict[str, Any]) -> None: ...

    async def delete(self, response_id: str) -> bool:
        """True when a record was removed."""
        ...

    async def count(self) -> int: ...

    async def get_conversation(self, name: str) -> str | None: ...

    async def set_conversation(self, name: str, response_id: str) -> None: ...

    async def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The output item (``record["response"]["output"][i]``) with this id in any stored record."""
        ...


@runtime_checkable
class ReceiptStore(Protocol):
    """`Idempotency-Key` receipts: which request (fingerprint) started which run, or (the
    OpenAI endpoints) which claim computes the answer, and the finished JSON answer.

    `claim_receipt` is atomic across every process sharing the database: of two claims
    for one live (scope, key) exactly one succeeds and the other gets the winner's receipt.
    A receipt with `expires_at` (an answer's claim, or a stored answer) is live until
    then; one without, `retention` seconds after its last update.
    """

    @property
    def retention(self) -> float:
        """Seconds a receipt stays live after its last update."""
        ...

    async def find_receipt(self, scope: str, key: str, *, now: float | None = None) -> Receipt | None: ...

    async def claim_receipt(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        *,
        now: float | None = None,
        expires_at: float | None = None,
    ) -> Receipt | None:
        """None when the claim succeeded, else the live receipt that got there first.

        With `expires_at` the receipt is a claim on computing the key's answer: it lapses
        then (another claim may take the key) unless held longer or answered."""
        ...

    async def hold_receipt(self, scope: str, key: str, run_id: str, *, expires_at: float) -> bool:
        """Extend the claim `run_id` holds on (scope, key); False when it holds none."""
        ...

    async def store_answer(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        answer: dict[str, Any],
        *,
        expires_at: float,
        now: float | None = None,
    ) -> bool:
        """Store the JSON answer `run_id` computed for (scope, key), live until `expires_at`:
        it settles that claim, or replaces the key's receipt unless another live claim is
        computing. True when stored."""
        ...

    async def release_receipt(self, scope: str, key: str, run_id: str) -> None:
        """Drop the claim `run_id` holds on (scope, key) (its computation failed), so a
        retry computes afresh."""
        ...

    async def touch_receipts(self, run_id: str, *, now: float | None = None) -> None: ...

    async def prune_receipts(self, *, now: float | None = None) -> int: ...


@runtime_checkable
class AsyncRunStore(Protocol):
    """Durable run status (the body of `GET /v1/runs/{id}`)."""

    async def put(self, record: RunRecord) -> None:
        """Insert or replace the row of `record.run_id`.

        On PostgreSQL a settled row only takes writes with the same status: an owner whose
        lease lapsed cannot bring back a run another instance settled.

        Raises:
            SessionBusy: the record is unsettled and another unsettled run of its session
                exists (at most one per session, on every backend)."""
        ...

    async def get(self, run_id: str) -> RunRecord | None: ...

    async def latest_for_session(self, session_id: str) -> RunRecord | None:
        """The session's newest run (by `created_at`), settled or not."""
        ...

    async def mark_interrupted(self, run_ids: list[str], *, message: str | None = None) -> list[str]:
        """Settle the given unsettled runs as `interrupted`; returns the ids that changed."""
        ...

    async def prune_runs(self, *, now: float | None = None) -> int:
        """Drop settled runs older than the retention; returns rows removed."""
        ...


class EventSubscription(Protocol):
    """A run's events after a seq: first the stored history, then live ones.

    Iterating ends after the stream's final event, or when `aclose()` was called.
    `next(timeout)` returns None when nothing arrived within `timeout` seconds (time for
    a keepalive), and raises `StopAsyncIteration` at the end.
    """

    last_seq: int
    """The seq of the newest event handed out (the `after` it started from, before)."""

    async def next(self, timeout: float | None = None) -> StoredRunEvent | None: ...

    def __aiter__(self) -> AsyncIterator[StoredRunEvent]: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class RunEventStore(Protocol):
    """Each run's append-only event stream, numbered from 1 by the store."""

    async def append(
        self,
        run_id: str,
        name: str,
        data: dict[str, Any] | None = None,
        *,
        final: bool = False,
        ts: float | None = None,
    ) -> StoredRunEvent:
        """Append the next event of `run_id` (seq = previous + 1) and announce it.

        Appending after the final event raises StoreError: a finished stream is closed.
        """
        ...

    async def read_after(self, run_id: str, after: int = 0, *, limit: int | None = None) -> list[StoredRunEvent]:
        """Stored events with seq > after, oldest first."""
        ...

    def subscribe(self, run_id: str, after: int = 0) -> EventSubscription: ...

    async def delete_events(self, run_id: str) -> None: ...

    async def prune_events(self, *, before: float) -> int:
        """Drop the streams whose final event is older than `before` (Unix seconds)."""
        ...


@runtime_checkable
class LeaseStore(Protocol):
    """Instance leases: who is alive, and which runs lost their owner.

    An instance registers, then heartbeats more often than its `ttl`; a lease whose
    `expires_at` has passed (by the database's clock) means the instance is gone, and the
    unsettled runs it owned (`RunRecord.owner_instance`) are orphans for another
    instance to settle as interrupted.
    """

    async def register_instance(self, instance_id: str, *, ttl: float, host: str, pid: int) -> InstanceLease: ...

    async def heartbeat(self, instance_id: str, *, ttl: float) -> InstanceLease:
        """Extend the lease (re-creating it when another instance pruned it)."""
        ...

    async def release_instance(self, instance_id: str) -> None:
        """Drop the lease (clean shutdown)."""
        ...

    async def list_instances(self) -> list[InstanceLease]: ...

    async def orphaned_runs(self) -> list[RunRecord]:
        """Unsettled runs whose owner instance has no live lease (expired or missing)."""
        ...

    async def prune_instances(self, *, expired_for: float) -> int:
        """Drop leases that expired more than `expired_for` seconds ago."""
        ...


ControlHandler = Callable[[ControlMessage], Awaitable[ControlReply]]


class ControlUnanswered(StoreError):
    """No instance answered a control message within its timeout (owner gone or unreachable)."""

    code = "owner_unreachable"


@runtime_checkable
class ControlChannel(Protocol):
    """Messages between instances about the runs they own (PostgreSQL LISTEN/NOTIFY).

    Each instance answers the messages addressed to its `instance_id` with the handler
    given to `serve`; `request` sends one and waits for the reply. SQLite serves one
    process, so there a message reaches only this instance's own handler.
    """

    async def serve(self, handler: ControlHandler) -> None:
        """Answer messages addressed to this instance from now on (until `aclose`)."""
        ...

    async def request(self, instance_id: str, message: ControlMessage, *, timeout: float) -> ControlReply:
        """Send `message` to `instance_id` and wait for its reply.

        Raises:
            ControlUnanswered: no reply within `timeout` seconds.
        """
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StorageCaps:
    """What a storage can do, each flag named after the question asked above the store
    (ask these, never the backend's name)."""

    multi_instance: bool
    """Several `hermes serve` processes may share this storage: each holds a lease, and
    one settles the runs of another whose lease expired."""
    shared_runs: bool
    """The run store holds the runs of every process sharing it: a run that is not live
    here may be live in another process."""
    run_events_survive_process: bool
    """Run events are stored outside the process that ran the run: readable from any
    process after it ended, pruned by age. False: they live and go with the run."""
    local_files: bool
    """The data is files on this host (`$HERMES_HOME`), checked and sized as files."""


def caps_of(backend: Backend) -> StorageCaps:
    """The capabilities of a backend (known before it is opened)."""
    match backend:
        case "sqlite":
            return StorageCaps(
                multi_instance=False, shared_runs=False, run_events_survive_process=False, local_files=True
            )
        case "postgres":
            return StorageCaps(
                multi_instance=True, shared_runs=True, run_events_survive_process=True, local_files=False
            )
        case _:
            assert_never(backend)


@dataclass(frozen=True, slots=True)
class Storage:
    """Every store of one backend, opened together (`hermes.store.configured.open_storage`)."""

    backend: Backend
    """The backend's name, for display (`hermes db status`); ask `caps` what it can do."""
    location: str
    """Where the data lives, printable: the $HERMES_HOME folder or the masked URL."""
    instance_id: str
    """This process's identity in `leases` and as the owner of its runs and turns."""
    sessions: AsyncSessionStore
    responses: AsyncResponseStore
    receipts: ReceiptStore
    runs: AsyncRunStore
    run_events: RunEventStore
    leases: LeaseStore
    closer: _Closer
    control: ControlChannel
    """Stop/approval messages to the instance that owns a run."""
    repairer: _Repairer
    caps: StorageCaps

    async def repair_after_crash(self) -> None:
        """Make valid what crashed processes left half-done, where this storage does it at
        start-up (SQLite: turns, responses and runs of dead processes); where leases
        decide (PostgreSQL) the orphan sweeper does it instead, and this does nothing."""
        await self.repairer.repair_after_crash()

    async def aclose(self) -> None:
        """Close every store and connection. Closing twice is fine."""
        await self.closer.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _Closer(Protocol):
    async def aclose(self) -> None: ...


class _Repairer(Protocol):
    async def repair_after_crash(self) -> None: ...
