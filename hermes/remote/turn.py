"""One turn run by a remote `hermes serve`: its stream, its stop, its approvals, its resume.

`RemoteTurn` is a `TurnHandle` whose producer is the server: the same consumer side
(`events()`, `stop()`, `aclose(grace)`, `result`), the same bounded channel, the same
`TurnCrashed`, so a front end drives a remote turn as it drives a local one. Its task
posts the turn to `POST /api/sessions/{id}/chat/stream?events=engine` and emits each
engine event read from the frames (`hermes.remote.client.TurnEvents`: one frame in, one
engine event or None out).

Invariants:
- every frame carries its run's event seq; the reader keeps the last one, and a stream that
  breaks (reset, timeout, server gone) is resumed with `GET /v1/runs/{run_id}/events` and
  `Last-Event-ID: <seq>`, so no event is read twice and none is lost;
- a broken stream is retried RETRIES times with a bounded backoff (BACKOFF, capped); each
  break puts one notice (a `Status` event) in the stream, and the turn ends
  `failed` when every retry failed (code `server_unreachable`), or when the server no longer
  knows the run (it restarted: 404/410, code `run_gone`);
- a turn is posted again only when no connection was made (`ServerUnreachable.connected`
  is False): a request the server may have received is never sent twice;
- `stop()` posts `POST /v1/runs/{run_id}/stop` (the server relays it to whichever instance
  owns the run) as soon as the run id is known; the turn then ends with the server's own
  `run.cancelled`, as a local one ends `interrupted`;
- an `approval.request` frame is delivered as `ApprovalRequested`, then the request's
  `approve` callback is asked (no callback: deny) and its answer posted to
  `POST /v1/runs/{run_id}/approval`;
- the one difference from a local turn: `aclose(grace)` leaves without stopping; the
  stream is closed and the run goes on on the server (unless stopped: a stop still on its
  way gets up to STOP_WAIT seconds to reach the server);
- `events()` ends with exactly one `TurnCompleted`, or raises `TurnCrashed` whose `cause`
  is the `HermesError` that kept the turn from starting (a wrong key, an unknown session, a
  server that took the request but did not answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from hermes import api_paths
from hermes.agent.engine import title_from
from hermes.agent.events import ApprovalRequested, Status, TurnCompleted
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest, TurnResult
from hermes.errors import RemoteError, ServerUnreachable
from hermes.remote.client import CONNECTION_ERRORS, ENGINE_EVENTS, RemoteClient, TurnEvents
from hermes.remote.sessions import RemoteSessions, session_path

RETRIES = 8
"""Reconnection attempts of one broken stream before the turn is given up."""
BACKOFF = (0.2, 0.5, 1.0, 2.0, 4.0)
"""Seconds before each attempt (the last one repeats): about 20 s in all."""
STOP_WAIT = 5.0
"""Seconds `aclose()` waits for a stop still on its way to the server (never cancelled sooner)."""
SERVER_UNREACHABLE = "server_unreachable"
RUN_GONE = "run_gone"


class RemoteTurn(TurnHandle):
    """A turn on the server (see the module docstring). Build it with `RemoteAgent.start`."""

    LEAVING_STOPS = False  # leaving closes the stream; the server's run goes on

    def __init__(self, client: RemoteClient, request: TurnRequest, *, model: str | None) -> None:
        self.client = client
        self.request = request
        self.model = model
        self.run_id: str | None = None
        self.session_id: str | None = request.session_id
        self._stop_posted = False
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._stop_task: asyncio.Task[None] | None = None
        super().__init__(lambda _handle: self._produce(), name="hermes-remote-turn")

    def _deliver_stop(self) -> None:
        if not self.done:
            self._post_stop()  # the server's run stops; its own `run.cancelled` ends the turn

    # ---- the producer ----------------------------------------------------------------------

    async def _produce(self) -> None:
        try:
            await self._drive()
        finally:
            for task in list(self._side_tasks):
                task.cancel()
            if self._side_tasks:
                await asyncio.wait(self._side_tasks)
            if self._stop_task is not None and not self._stop_task.done():
                # Leaving must not lose the stop: the run would go on on the server.
                await asyncio.wait({self._stop_task}, timeout=STOP_WAIT)

    async def _drive(self) -> None:
        sessions = RemoteSessions(self.client)
        if self.session_id is None:
            title = self.request.title or title_from(self.request.input)  # as a local turn titles it
            record = await sessions.create_session(source=self.request.source, title=title, model=self.model)
            self.session_id = record.id
        reader = TurnEvents(self.session_id, self.model or "")
        body: dict[str, Any] = {"message": self.request.input}
        if self.model:
            body["model"] = self.model
        if self.request.mode != "default":
            body["mode"] = self.request.mode
        last_seq = 0
        path = session_path(self.session_id, "/chat/stream")
        method: str = "POST"
        payload: dict[str, Any] | None = body
        headers: dict[str, str] = {}
        attempt = 0
        while True:
            try:
                async with self.client.stream(method, path, body=payload, headers=headers, params=ENGINE_EVENTS) as (
                    response_headers,
                    frames,
                ):
                    if self.run_id is None and response_headers.get("X-Hermes-Run-Id"):
                        self.run_id = response_headers["X-Hermes-Run-Id"]
                        self._post_stop()
                    async for frame in frames:
                        if frame.id is not None:
                            if frame.id <= last_seq:
                                continue
                            last_seq = frame.id
                        attempt = 0
                        event = reader.read(frame)
                        if reader.run_id and self.run_id is None:
                            self.run_id = reader.run_id
                            self._post_stop()
                        if event is not None:
                            await self.emit(event)
                            if isinstance(event, ApprovalRequested):
                                self._spawn(self._answer(event))
                        if reader.finished:
                            break
            except (ServerUnreachable, *CONNECTION_ERRORS) as exc:
                if reader.finished:
                    break
                never_sent = isinstance(exc, ServerUnreachable) and not exc.connected
                if self.run_id is None and not never_sent:
                    # The turn may have been received: posting it again could run it twice.
                    raise exc if isinstance(exc, ServerUnreachable) else self.client.unreachable(exc) from None
                attempt += 1
                if attempt > RETRIES:
                    await self._end(reader.failed(f"lost the hermes server at {self.client.base_url}",
                                                  SERVER_UNREACHABLE))  # fmt: skip
                    return
                if attempt == 1:
                    await self.emit(Status("info", f"⚠ connection to {self.client.base_url} lost — reconnecting…"))
                await asyncio.sleep(BACKOFF[min(attempt - 1, len(BACKOFF) - 1)])
                if self.run_id is None:
                    continue  # no connection was made: post the turn again
                method, payload = "GET", None
                path = f"{api_paths.RUNS}/{self.run_id}/events"
                headers = {"Last-Event-ID": str(last_seq)}
                continue
            except RemoteError as exc:
                if method == "GET" and exc.status in (404, 410):
                    await self._end(reader.failed(
                        f"the server at {self.client.base_url} no longer has this turn (it restarted); "
                        "the session is kept: send the prompt again", RUN_GONE
                    ))  # fmt: skip
                    return
                raise
            if reader.finished:
                break
            # The stream ended cleanly without the run's end: resume it too (after a pause).
            attempt += 1
            if attempt > RETRIES or self.run_id is None:
                await self._end(reader.failed("the server closed the stream before the turn ended", SERVER_UNREACHABLE))
                return
            await asyncio.sleep(BACKOFF[min(attempt - 1, len(BACKOFF) - 1)])
            method, payload, path = "GET", None, f"{api_paths.RUNS}/{self.run_id}/events"
            headers = {"Last-Event-ID": str(last_seq)}
        if reader.result is None:
            await self._end(reader.failed("the server ended the stream without a result"))

    async def _end(self, result: TurnResult) -> None:
        await self.emit(TurnCompleted(result))

    # ---- stop and approvals ----------------------------------------------------------------

    def _spawn(self, step: Any) -> None:
        task = asyncio.get_running_loop().create_task(step)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _post_stop(self) -> None:
        if not self.stop_requested or self._stop_posted or self.run_id is None:
            return
        self._stop_posted = True
        self._stop_task = asyncio.get_running_loop().create_task(self._send_stop(self.run_id))

    async def _send_stop(self, run_id: str) -> None:
        for delay in (0.0, *BACKOFF):
            await asyncio.sleep(delay)
            try:
                await self.client.request("POST", f"{api_paths.RUNS}/{run_id}/stop")
                return
            except ServerUnreachable:
                continue  # the server is away: the stop is sent again when it is back
            except RemoteError:
                return  # settled already, or not active: nothing left to stop

    async def _answer(self, event: ApprovalRequested) -> None:
        approve = self.request.approve
        decision = ApprovalDecision.DENY
        if approve is not None:
            decision = await approve(
                ApprovalRequest(
                    session_id=self.session_id or "",
                    call_id=event.call_id,
                    tool_name=event.tool_name,
                    command=event.command,
                    reason=event.reason,
                    rule="",
                    grant=event.grant,
                )
            )
        if self.run_id is None:
            return
        with contextlib.suppress(RemoteError):  # answered elsewhere, or timed out on the server
            await self.client.request(
                "POST",
                f"{api_paths.RUNS}/{self.run_id}/approval",
                body={"choice": decision.value, "request_id": event.call_id},
            )
