"""An endpoint's answer under an `Idempotency-Key`: the one HTTP binding of
`hermes.runs.idempotency`, used by chat completions, Responses and `POST /v1/runs`
(docs/api-decisions.md, "Idempotency").

    preamble = await read_preamble(request)      # session key, JSON body, Idempotency-Key
    ... the endpoint parses preamble.body ...

    async def run(watch: bool) -> Answer:        # does the work and builds its answer
        ...

    return await answered(request, preamble, run, endpoint="chat",
                          fingerprint=lambda: fingerprint(preamble.body, FIELDS, ...))

Without a key, `run(True)` is answered as it is. With one, the answer is computed once
per (endpoint, key, fingerprint) on whichever instance sharing the storage gets there
first, kept `ttl` seconds (default `ANSWER_RETENTION_SECONDS`) and replayed to every
request with the same key and fingerprint:

- the scope of the key is `receipt_scope(endpoint)` (one rule for every endpoint);
- the fingerprint is `hermes.runs.idempotency.fingerprint` over the endpoint's own
  fields plus the session headers the request sent;
- the same key with another fingerprint is computed afresh and its answer replaces the
  stored one, except where the endpoint refuses reuse (`refuse_reuse`, runs: a run never
  starts twice for one key): 409 ``idempotency_key_conflict``;
- a retry still waiting for another instance's answer past the wait bound gets 409
  ``idempotency_key_in_progress``;
- the receipt is looked at before `run` is called, so a replay does no work (places no
  session, starts no run, is never refused for capacity);
- an answer cut short (a stream whose client left, any answer while the server shuts
  down) is given but not stored: a retry computes afresh;
- `replayed` (optional) turns a stored answer into what a replay shows (runs: the run's
  current status, marked replayed); without it a replay is the stored answer as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hermes.runs.idempotency import AnswerPending, KeyReused, Transient, receipt_scope
from hermes.server.http.errors import Conflict, json_response
from hermes.server.http.lifecycle import LIVE_WORK
from hermes.server.http.request import read_json_object, validate_key
from hermes.server.http.request_session import session_key
from hermes.server.http.sse import ClientDisconnected, SSEStream
from hermes.server.http.state import IDEMPOTENCY, STORAGE

__all__ = ["Answer", "Preamble", "Run", "answered", "read_preamble"]


@dataclass(frozen=True, slots=True)
class Preamble:
    """What every idempotent request carries besides its own fields."""

    body: dict[str, Any]
    session_key: str | None
    """The session key header, validated (`request_session.session_key`)."""
    idempotency_key: str | None
    """`Idempotency-Key`, validated."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer, JSON or a recorded stream: what an Idempotency-Key's receipt stores
    and replays."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    stream: str | None = None
    """The SSE frames of a streamed answer (then `body` is unused)."""
    whole: bool = True
    """False for a stream cut short (its client left): given, never stored."""
    sent: web.StreamResponse | None = field(default=None, compare=False, repr=False)
    """The stream already written to this request's client (not stored)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "body": self.body, "headers": self.headers}
        if self.stream is not None:
            data["stream"] = self.stream
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        stream = data.get("stream")
        return cls(
            int(data["status"]), dict(data["body"]), {str(k): str(v) for k, v in data["headers"].items()},
            stream=stream if isinstance(stream, str) else None,
        )

    async def reply(self, request: web.Request) -> web.StreamResponse:
        """The answer for `request`: the stream already sent, a replayed stream, or JSON."""
        if self.sent is not None:
            return self.sent
        if self.stream is None:
            return json_response(self.body, status=self.status, headers=self.headers)
        replay = SSEStream(request, headers=self.headers, keepalive=None)
        try:
            with contextlib.suppress(ClientDisconnected):
                await replay.send_raw(self.stream.encode("utf-8"))
        finally:
            await replay.close()
        return replay.response


Run = Callable[[bool], Awaitable[Answer]]
"""Does the request's work and builds its answer; the flag says whether the client
leaving stops the work (true without an Idempotency-Key)."""


async def read_preamble(request: web.Request) -> Preamble:
    """The session key (checked first), the JSON body, then the Idempotency-Key."""
    key = session_key(request)
    body = await read_json_object(request)
    return Preamble(body, key, validate_key(request.headers.get("Idempotency-Key")))


async def answered(
    request: web.Request,
    preamble: Preamble,
    run: Run,
    *,
    endpoint: str,
    fingerprint: Callable[[], str],
    ttl: float | None = None,
    replayed: Callable[[Answer], Awaitable[Answer]] | None = None,
    refuse_reuse: bool = False,
) -> web.StreamResponse:
    """The answer of `run`, idempotently (see the module docstring).

    An answer computed for an Idempotency-Key is shared by every request with the same
    key and `fingerprint()` on any instance, so the work runs to its end even when its
    first client leaves (`run(False)`).
    """
    key = preamble.idempotency_key
    if key is None:
        return await (await run(True)).reply(request)

    app = request.app
    mine: list[Answer] = []

    async def compute() -> dict[str, Any] | Transient:
        answer = await run(False)
        mine.append(answer)
        # A turn the shutdown or its client cut short is answered, not stored: a retry runs it.
        return Transient(answer.to_json()) if app[LIVE_WORK].closing or not answer.whole else answer.to_json()

    try:
        stored = await app[IDEMPOTENCY].once(
            app[STORAGE].receipts, receipt_scope(endpoint), key, fingerprint(), compute, ttl=ttl,
            refuse_reuse=refuse_reuse,
        )
    except KeyReused as exc:
        raise Conflict(
            "Idempotency-Key was already used with a different request payload",
            code="idempotency_key_conflict",
            param="Idempotency-Key",
        ) from exc
    except AnswerPending as exc:
        raise Conflict(
            "A request with this Idempotency-Key is still being answered; retry later",
            code="idempotency_key_in_progress",
            param="Idempotency-Key",
            headers={"Retry-After": "1"},
        ) from exc
    if mine and mine[0].sent is not None:  # this request streamed it
        return mine[0].sent
    answer = Answer.from_json(stored)
    if not mine and replayed is not None:  # computed by another request
        answer = await replayed(answer)
    return await answer.reply(request)
