"""`PgControlChannel`: stop and approval messages to a run's owner over LISTEN/NOTIFY.

Wire format (JSON in the NOTIFY payload, well under PostgreSQL's 8000-byte limit):

    request  {"v": 1, "kind": "request", "id": <uuid hex>, "from": <instance id>,
              "op": "stop" | "approval" | "status", "run_id": <run id>, "args": {...}}
    reply    {"v": 1, "kind": "reply", "id": <the request's id>, "ok": bool,
              "data": {...}, "code": str | null, "message": str | null}

Each instance LISTENs on its own channel, `hermes_ctl_<instance id>` (through the
storage's one LISTEN connection, `postgres.listener`); a request goes to the owner's
channel, the reply to the sender's (`from`). Invariants:

- The sender's LISTEN is in place before it sends, so a fast reply is never missed.
- A request whose reply does not arrive within its timeout raises `ControlUnanswered`;
  a late reply is dropped (no waiter for its id). NOTIFY delivers to live listeners
  only: a dead owner simply never answers.
- A handler that fails answers `ok: false` with code `internal_error`; a malformed
  payload is logged and ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import uuid
from typing import Any

from hermes.errors import StoreError
from hermes.store.api import ControlHandler, ControlUnanswered
from hermes.store.postgres.connect import Database
from hermes.store.postgres.listener import PgListener
from hermes.store.records import ControlMessage, ControlReply

__all__ = ["CHANNEL_PREFIX", "PgControlChannel", "channel_for"]

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "hermes_ctl_"
_INSTANCE = re.compile(r"^inst_[0-9a-f]{1,40}$")
VERSION = 1


def channel_for(instance_id: str) -> str:
    """The LISTEN channel of `instance_id` (a safe identifier: `hermes_ctl_inst_…`)."""
    if not _INSTANCE.match(instance_id):
        raise StoreError(f"not an instance id: {instance_id[:64]!r}")
    return CHANNEL_PREFIX + instance_id


class PgControlChannel:
    """See the module docstring. Built by `open_postgres_storage`."""

    def __init__(self, db: Database, listener: PgListener) -> None:
        self._db = db
        self.instance_id = listener.instance_id
        self._listener = listener
        listener.on(channel_for(self.instance_id), self._dispatch)
        self._handler: ControlHandler | None = None
        self._waiters: dict[str, asyncio.Future[ControlReply]] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._closed = False

    async def serve(self, handler: ControlHandler) -> None:
        self._handler = handler
        await self._ready()

    async def request(self, instance_id: str, message: ControlMessage, *, timeout: float) -> ControlReply:
        await self._ready()
        request_id = uuid.uuid4().hex
        future: asyncio.Future[ControlReply] = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = future
        try:
            await self._notify(
                instance_id,
                {"v": VERSION, "kind": "request", "id": request_id, "from": self.instance_id,
                 "op": message.op, "run_id": message.run_id, "args": message.args},
            )
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                raise ControlUnanswered(
                    f"instance {instance_id} did not answer within {timeout:g} s"
                ) from None
        finally:
            self._waiters.pop(request_id, None)

    async def aclose(self) -> None:
        self._closed = True
        self._handler = None
        for task in list(self._answering):
            task.cancel()
        for task in list(self._answering):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(ControlUnanswered("the control channel was closed"))

    # ---- internals -----------------------------------------------------------------

    async def _ready(self) -> None:
        if self._closed:
            raise StoreError("the control channel is closed")
        if not await self._listener.ready():
            raise StoreError(f"database {self._db.label}: cannot LISTEN for control messages")

    async def _notify(self, instance_id: str, payload: dict[str, Any]) -> None:
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
        async with self._db.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel_for(instance_id), text))

    def _dispatch(self, payload: str) -> None:
        if self._closed:
            return
        try:
            note = json.loads(payload)
            kind = note["kind"]
            request_id = str(note["id"])
        except (ValueError, KeyError, TypeError):
            logger.warning("control channel: ignoring a malformed message")
            return
        if kind == "reply":
            future = self._waiters.get(request_id)
            if future is not None and not future.done():
                future.set_result(
                    ControlReply(
                        ok=bool(note.get("ok")),
                        data=dict(note.get("data") or {}),
                        code=note.get("code"),
                        message=note.get("message"),
                    )
                )
        elif kind == "request" and isinstance(note.get("from"), str):
            task = asyncio.create_task(self._answer(note, request_id))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

    async def _answer(self, note: dict[str, Any], request_id: str) -> None:
        handler = self._handler
        message = ControlMessage(
            op=str(note.get("op")), run_id=str(note.get("run_id")), args=dict(note.get("args") or {})
        )
        if handler is None:
            reply = ControlReply(ok=False, code="not_serving", message="this instance does not serve runs")
        else:
            try:
                reply = await handler(message)
            except Exception as exc:  # noqa: BLE001 - the sender gets a clear failure, not a timeout
                logger.exception("control channel: handling %s for %s failed", message.op, message.run_id)
                reply = ControlReply(ok=False, code="internal_error", message=str(exc)[:200] or type(exc).__name__)
        try:
            await self._notify(
                note["from"],
                {"v": VERSION, "kind": "reply", "id": request_id, "ok": reply.ok, "data": reply.data,
                 "code": reply.code, "message": reply.message},
            )
        except StoreError as exc:
            logger.warning("control channel: cannot reply to %s: %s", note["from"], exc)
