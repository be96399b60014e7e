"""`PgListener`: the one LISTEN connection of a PostgreSQL storage (one per instance).

The run-event store (`postgres.events`, channel `hermes_run_events`) and the control
channel (`postgres.control`, channel `hermes_ctl_<instance id>`) both hear their
notifications through it: each registers a handler for its channel, and the listener
hands every notification's payload to the handler of its channel.

Invariants:
- At most one connection at a time, opened by the first `ready()` (not before: a
  storage nobody listens on holds no LISTEN connection). It LISTENs on every channel
  the listener was built with, before `ready()` returns True.
- Reconnect logic lives here only: a lost connection is reopened with a backoff (0.1 s
  doubling to 5 s), and the `on_reconnect` callbacks run after every loss and every
  (re)connect, so a user that may have missed notifications re-reads.
- The connection carries `application_name` "hermes-listen <instance id>", so the
  instance's LISTEN connections can be counted in `pg_stat_activity`.
- A handler runs in the listener's task and must not block; one that raises is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterable

from hermes.store.postgres.connect import CONNECT_TIMEOUT

__all__ = ["APPLICATION_PREFIX", "PgListener"]

logger = logging.getLogger(__name__)

APPLICATION_PREFIX = "hermes-listen "
"""`application_name` of a listener's connection, followed by the instance id."""
_RECONNECT_MAX = 5.0
_CHANNEL = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

Handler = Callable[[str], None]


class PgListener:
    """See the module docstring. Built by `open_postgres_storage`, closed with the storage."""

    def __init__(self, url: str, instance_id: str, channels: Iterable[str]) -> None:
        self._url = url
        self.instance_id = instance_id
        self.channels = tuple(channels)
        for channel in self.channels:
            if not _CHANNEL.match(channel):
                raise ValueError(f"not a channel name: {channel[:64]!r}")
        self._handlers: dict[str, Handler] = {}
        self._reconnect_callbacks: list[Callable[[], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._closed = False

    @property
    def application_name(self) -> str:
        return APPLICATION_PREFIX + self.instance_id

    def on(self, channel: str, handler: Handler) -> None:
        """Hand the payloads of `channel` (one the listener was built with) to `handler`."""
        if channel not in self.channels:
            raise ValueError(f"the listener does not LISTEN on {channel!r}")
        self._handlers[channel] = handler

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call `callback` after every loss and every (re)connect of the connection."""
        self._reconnect_callbacks.append(callback)

    async def ready(self, timeout: float = CONNECT_TIMEOUT) -> bool:
        """Start listening (once) and wait, at most `timeout` seconds, until every LISTEN
        is in place. False when that did not happen in time, or the listener is closed."""
        if self._closed:
            return False
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"hermes-listener-{self.instance_id}")
        try:
            await asyncio.wait_for(self._listening.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ---- internals -----------------------------------------------------------------

    async def _run(self) -> None:
        import psycopg

        delay = 0.1
        while not self._closed:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT,
                    application_name=self.application_name,
                )
                try:
                    for channel in self.channels:
                        await conn.execute(f"LISTEN {channel}")
                    self._listening.set()
                    self._reconnected()
                    delay = 0.1
                    async for note in conn.notifies():
                        self._dispatch(note.channel, note.payload)
                finally:
                    self._listening.clear()
                    with contextlib.suppress(psycopg.Error, OSError):
                        await conn.close()
            except (psycopg.Error, OSError) as exc:
                logger.warning("LISTEN connection lost (%s); reconnecting", type(exc).__name__)
            self._reconnected()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RECONNECT_MAX)

    def _dispatch(self, channel: str, payload: str) -> None:
        handler = self._handlers.get(channel)
        if handler is None:
            return
        try:
            handler(payload)
        except Exception:  # noqa: BLE001 - one bad handler must not end the listener
            logger.exception("LISTEN handler for %s failed", channel)

    def _reconnected(self) -> None:
        for callback in self._reconnect_callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - as in _dispatch
                logger.exception("LISTEN reconnect callback failed")
