"""The HTTP client of a remote `hermes serve`: JSON requests and SSE streams, with timeouts.

Every request carries the bearer key (when one is given) and runs under a timeout: JSON
requests under `Timeouts.request` in all, streams under `Timeouts.connect` to connect and
`Timeouts.read` between two reads (the server sends a keepalive comment every
`server_keepalive_seconds`, 10 s by default, so a silent stream means a dead connection).

Errors are mapped once, here: a refused, reset or timed-out connection is
`ServerUnreachable`; 401 is `RemoteAuthError`; a 404 for a session is `SessionNotFound`;
a 409 `files_changed` is `FilesChangedOutside` (with the server's `paths`) and a 409
`nothing_to_undo` is `NothingToUndo`, as locally; any other error answer is
`RemoteError` with the server's message, status and code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp

from hermes import api_paths, error_codes
from hermes.agent.events import AgentEvent, TurnCompleted, TurnStarted, event_from_dict
from hermes.agent.types import TurnResult, TurnStatus
from hermes.errors import (
    FilesChangedOutside,
    HermesError,
    NothingToUndo,
    RemoteAuthError,
    RemoteError,
    RestoreRefused,
    ServerUnreachable,
    SessionNotFound,
    UsageError,
)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds; see the module docstring."""

    connect: float = 5.0
    request: float = 30.0
    read: float = 30.0


@dataclass(frozen=True, slots=True)
class SseFrame:
    """One server-sent event: its `id:` (the run's event seq), `event:` name and JSON data."""

    id: int | None
    event: str | None
    data: dict[str, Any]


ENGINE_EVENTS = {"events": "engine"}
"""The query that asks a run stream for the engine's own events (`event_to_dict` form)."""


class TurnEvents:
    """One remote turn's stream, read in the engine's own form (`?events=engine`).

    Each frame is one event (`event_from_dict`); the stream of a run ends with exactly one
    `TurnCompleted` (the server makes one for a run that ended without a result). A frame
    that is not an event of this engine (a newer server's) is skipped.
    """

    def __init__(self, session_id: str, model: str) -> None:
        self.session_id = session_id
        self.model = model
        self.run_id: str | None = None
        """Set by the caller from the stream's `X-Hermes-Run-Id` (frames carry no run id)."""
        self.result: TurnResult | None = None
        self.finished = False
        """The turn's `TurnCompleted` was read: the stream has nothing more."""

    def read(self, frame: SseFrame) -> AgentEvent | None:
        try:
            event = event_from_dict(frame.data)
        except ValueError:
            return None
        if isinstance(event, TurnStarted):
            self.model = event.model or self.model
        elif isinstance(event, TurnCompleted):
            self.finished = True
            self.result = event.result
        return event

    def failed(self, message: str, code: str = error_codes.AGENT_ERROR, status: TurnStatus = "failed") -> TurnResult:
        """The result of a turn whose stream ended without its `TurnCompleted`."""
        return TurnResult(
            session_id=self.session_id, status=status, final_text="", model=self.model, error=message, error_code=code
        )


CONNECTION_ERRORS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError, OSError)
"""What a lost or unreachable server raises inside aiohttp (ServerDisconnectedError,
ClientConnectorError, ClientOSError, a read timeout, a payload cut short)."""


def check_url(url: str) -> str:
    """`url` without a trailing slash; UsageError unless it is an http(s) URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--server needs an http:// or https:// URL, not {url!r}")
    return url.strip().rstrip("/")


class RemoteClient:
    """One server, one key, one aiohttp session; `aclose()` when done (or `async with`)."""

    def __init__(self, base_url: str, key: str | None = None, *, timeouts: Timeouts = Timeouts()) -> None:
        self.base_url = check_url(base_url)
        self.key = key
        self.timeouts = timeouts
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> RemoteClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
            self._session = aiohttp.ClientSession(headers=headers)
        return self._session

    # ---- JSON ----------------------------------------------------------------------------

    async def request(
        self, method: str, path: str, *, body: Mapping[str, Any] | None = None, params: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One JSON request; its JSON answer (errors raised as described above)."""
        timeout = aiohttp.ClientTimeout(total=self.timeouts.request, connect=self.timeouts.connect)
        try:
            async with self._http().request(
                method, self.base_url + path, json=body, params=params, timeout=timeout
            ) as response:
                if response.status >= 400:
                    raise await self._error(response, path)
                data = await response.json(content_type=None)
        except CONNECTION_ERRORS as exc:
            raise self.unreachable(exc) from None
        if not isinstance(data, dict):
            raise RemoteError(f"{self.base_url}{path} answered something that is not a JSON object")
        return data

    # ---- SSE -----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> AsyncIterator[tuple[Mapping[str, str], AsyncIterator[SseFrame]]]:
        """An SSE stream: (response headers, frames). Connection errors raise from either the
        opening (ServerUnreachable) or the iteration (the aiohttp error, for the caller to
        resume from its last event id)."""
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.timeouts.connect, sock_connect=self.timeouts.connect, sock_read=self.timeouts.read
        )
        try:
            response = await self._http().request(
                method, self.base_url + path, json=body, headers=dict(headers or {}), params=params, timeout=timeout
            )
        except CONNECTION_ERRORS as exc:
            raise self.unreachable(exc) from None
        try:
            if response.status >= 400:
                raise await self._error(response, path)
            yield response.headers, read_frames(response.content)
        finally:
            response.release()

    # ---- errors --------------------------------------------------------------------------

    def unreachable(self, exc: BaseException) -> ServerUnreachable:
        reason = str(exc) or type(exc).__name__
        connected = not isinstance(exc, aiohttp.ClientConnectorError)
        return ServerUnreachable(f"cannot reach the hermes server at {self.base_url}: {reason}", connected=connected)

    async def _error(self, response: aiohttp.ClientResponse, path: str) -> HermesError:
        message, code, paths = f"HTTP {response.status}", None, None
        with contextlib.suppress(ValueError, aiohttp.ClientError, asyncio.TimeoutError):
            data = await response.json(content_type=None)
            error = data.get("error") if isinstance(data, dict) else None
            if isinstance(error, dict):
                message = str(error.get("message") or message)
                code = error.get("code") if isinstance(error.get("code"), str) else None
                paths = error.get("paths")
        if response.status == 409 and code == "files_changed" and isinstance(paths, list):
            return FilesChangedOutside([str(p) for p in paths])
        if response.status == 409 and code == "restore_refused" and isinstance(paths, list):
            return RestoreRefused([(str(p), "refused by the server") for p in paths], message)
        if response.status == 409 and code == "nothing_to_undo":
            return NothingToUndo(message)
        if response.status == 401:
            return RemoteAuthError(
                f"the hermes server at {self.base_url} refused the key (401):"
                " pass --key-file PATH or set HERMES_SERVER_KEY",
                status=401,
                remote_code=code,
            )
        if response.status == 404 and code == "session_not_found":
            prefix = api_paths.SESSIONS + "/"
            session_id = unquote(path.removeprefix(prefix).split("/")[0]) if path.startswith(prefix) else "?"
            return SessionNotFound(session_id)
        return RemoteError(f"{message} ({response.status}{', ' + code if code else ''})", status=response.status,
                           remote_code=code)  # fmt: skip


async def read_frames(content: aiohttp.StreamReader) -> AsyncIterator[SseFrame]:
    """The frames of an SSE body (comments and keepalives skipped; data parsed as JSON)."""
    event_id: int | None = None
    name: str | None = None
    data: list[str] = []
    async for raw in content:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                joined = "\n".join(data)
                with contextlib.suppress(ValueError):
                    parsed = json.loads(joined)
                    if isinstance(parsed, dict):
                        yield SseFrame(event_id, name, parsed)
            event_id, name, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id" and value.isdigit():
            event_id = int(value)
