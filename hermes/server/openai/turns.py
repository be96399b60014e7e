"""The request pipeline Chat Completions and Responses share.

    preamble = await read_preamble(request)              # session key, JSON body, Idempotency-Key
    ... the endpoint parses preamble.body and builds its TurnRequest ...
    if streaming:
        async with streamed_turn(request, turn_request, headers) as (stream, turn):
            ... the endpoint's translator writes `turn.events()` to `stream` ...
    else:
        return await complete(request, preamble, turn_request, finish, scope=..., fingerprint=...)

A utility request (`hermes.runs.utility`) is a non-streamed completion whose turn runs on
`utility_engine` (one model call, no tools, no session) instead of the agent.

`complete` runs the turn to its end (stopped if the client leaves, unless the answer is
computed for an Idempotency-Key) and answers with what `finish(result)` builds; one
Idempotency-Key + fingerprint computes the answer once, on whichever instance, and
replays it for 5 minutes (`hermes.runs.idempotency`: receipts in the storage).
Every turn counts against the app's `TurnLimiter` (429 beyond it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hermes.agent.output_format import OutputFormat
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import TurnRequest, TurnResult
from hermes.runs.idempotency import AnswerPending, Transient
from hermes.runs.turn import TurnEngine
from hermes.runs.utility import UtilityEngine
from hermes.server.http.errors import Conflict, json_response
from hermes.server.http.lifecycle import LIVE_WORK
from hermes.server.http.request import read_json_object, session_key_header, validate_key
from hermes.server.http.sse import DisconnectWatcher, SSEStream
from hermes.server.http.state import AGENT, IDEMPOTENCY, LIMITER, METRICS, SETTINGS, STORAGE, TURN_LOG


@dataclass(frozen=True, slots=True)
class Preamble:
    """What every OpenAI-shaped request carries besides its own fields."""

    body: dict[str, Any]
    session_key: str | None
    """`X-Hermes-Session-Key`, validated (needs an API key)."""
    idempotency_key: str | None
    """`Idempotency-Key`, validated; checked even where it is then ignored (streams)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole JSON answer: what an Idempotency-Key's receipt stores and replays."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "body": self.body, "headers": self.headers}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        return cls(int(data["status"]), dict(data["body"]), {str(k): str(v) for k, v in data["headers"].items()})


async def read_preamble(request: web.Request) -> Preamble:
    session_key = session_key_header(request)
    body = await read_json_object(request)
    return Preamble(body, session_key, validate_key(request.headers.get("Idempotency-Key")))


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
    history: list[Any],
    client_prompt: str | None,
    output_format: OutputFormat | None = None,
) -> TurnRequest:
    """The TurnRequest of an OpenAI-shaped endpoint: persisted as `api_server`, nobody to ask."""
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
    )


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


def session_headers(session_id: str, session_key: str | None) -> dict[str, str]:
    headers = {"X-Hermes-Session-Id": session_id}
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key
    return headers


@contextlib.asynccontextmanager
async def streamed_turn(
    request: web.Request, turn_request: TurnRequest, headers: dict[str, str]
) -> AsyncIterator[tuple[SSEStream, TurnHandle]]:
    """An admitted turn and its prepared SSE stream; the client leaving stops the turn."""
    app = request.app
    with app[LIMITER].admit():
        app[METRICS].turn_started()
        stream = SSEStream(request, headers=headers)
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
        turn = (engine or app[AGENT]).start(turn_request)
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
    scope: str,
    fingerprint: Callable[[], str],
    engine: TurnEngine | None = None,
) -> web.Response:
    """The non-streamed completion: run the turn, answer `finish(result)`, idempotently.

    An answer computed for an Idempotency-Key is shared by every request with the same
    key and `fingerprint()` on any instance, so it runs to its end even when its first
    client leaves. A retry still waiting for another instance's answer after the wait
    bound gets 409 `idempotency_key_in_progress`.
    """
    key = preamble.idempotency_key
    if key is None:
        answer = await finish(await run_to_end(request, turn_request, watch=True, engine=engine))
        return json_response(answer.body, status=answer.status, headers=answer.headers)

    app = request.app

    async def compute() -> dict[str, Any] | Transient:
        answer = (await finish(await run_to_end(request, turn_request, watch=False, engine=engine))).to_json()
        # A turn the shutdown cut short is answered, not stored: a retry elsewhere runs it.
        return Transient(answer) if app[LIVE_WORK].closing else answer

    try:
        stored = await app[IDEMPOTENCY].once(app[STORAGE].receipts, f"openai.{scope}", key, fingerprint(), compute)
    except AnswerPending as exc:
        raise Conflict(
            "A request with this Idempotency-Key is still being answered; retry later",
            code="idempotency_key_in_progress",
            param="Idempotency-Key",
            headers={"Retry-After": "1"},
        ) from exc
    answer = Answer.from_json(stored)
    return json_response(answer.body, status=answer.status, headers=answer.headers)
