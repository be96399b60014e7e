"""The shared Server-Sent Events writer and client-disconnect detection.

Every SSE endpoint (chat completions, responses, run events, session chat streams)
writes through `SSEStream`; nothing else builds ``text/event-stream`` responses.

    stream = SSEStream(request, headers=session_headers(sid, key))
    await stream.prepare()                  # head sent: SSE + CORS + security headers
    stream.on_disconnect(turn.cancel)       # optional: react to the client leaving
    await stream.send({"x": 1})             # data: {"x": 1}\n\n
    await stream.send(payload, event="hermes.tool.progress")
    await stream.send(payload, event="run.completed", id=7)   # id: 7\nevent: …\ndata: …
    await stream.send_data("[DONE]")        # a raw (non-JSON) data line
    await stream.comment("stream closed")   # : stream closed\n\n
    await stream.close()                    # stops the keepalive task, writes EOF

Contract (stable; other handler modules rely on it):

- Head: ``Content-Type: text/event-stream``, ``Cache-Control: no-cache``,
  ``X-Accel-Buffering: no`` plus the caller's ``headers``. CORS and security headers
  are added by the app's ``on_response_prepare`` hook (`hermes.server.http.middleware`),
  i.e. *before* the head is flushed, for this and every other response.
- Keepalive: after ``keepalive`` seconds without a write (default: the app's
  ``Settings.server_keepalive_seconds``; ``0``/``None`` disables), ``: keepalive`` is sent.
- Disconnect: a background task polls the transport every ``poll_interval`` seconds.
  When the client has gone, ``disconnected`` becomes true, the ``on_disconnect``
  callbacks run once (synchronously, in registration order) and ``wait_disconnected()``
  returns. ``send``/``comment`` on a gone client raise `ClientDisconnected` (a
  ``ConnectionError``); they never raise anything else for transport trouble.
- Frames: JSON is ``json.dumps(payload, ensure_ascii=...)`` with default separators;
  ``ensure_ascii`` defaults to True (pass False for UTF-8 frames).
- Frames never interleave (the keepalive with a frame, say): aiohttp hands each write to
  the transport whole, in one synchronous call, before it waits for the client to drain
  (SSE responses are never compressed).
- `FrameTemplate` writes the same bytes as `encode_frame` for a payload whose few varying
  fields (a delta's text, its sequence number) are filled in per frame; only those are
  encoded each time.
- With ``record=True`` every frame written by ``send``/``send_data``/``send_raw`` is also
  kept in ``recorded`` (comments and keepalives are not), so the stream can be replayed.

`DisconnectWatcher` gives the same detection to non-streaming handlers (a JSON turn is
cancelled when its client leaves).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring, encode_basestring_ascii
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from hermes.server.http.lifecycle import live_work

log = logging.getLogger(__name__)

SSE_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}

DEFAULT_POLL_INTERVAL = 0.25
"""Seconds between transport checks for a vanished client."""

KEEPALIVE_FRAME = b": keepalive\n\n"


class _Default:
    """Marker type: use the app's configured value."""


DEFAULT = _Default()


class ClientDisconnected(ConnectionError):
    """The SSE client has gone away; nothing more can be written."""


def client_gone(request: web.BaseRequest) -> bool:
    """True when the request's connection is closed or closing."""
    transport = request.transport
    return transport is None or transport.is_closing()


def _default_keepalive(request: web.BaseRequest) -> float | None:
    from hermes.server.http.state import SETTINGS  # local: state imports nothing from here

    settings = request.config_dict.get(SETTINGS) if isinstance(request, web.Request) else None
    return settings.server_keepalive_seconds if settings is not None else 10.0


def encode_frame(
    data: Any, *, event: str | None = None, id: int | str | None = None, ensure_ascii: bool = True
) -> bytes:
    """One SSE frame. `data` is JSON-encoded unless it is already a str."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=ensure_ascii)
    parts = []
    if id is not None:
        parts.append(f"id: {id}\n")
    if event is not None:
        parts.append(f"event: {event}\n")
    for line in text.split("\n"):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode("utf-8")


HOLE = "\x00hermes-hole\x00"
"""A field value `FrameTemplate` fills in per frame."""


class FrameTemplate:
    """`encode_frame(payload, event=…)` with the `HOLE` values filled in per frame.

        delta = FrameTemplate({"type": "t", "delta": HOLE, "sequence_number": HOLE}, event="t")
        delta.frame("Hel", 7) == encode_frame({"type": "t", "delta": "Hel", "sequence_number": 7}, event="t")

    The holes are filled in the payload's key order; a str is JSON-encoded as
    `encode_frame` does it (with the same `ensure_ascii`), an int written as a number.
    """

    __slots__ = ("_encode", "_parts")

    def __init__(self, payload: dict[str, Any], *, event: str | None = None, ensure_ascii: bool = True) -> None:
        marker = encode_basestring_ascii(HOLE).encode()
        self._parts = encode_frame(payload, event=event, ensure_ascii=ensure_ascii).split(marker)
        self._encode = encode_basestring_ascii if ensure_ascii else encode_basestring

    def frame(self, *values: str | int) -> bytes:
        """The frame with `values` in the holes (ValueError unless one per hole)."""
        parts = self._parts
        out = [parts[0]]
        for value, part in zip(values, parts[1:], strict=True):
            out.append(self._encode(value).encode() if isinstance(value, str) else b"%d" % value)
            out.append(part)
        return b"".join(out)


class _Watch:
    """Polls a request's transport; fires callbacks once when the client is gone."""

    def __init__(self, request: web.BaseRequest, poll_interval: float) -> None:
        self._request = request
        self._poll = poll_interval
        self._callbacks: list[Callable[[], object]] = []
        self._gone = asyncio.Event()

    @property
    def gone(self) -> bool:
        return self._gone.is_set()

    def add(self, callback: Callable[[], object]) -> None:
        if self._gone.is_set():
            callback()
        else:
            self._callbacks.append(callback)

    def mark_gone(self) -> None:
        if self._gone.is_set():
            return
        self._gone.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a faulty callback must not stop the others
                log.exception("on_disconnect callback failed")

    def check(self) -> bool:
        if not self._gone.is_set() and client_gone(self._request):
            self.mark_gone()
        return self._gone.is_set()

    async def wait(self) -> None:
        await self._gone.wait()


class DisconnectWatcher:
    """Client-disconnect detection for non-streaming handlers.

        async with DisconnectWatcher(request) as watcher:
            watcher.on_disconnect(task.cancel)
            result = await task

    No task of its own: one timer checks the transport every `poll_interval` seconds and
    re-arms itself, so a request that ends before the first check costs one timer.
    """

    def __init__(self, request: web.BaseRequest, *, poll_interval: float = DEFAULT_POLL_INTERVAL) -> None:
        self._watch = _Watch(request, poll_interval)
        self._timer: asyncio.TimerHandle | None = None

    @property
    def disconnected(self) -> bool:
        return self._watch.gone

    def on_disconnect(self, callback: Callable[[], object]) -> None:
        self._watch.add(callback)

    def _check(self) -> None:
        if self._timer is None:
            return
        if self._watch.check():
            self._timer = None
        else:
            self._timer = asyncio.get_running_loop().call_later(self._watch._poll, self._check)

    async def __aenter__(self) -> Self:
        if not self._watch.check():
            self._timer = asyncio.get_running_loop().call_later(self._watch._poll, self._check)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class SSEStream:
    """See the module docstring for the contract."""

    def __init__(
        self,
        request: web.BaseRequest,
        *,
        headers: Mapping[str, str] | None = None,
        keepalive: float | None | _Default = DEFAULT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        ensure_ascii: bool = True,
        record: bool = False,
    ) -> None:
        self.request = request
        self.response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **(headers or {})})
        self.keepalive = _default_keepalive(request) if isinstance(keepalive, _Default) else keepalive
        self.ensure_ascii = ensure_ascii
        self._watch = _Watch(request, poll_interval)
        self._last_write = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._tracked = False
        self.recorded: list[bytes] | None = [] if record else None

    # ---- lifecycle ------------------------------------------------------------------

    @property
    def prepared(self) -> bool:
        return self.response.prepared

    @property
    def disconnected(self) -> bool:
        return self._watch.gone

    async def prepare(self, headers: Mapping[str, str] | None = None) -> SSEStream:
        """Send the head (with `headers` added, when given) and start the keepalive/disconnect
        task. Idempotent."""
        if self.response.prepared:
            return self
        if headers:
            self.response.headers.update(headers)
        try:
            await self.response.prepare(self.request)
        except (ConnectionError, RuntimeError) as exc:
            self._watch.mark_gone()
            raise ClientDisconnected(str(exc)) from exc
        self._last_write = time.monotonic()
        self._task = asyncio.create_task(self._background(), name="sse-keepalive")
        live = live_work(self.request)
        if live is not None:  # shutdown waits for this stream's close()
            live.stream_opened()
            self._tracked = True
        return self

    def on_disconnect(self, callback: Callable[[], object]) -> None:
        """Run `callback()` once when the client goes away (immediately if it already has)."""
        self._watch.add(callback)

    async def wait_disconnected(self) -> None:
        await self._watch.wait()

    async def close(self, *, comment: str | None = None) -> None:
        """Stop the background task and finish the response (errors from a gone client are ignored)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._finish(comment)
        finally:
            live = live_work(self.request)
            if self._tracked and live is not None:
                self._tracked = False
                live.stream_closed()

    async def _finish(self, comment: str | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if not self.response.prepared or self._watch.gone:
            return
        with contextlib.suppress(ClientDisconnected):
            if comment is not None:
                await self._write(f": {comment}\n\n".encode())
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.response.write_eof()

    async def __aenter__(self) -> Self:
        await self.prepare()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ---- writing --------------------------------------------------------------------

    async def send(self, data: Any, *, event: str | None = None, id: int | str | None = None) -> None:
        """Write one frame; `data` is JSON-encoded unless it is a str."""
        await self._write(encode_frame(data, event=event, id=id, ensure_ascii=self.ensure_ascii), record=True)

    async def send_data(self, text: str) -> None:
        """Write ``data: <text>`` as it is (e.g. ``[DONE]``)."""
        await self._write(f"data: {text}\n\n".encode(), record=True)

    async def comment(self, text: str) -> None:
        await self._write(f": {text}\n\n".encode())

    async def send_raw(self, frame: bytes) -> None:
        await self._write(frame, record=True)

    async def _write(self, frame: bytes, *, record: bool = False) -> None:
        if not self.response.prepared:
            await self.prepare()
        if self._watch.gone:
            raise ClientDisconnected("client disconnected")
        try:
            # One call hands the whole frame to the transport before it may wait (for
            # the client to drain), so frames never interleave: no lock is needed.
            await self.response.write(frame)
        except (ConnectionError, RuntimeError) as exc:
            # aiohttp raises ClientConnectionResetError (a ConnectionResetError) on a
            # closing transport, RuntimeError after write_eof.
            self._watch.mark_gone()
            raise ClientDisconnected(str(exc)) from exc
        self._last_write = time.monotonic()
        if record and self.recorded is not None:
            self.recorded.append(frame)

    async def _background(self) -> None:
        poll = self._watch._poll
        while not self._watch.check():
            delay = poll
            if self.keepalive:
                due = self._last_write + self.keepalive - time.monotonic()
                if due <= 0:
                    with contextlib.suppress(ClientDisconnected):
                        await self._write(KEEPALIVE_FRAME)
                    continue
                delay = min(poll, due)
            await asyncio.sleep(delay)
