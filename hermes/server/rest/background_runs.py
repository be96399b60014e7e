"""Background runs over HTTP: admission and the SSE follower.

Shared by `POST /v1/runs` (hermes/server/rest/runs.py) and the session chat
endpoints (hermes/server/rest/sessions.py). A run journals the engine's own events
(`hermes.runs.run_log`); this module hands a turn to the run service's admission
(`start_run` → `hermes.runs.admission.Admission`), and follows its log over SSE
(`stream_run`) on whichever instance the client asked, translated into the stream's
wire format as it is read (`hermes.server.rest.run_frames`):
`Storage.run_events.subscribe` serves the history from the store and the live entries as
they are appended (LISTEN/NOTIFY on PostgreSQL).
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
from hermes.runs.registry import Run, RunKind, RunRegistry
from hermes.runs.run_log import RUN_OPENED, is_legacy_log
from hermes.server.http.errors import RequestValidationError
from hermes.server.http.route import Param
from hermes.server.http.sse import ClientDisconnected, SSEStream
from hermes.server.http.state import AGENT, LIMITER, METRICS, RUNS, SETTINGS, STORAGE, TURN_LOG
from hermes.server.rest.run_frames import ENGINE_FORM, LogReader, form_of
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
    registry = RunRegistry(None)  # the app-wide TurnLimiter caps turns
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
    session_id: str,
) -> Run:
    """Admit and start one background turn (`hermes.runs.admission.Admission.start`); its
    refusals (`RunRefused`) become 503, 409 `run_already_active` or 429 in the middleware."""
    return await admission_of(request).start(kind=kind, turn=turn, session_id=session_id)


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
    """A run's kind, told by its log's first entry: `run.opened` names it; a log written
    before (`hermes.runs.run_log`) is a session chat run's when it opens with `run.started`
    carrying the `user_message`."""
    if first is None:
        return "run"
    if first.name == RUN_OPENED:
        return "session_chat" if first.data.get("kind") == "session_chat" else "run"
    if is_legacy_log(first.name) and first.name == "run.started" and "user_message" in first.data:
        return "session_chat"
    return "run"


EVENTS_FORM_PARAM = Param("events", "query", {"type": "string", "enum": [ENGINE_FORM]})
"""`?events=engine`: the stream carries the engine's own events (`event_to_dict`), not the
endpoint's vocabulary."""


def requested_form(request: web.Request) -> str | None:
    """`?events=engine`: the stream carries the engine's own events (the remote client)."""
    value = request.query.get("events")
    if value is None or value == "":
        return None
    if value != ENGINE_FORM:
        raise RequestValidationError(
            f"'events' must be {ENGINE_FORM!r} (or left out)", code="invalid_events_form", param="events"
        )
    return value


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


async def stream_run(
    request: web.Request, target: StreamTarget, *, after: int = 0, headers: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Follow a run's log over SSE, in the stream's form (`?events=`, else the run's kind),
    sending the frames after `after`. A disconnect ends this stream, never the run."""
    storage = request.config_dict[STORAGE]
    form = form_of(target.kind, requested_form(request))
    reader = LogReader(target.run_id, target.session_id, form, after=after)
    stream = SSEStream(
        request,
        headers={"X-Hermes-Run-Id": target.run_id, **(headers or {})},
        ensure_ascii=form == "run",
    )
    await stream.prepare()

    async def pump() -> None:
        try:
            async with storage.run_events.subscribe(target.run_id, 0) as subscription:
                async for event in subscription:
                    frames = reader.read(event)
                    if frames:
                        await stream.send_raw(frames)
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
    await stream.close(comment="stream closed" if form == "run" and not stream.disconnected else None)
    return stream.response
