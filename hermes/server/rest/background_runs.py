"""Background runs over HTTP: admission and the SSE follower.

Shared by `POST /v1/runs` (hermes/server/rest/runs.py) and the session chat
endpoints (hermes/server/rest/sessions.py). Each of those owns a `RunTranslator`
(`hermes.runs.driver`), its wire format: a `match` over the engine's event union that
appends frames to the run's log. This module hands a turn to the run service's admission
(`start_run` → `hermes.runs.admission.Admission`), and follows its stored events over
SSE (`stream_run`) on whichever instance the client asked: `Storage.run_events.subscribe` serves the
history from the store and the live events as they are appended (LISTEN/NOTIFY on
PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

from hermes.agent.types import (
    TurnRequest,
    UserContent,
)
from hermes.errors import StoreError
from hermes.runs.admission import Admission
from hermes.runs.driver import RunTranslator
from hermes.runs.registry import Run, RunKind, RunRegistry
from hermes.server.http.errors import RequestValidationError
from hermes.server.http.sse import ClientDisconnected, SSEStream, encode_frame
from hermes.server.http.state import AGENT, LIMITER, METRICS, RUNS, SETTINGS, STORAGE, TURN_LOG
from hermes.store.records import StoredRunEvent

logger = logging.getLogger(__name__)

MAX_SEQ_DIGITS = 18
FIRST_EVENT_WAIT_SECONDS = 5.0
"""How long a stream of a run owned elsewhere waits for the run's first event to learn its format."""
MAX_MODEL_LENGTH = 256


# ---- app wiring --------------------------------------------------------------------------


def attach_run_registry(app: web.Application) -> None:
    """Create the registry; give it the storage at start-up, settle runs at shutdown.

    At start-up the registry also starts answering control messages (stop, approval)
    that other instances relay for the runs it owns.
    """
    registry = RunRegistry(None, max_concurrent=0)  # the app-wide TurnLimiter caps turns
    app[RUNS] = registry

    async def bind_storage(app: web.Application) -> None:
        storage = app[STORAGE]
        registry.storage = storage
        await storage.control.serve(registry.handle_control)

    async def settle_runs(app: web.Application) -> None:
        await registry.shutdown(timeout=2.0)

    app.on_startup.append(bind_storage)
    app.on_shutdown.append(settle_runs)


def registry_of(request: web.Request) -> RunRegistry:
    return request.config_dict[RUNS]


# ---- starting and following runs ---------------------------------------------------------


def admission_of(request: web.Request) -> Admission:
    """This instance's admission, over the app's registry, limiter, agent and metrics."""
    config = request.config_dict
    return Admission(registry_of(request), config[LIMITER], config[AGENT], config[METRICS],
                     yolo=config[SETTINGS].yolo, turn_log=config[TURN_LOG])  # fmt: skip


async def start_run(
    request: web.Request,
    *,
    kind: RunKind,
    turn: TurnRequest,
    translator: RunTranslator,
    session_id: str,
) -> Run:
    """Admit and start one background turn (`hermes.runs.admission.Admission.start`); its
    refusals (`RunRefused`) become 503, 409 `run_already_active` or 429 in the middleware."""
    return await admission_of(request).start(kind=kind, turn=turn, translator=translator, session_id=session_id)


async def active_run_id(request: web.Request, session_id: str) -> str | None:
    """The session's unsettled run here, else (shared runs) on any instance."""
    return await admission_of(request).active_run_id(session_id)


def check_user_content(content: UserContent, param: str) -> UserContent:
    """A turn's user content must show something and carry no NUL characters."""
    texts = [content] if isinstance(content, str) else [str(p.get("text", "")) for p in content]
    if any("\x00" in text for text in texts):
        raise RequestValidationError("Text must not contain NUL characters", code="invalid_content", param=param)
    return content


def parse_after(request: web.Request) -> int:
    """The last seq the client has: `Last-Event-ID` header, else `?after=`; 0 when absent."""
    raw = request.headers.get("Last-Event-ID")
    param = "Last-Event-ID"
    if raw is None or not raw.strip():
        raw, param = request.query.get("after"), "after"
    if raw is None or not raw.strip():
        return 0
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > MAX_SEQ_DIGITS:
        raise RequestValidationError(
            f"{param} must be a non-negative integer event id", code="invalid_last_event_id", param=param
        )
    return int(text)


@dataclass(frozen=True, slots=True)
class StreamTarget:
    """What a run-events stream needs to know about its run, on any instance."""

    run_id: str
    kind: RunKind
    session_id: str | None

    @classmethod
    def of(cls, run: Run) -> StreamTarget:
        return cls(run.run_id, run.kind, run.session_id)


def kind_of_stream(first: StoredRunEvent | None) -> RunKind:
    """A run's wire format, told by its first event: a session chat run always opens with
    `run.started` carrying the `user_message` (`SessionChatTranslator.on_start`)."""
    if first is not None and first.name == "run.started" and "user_message" in first.data:
        return "session_chat"
    return "run"


async def remote_target(request: web.Request, run_id: str, session_id: str | None) -> StreamTarget:
    """The stream target of a run this instance does not run: its format from the stored
    first event (waiting a little for it when the owner has not written it yet)."""
    events = request.config_dict[STORAGE].run_events
    stored = await events.read_after(run_id, 0, limit=1)
    first = stored[0] if stored else None
    if first is None:
        async with events.subscribe(run_id, 0) as subscription:
            first = await subscription.next(FIRST_EVENT_WAIT_SECONDS)
    return StreamTarget(run_id, kind_of_stream(first), session_id)


def frame(target: StreamTarget, event: StoredRunEvent) -> bytes:
    """One SSE frame in the run's format.

    `run` (POST /v1/runs): unnamed, `{"event", "run_id", "timestamp", …}`, ASCII JSON.
    `session_chat`: named `event: <name>`, payload stamped with session_id, run_id, seq, ts.
    """
    if target.kind == "run":
        payload = {"event": event.name, "run_id": target.run_id, "timestamp": event.ts, **event.data}
        return encode_frame(payload, id=event.seq)
    payload = {**event.data, "session_id": target.session_id, "run_id": target.run_id, "seq": event.seq,
               "ts": event.ts}
    return encode_frame(payload, event=event.name, id=event.seq, ensure_ascii=False)


async def stream_run(
    request: web.Request, target: StreamTarget, *, after: int = 0, headers: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Follow a run's stored events over SSE from `after`. A disconnect ends this stream,
    never the run."""
    storage = request.config_dict[STORAGE]
    stream = SSEStream(
        request,
        headers={"X-Hermes-Run-Id": target.run_id, **(headers or {})},
        ensure_ascii=target.kind == "run",
    )
    await stream.prepare()

    async def pump() -> None:
        try:
            async with storage.run_events.subscribe(target.run_id, after) as subscription:
                async for event in subscription:
                    await stream.send_raw(frame(target, event))
        except StoreError as exc:  # the head is sent: end the stream, the client resumes
            logger.warning("run %s: reading its events failed: %s", target.run_id, exc)

    pumping = asyncio.create_task(pump())
    gone = asyncio.create_task(stream.wait_disconnected())
    try:
        await asyncio.wait({pumping, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, gone):
            task.cancel()
        for task in (pumping, gone):
            with contextlib.suppress(asyncio.CancelledError, ClientDisconnected):
                await task
    await stream.close(comment="stream closed" if target.kind == "run" and not stream.disconnected else None)
    return stream.response
