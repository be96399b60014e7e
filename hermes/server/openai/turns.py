"""The turn pipeline Chat Completions and Responses share.

    preamble = await read_preamble(request)              # session key, JSON body, Idempotency-Key
    ... the endpoint parses preamble.body ...

    async def run(watch: bool) -> Answer:               # places the session, runs the turn
        ... builds its TurnRequest ...
        if streaming:
            async with streamed_turn(request, turn_request, headers, record=...) as (stream, turn):
                ... the endpoint's translator writes `turn.events()` to `stream` ...
            return streamed_answer(stream, headers)
        return await finish(await run_to_end(request, turn_request, watch=watch))

    return await answered(request, preamble, run, endpoint=..., fingerprint=...)

(`complete` is that for a turn request already built: run it, answer `finish(result)`.)

A utility request (`hermes.runs.utility`) is a non-streamed completion whose turn runs on
`utility_engine` (one model call, no tools, no session) instead of the agent.

`answered` (`hermes.server.http.idempotent`) runs `run` (for a non-streamed turn: to its
end, stopped if the client leaves unless the answer is computed for an Idempotency-Key)
and replays an Idempotency-Key's answer for 5 minutes. The receipt is looked at before
`run` is called, so a replayed request places no session and forks nothing: everything a
turn writes happens inside `run`. A stream is an answer too: its frames are recorded and
a retry gets them again as one SSE response; a stream its client left, or that the
shutdown cut short, is not stored (a retry runs afresh).
Every turn counts against the app's `TurnLimiter` (429 beyond it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from hermes.agent.client_tools import ClientToolResult, ClientTools
from hermes.agent.context import is_summary_message
from hermes.agent.output_format import OutputFormat
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult
from hermes.errors import StoreError
from hermes.runs.turn import TurnEngine
from hermes.runs.utility import UtilityEngine
from hermes.server.http.idempotent import Answer, Preamble, answered
from hermes.server.http.lifecycle import LIVE_WORK
from hermes.server.http.sse import DisconnectWatcher, SSEStream
from hermes.server.http.state import AGENT, LIMITER, METRICS, SETTINGS, STORAGE, TURN_LOG

log = logging.getLogger(__name__)


def streamed_answer(stream: SSEStream, headers: dict[str, str]) -> Answer:
    """The answer a finished stream gave (its recorded frames, when it recorded them)."""
    frames = b"".join(stream.recorded).decode("utf-8") if stream.recorded is not None else None
    return Answer(200, {}, headers, stream=frames, whole=not stream.disconnected, sent=stream.response)


def layered_system_prompt(agent: Any, client_prompt: str | None, cwd: str | None = None) -> str | None:
    """The client's system prompt layered on top of hermes' own (None: hermes' own only)."""
    if not client_prompt or not client_prompt.strip():
        return None
    base = agent.new_session_prompt(cwd)
    return f"{base}\n\n{client_prompt}"


def api_turn(
    request: web.Request,
    *,
    input: Any,
    session_id: str,
    history: list[Any] | None,
    client_prompt: str | None,
    output_format: OutputFormat | None = None,
    client_tools: ClientTools | None = None,
    tool_results: tuple[ClientToolResult, ...] | None = None,
    fresh_if_taken: bool = False,
    conversation_mark: Callable[[TurnResult], str | None] | None = None,
) -> TurnRequest:
    """The TurnRequest of an OpenAI-shaped endpoint: persisted as `api_server`, nobody to ask
    (built whole: `dataclasses.replace` afterwards costs a field walk per request)."""
    app = request.app
    return TurnRequest(
        input=input,
        session_id=session_id,
        history=history,
        system_prompt=layered_system_prompt(app[AGENT], client_prompt),
        source="api_server",
        approve=None,
        yolo=app[SETTINGS].yolo,
        output_format=output_format,
        client_tools=client_tools,
        tool_results=tool_results,
        fresh_if_taken=fresh_if_taken,
        conversation_mark=conversation_mark,
    )


async def stored_history(request: web.Request, session_id: str) -> list[ChatMessage]:
    """The stored session's model-ready history, as `hermes chat -r` resumes it (the latest
    summary + the messages after it; the agent's per-process cache, `SessionHistories`);
    [] when the session is not stored, or the store fails (logged)."""
    try:
        if await request.app[STORAGE].sessions.find_session(session_id) is None:
            return []
        return await request.app[AGENT].session_history(session_id)
    except StoreError as exc:
        log.warning("session history unavailable for %s: %s", session_id, exc)
        return []


def compacted(stored: list[ChatMessage]) -> bool:
    """Whether a `stored_history` starts from a compaction's summary: a turn then goes on
    from it, not from the whole history a client resends (which would be summarised again)."""
    return bool(stored) and is_summary_message(stored[0])


def utility_engine(request: web.Request) -> UtilityEngine:
    """The engine of utility requests (`hermes.runs.utility`): the agent's provider and model."""
    agent = request.app[AGENT]
    return UtilityEngine(agent.provider, agent.model)


def utility_turn(
    input: Any, history: list[Any], client_prompt: str | None, output_format: OutputFormat | None = None
) -> TurnRequest:
    """A utility request's TurnRequest: the client's own prompt only, nothing persisted."""
    return TurnRequest(input=input, history=history, system_prompt=client_prompt or None, source="api_server",
                       persist=False, output_format=output_format)


@contextlib.asynccontextmanager
async def streamed_turn(
    request: web.Request, turn_request: TurnRequest, headers: dict[str, str], *, record: bool = False,
    prepare: bool = True,
) -> AsyncIterator[tuple[SSEStream, TurnHandle]]:
    """An admitted turn and its SSE stream (recording its frames with `record`), prepared
    unless `prepare` is false (the caller sends the head, once the turn decided a header);
    the client leaving stops the turn."""
    app = request.app
    with app[LIMITER].admit():
        app[METRICS].turn_started()
        stream = SSEStream(request, headers=headers, record=record)
        if prepare:
            await stream.prepare()
        turn = app[AGENT].start(turn_request)
        app[TURN_LOG].watch(turn)
        stream.on_disconnect(turn.stop)
        with app[LIVE_WORK].track_turn(turn):  # until the engine has wound down
            try:
                yield stream, turn
            finally:
                await turn.aclose()
                await stream.close()


async def run_to_end(
    request: web.Request, turn_request: TurnRequest, *, watch: bool, engine: TurnEngine | None = None
) -> TurnResult | None:
    """Run an admitted turn to its end (on `engine`, default the app's agent); with `watch`,
    the client leaving stops it."""
    app = request.app
    with app[LIMITER].admit():
        app[METRICS].turn_started()
        # Only the result is wanted: the turn runs inside `wait()`, in this request's task.
        turn = (engine or app[AGENT]).start(turn_request, inline=True)
        app[TURN_LOG].watch(turn)
        with app[LIVE_WORK].track_turn(turn):  # until the engine has wound down
            try:
                if watch:
                    async with DisconnectWatcher(request) as watcher:
                        watcher.on_disconnect(turn.stop)
                        return await turn.wait()
                return await turn.wait()
            finally:
                await turn.aclose()


async def complete(
    request: web.Request,
    preamble: Preamble,
    turn_request: TurnRequest,
    finish: Callable[[TurnResult | None], Awaitable[Answer]],
    *,
    endpoint: str,
    fingerprint: Callable[[], str],
    engine: TurnEngine | None = None,
) -> web.StreamResponse:
    """`answered` for a turn request already built: run it, answer `finish(result)`."""

    async def run(watch: bool) -> Answer:
        return await finish(await run_to_end(request, turn_request, watch=watch, engine=engine))

    return await answered(request, preamble, run, endpoint=endpoint, fingerprint=fingerprint)
