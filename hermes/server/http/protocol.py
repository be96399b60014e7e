"""The HTTP connection layer under the app: protocol errors, slow clients, the connection cap.

aiohttp parses requests in `web_protocol.RequestHandler`, below every middleware: a
request its parser rejects (bad Content-Length, Content-Length with Transfer-Encoding, a
header over 8190 bytes, NUL in a header, an unknown method) is answered by
`RequestHandler.handle_error`, in plain text. `HermesRequestHandler` overrides that hook
so those answers are the OpenAI error envelope too, and adds per-connection limits:

- first byte: a new connection that sends nothing for `first_byte_timeout` seconds is
  closed (a half-open connection costs a socket for seconds, not for `header_timeout`);
- headers: a request's head must be complete within `header_timeout` seconds of its
  first byte (of the connection's start, for the first request), else the connection is
  closed;
- body: once the head is parsed, the body must keep flowing: `body_timeout` seconds
  without a byte while the body is incomplete close the connection;
- connections: beyond `max_connections` open connections, a new one gets a canned 503
  and is closed at once (no parser, no task: refused cheaply);
- connections per client: beyond `max_per_client` open connections from one client
  address (an IPv6 client: its /64; IPv4-mapped addresses count as IPv4), a new one from
  it gets a canned 429 and is closed at once, so one client cannot hold every connection.
  Behind a reverse proxy every client has the proxy's address: set the cap to 0 there.

    runner = HermesAppRunner(app, limits=ConnectionLimits.from_settings(settings), ...)

Invariant: a timer is armed only while the connection waits on the client (head or
body incomplete); a request being handled or an idle keep-alive connection is governed
by the handler and aiohttp's keep-alive timeout.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections import Counter
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from hermes.config import Settings

log = logging.getLogger(__name__)

SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float = 30.0
    """Seconds from a request's first byte (or the connection's start) to its complete head."""
    body_timeout: float = 30.0
    """Seconds a request body may stall between two reads."""
    max_connections: int = 4096
    """Open connections served at once (0 = unlimited)."""
    max_per_client: int = 256
    """Open connections from one client address (0 = unlimited)."""
    first_byte_timeout: float = 10.0
    """Seconds a new connection may send nothing (0: only `header_timeout` applies)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            settings.server_header_timeout,
            settings.server_body_timeout,
            settings.server_max_connections,
            settings.server_max_connections_per_client,
            settings.server_first_byte_timeout,
        )


def error_body(status: int, message: str, code: str) -> bytes:
    """The OpenAI error envelope for a request that never reached the app."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return json.dumps(body).encode()


def _refusal(status: int, message: str, code: str) -> bytes:
    body = error_body(status, message, code)
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


REFUSAL = _refusal(503, "Too many open connections; retry later.", "too_many_connections")
"""The whole answer to a connection over the cap, built once."""
CLIENT_REFUSAL = _refusal(
    429, "Too many open connections from this address; close some and retry.", "too_many_client_connections"
)
"""The whole answer to a connection over the per-client cap, built once."""


def client_key(peer: object) -> str | None:
    """The address a connection counts against: the IP (an IPv6 one: its /64); None when
    the peer is not an IP address (then no per-client cap applies)."""
    if not isinstance(peer, tuple) or not peer:
        return None
    try:
        address = ipaddress.ip_address(str(peer[0]).split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _printable(text: str, limit: int = 200) -> str:
    cleaned = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    return cleaned[:limit]


class HermesRequestHandler(RequestHandler):
    """aiohttp's per-connection protocol with JSON protocol errors and the limits above."""

    def __init__(self, manager: HermesServer, *, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._limits = limits
        self._refused = False
        self._client: str | None = None
        """The address this connection counts against (`HermesServer.per_client`), once admitted."""
        self._silent = True
        """Nothing received yet (the first-byte deadline is armed)."""
        self._opened_at = 0.0
        self._deadline: asyncio.TimerHandle | None = None
        self._body: StreamReader | None = None
        """The body of the newest parsed request, while it may still be incomplete."""

    # ---- connection cap ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        manager = self._manager
        cap = self._limits.max_connections
        if isinstance(manager, HermesServer):
            if cap > 0 and manager.open_connections >= cap:
                self._refuse(manager, transport, REFUSAL)
                return
            client = client_key(transport.get_extra_info("peername"))
            per_client = self._limits.max_per_client
            if client is not None and per_client > 0 and manager.per_client[client] >= per_client:
                self._refuse(manager, transport, CLIENT_REFUSAL)
                return
            if client is not None:
                manager.per_client[client] += 1
                self._client = client
        super().connection_made(transport)
        self._opened_at = self._loop.time()
        limits = self._limits
        waits = [t for t in (limits.first_byte_timeout, limits.header_timeout) if t > 0]
        self._arm(min(waits) if waits else 0)

    def _refuse(self, manager: HermesServer, transport: asyncio.BaseTransport, answer: bytes) -> None:
        self._refused = True
        manager.refused += 1
        assert isinstance(transport, asyncio.Transport)
        transport.write(answer)
        transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        self._body = None
        if self._client is not None and isinstance(self._manager, HermesServer):
            self._manager.release(self._client)
            self._client = None
        if self._refused:
            return
        super().connection_lost(exc)

    # ---- slow clients --------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._silent and data:
            self._silent = False  # the first head gets what is left of header_timeout
            left = self._limits.header_timeout - (self._loop.time() - self._opened_at)
            self._arm(max(left, 0.001) if self._limits.header_timeout > 0 else 0)
        before = self._request_count
        super().data_received(data)
        if self._force_close or self._close or self.transport is None or self.transport.is_closing():
            self._disarm()
            return
        if self._request_count != before and self._messages:
            _, payload = self._messages[-1]
            self._body = payload if isinstance(payload, StreamReader) else None
            self._disarm()
        if self._body is not None:
            if self._body.is_eof():
                self._body = None
                self._disarm()
            else:
                self._arm(self._limits.body_timeout)  # re-armed by every read
        elif self._deadline is None and self._request_count == before:
            self._arm(self._limits.header_timeout)  # the first bytes of a new head

    def _arm(self, seconds: float) -> None:
        self._disarm()
        if seconds > 0:
            self._deadline = self._loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        waiting_body = self._body is not None and not self._body.is_eof()
        if self._request_in_progress and not waiting_body:
            return  # the app is handling a complete request
        what = "body" if waiting_body else "nothing sent" if self._silent else "headers"
        log.info("closing a slow connection from %s (%s)", self._peer(), what)
        self.force_close()
        if self.transport is not None:
            self.transport.close()

    def _peer(self) -> str:
        peer = self.transport.get_extra_info("peername") if self.transport is not None else None
        return str(peer[0]) if isinstance(peer, tuple) and peer else "?"

    # ---- protocol errors -----------------------------------------------------------

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """The parser's (or the low-level handler's) error as the OpenAI envelope; closes the connection."""
        if request.writer.output_size > 0:
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        if status >= 500:
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
            text, code = "Internal server error", "internal_error"
        else:
            log.info("rejected a malformed request from %s: %s", self._peer(), _printable(message or str(exc)))
            reason = _printable(message or HTTPStatus(status).phrase)
            text, code = f"Malformed HTTP request: {reason}", "invalid_http_request"
        response = web.Response(
            status=status,
            body=error_body(status, text, code),
            content_type="application/json",
            headers=SECURITY_HEADERS,
        )
        response.force_close()
        return response


class HermesServer(web.Server):
    """aiohttp's low-level server, building `HermesRequestHandler`s."""

    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.refused = 0
        self.per_client: Counter[str] = Counter()
        """Open (admitted) connections per client address (`client_key`)."""

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    def release(self, client: str) -> None:
        """One connection of `client` closed (its entry goes at zero: the map stays small)."""
        self.per_client[client] -= 1
        if self.per_client[client] <= 0:
            del self.per_client[client]

    def __call__(self) -> HermesRequestHandler:
        return HermesRequestHandler(self, limits=self.limits, loop=self._loop, **self._kwargs)


class HermesAppRunner(web.AppRunner):
    """`web.AppRunner` whose server is a `HermesServer` (same start-up and cleanup)."""

    def __init__(self, app: web.Application, *, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._limits = limits

    async def _make_server(self) -> web.Server:
        base = await super()._make_server()  # runs the app's start-up, freezes it
        return HermesServer(
            base.request_handler,
            request_factory=base.request_factory,
            handler_cancellation=base.handler_cancellation,
            loop=base._loop,
            limits=self._limits,
            **base._kwargs,
        )
