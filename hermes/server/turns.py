"""Running one agent turn for an HTTP request, and reading its outcome.

`TurnStream` runs ``agent.run_turn(request)`` in a task of its own and hands its events
to the handler through a queue, so a handler can stop the turn from anywhere
(``turn.cancel()`` — e.g. from an ``SSEStream.on_disconnect`` callback — which calls the
turn's `TurnInterrupt`) and still receive the final ``TurnCompleted`` (status
``interrupted``) the engine emits then. ``aclose()`` cancels the task: the engine cleans
up and no final event follows.

`Outcome.of(result)` maps a `TurnResult` to the OpenAI-facing outcome (finish_reason,
the ``hermes`` block, the X-Hermes-* headers) shared by chat completions and responses.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from hermes.agent.events import AgentEvent, Retrying, Status, StreamStalled, TurnCompleted
from hermes.agent.interrupt import TurnInterrupt
from hermes.agent.prompt import default_system_prompt
from hermes.agent.types import TurnRequest, TurnResult, Usage

_END = object()
QUEUE_SIZE = 16


class TurnCrashed(Exception):
    """The engine raised instead of ending with TurnCompleted."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class TurnStream:
    """One turn running in its own task; iterate `events()` to consume it."""

    def __init__(self, agent: Any, request: TurnRequest) -> None:
        self._agent = agent
        self._request = request
        # Bounded on purpose: when the upstream's bytes are already buffered nothing in the
        # engine suspends, so an unbounded queue would let one turn run to its end before
        # its writer (or any other stream) is scheduled. A full queue hands the loop over.
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self.result: TurnResult | None = None
        self._failure: TurnCrashed | None = None
        self.interrupt = TurnInterrupt()
        self.task = asyncio.create_task(self._pump(), name="hermes-turn")

    async def _pump(self) -> None:
        agen = self._agent.run_turn(self._request, interrupt=self.interrupt)
        try:
            async for event in agen:
                if isinstance(event, TurnCompleted):
                    self.result = event.result
                await self._queue.put(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failure = TurnCrashed(exc)
        finally:
            # Cancelled at `put` (outside the generator): the engine's aclose() path
            # persists placeholders and ends the session; there is no final event then.
            with contextlib.suppress(Exception):
                await agen.aclose()
            with contextlib.suppress(asyncio.CancelledError):
                await self._queue.put(_END)

    def cancel(self) -> None:
        """Interrupt the turn (upstream request closed, tools killed); idempotent.

        The events still end with TurnCompleted (status ``interrupted``).
        """
        self.interrupt.interrupt()

    async def events(self) -> AsyncIterator[AgentEvent]:
        """The turn's events, ending after TurnCompleted; raises TurnCrashed if the engine failed."""
        while True:
            item = await self._queue.get()
            if item is _END:
                break
            yield item
        if self._failure is not None:
            raise self._failure

    async def wait(self) -> TurnResult | None:
        """Drain the events and return the result (None if the turn never completed)."""
        async for _ in self.events():
            pass
        return self.result

    async def aclose(self) -> None:
        """Cancel if still running and wait for the task to finish its cleanup."""
        if not self.task.done():
            self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def layered_system_prompt(agent: Any, client_prompt: str | None, cwd: str | None = None) -> str | None:
    """The client's system prompt layered on top of hermes' own (None: hermes' own only)."""
    if not client_prompt or not client_prompt.strip():
        return None
    base = getattr(agent, "system_prompt", None) or default_system_prompt(cwd)
    return f"{base}\n\n{client_prompt}"


def status_payload(event: Status | Retrying | StreamStalled) -> dict[str, Any]:
    """The body of a named `hermes.status` SSE frame."""
    if isinstance(event, Status):
        return {"kind": event.kind, "text": event.text}
    if isinstance(event, Retrying):
        return {"kind": "retrying", "text": f"{event.reason} (attempt {event.attempt}/{event.max_attempts})"}
    return {"kind": "stream_stalled", "text": event.message}


def usage_chat(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def usage_responses(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def header_safe(text: str, limit: int = 200) -> str:
    """Printable ASCII only, at most `limit` characters (for X-Hermes-Error)."""
    cleaned = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in text)
    return " ".join(cleaned.split())[:limit]


@dataclass(frozen=True)
class Outcome:
    """How a finished turn is reported to an OpenAI client."""

    finish_reason: str
    """stop | length | error."""
    hermes: dict[str, Any] | None
    """The ``hermes`` block; None for a clean completion."""
    hard_failure: bool
    """No usable text: JSON answers 502 agent_incomplete."""
    error: str | None

    @classmethod
    def of(cls, result: TurnResult | None, *, crash: BaseException | None = None) -> Outcome:
        if crash is not None or result is None:
            message = str(crash) if crash is not None else "The turn ended without a result."
            block = {"completed": False, "partial": False, "failed": True, "error": message, "error_code": "agent_error"}
            return cls("error", block, True, message)
        text = result.final_text or ""
        if result.status == "completed":
            return cls("stop", None, False, None)
        error = result.error or "Agent run did not produce a response."
        partial = result.status == "partial" or (result.status == "interrupted" and bool(text))
        failed = result.status == "failed"
        if result.status == "partial" and text:
            code = "output_truncated"
            reason = "length"
        else:
            code = result.error_code or ("interrupted" if result.status == "interrupted" else "agent_error")
            reason = "error"
        block = {"completed": False, "partial": partial, "failed": failed, "error": error, "error_code": code}
        return cls(reason, block, not text.strip(), error)

    def headers(self) -> dict[str, str]:
        if self.hermes is None:
            return {}
        headers = {
            "X-Hermes-Completed": "false",
            "X-Hermes-Partial": "true" if self.hermes["partial"] else "false",
        }
        if self.error:
            headers["X-Hermes-Error"] = header_safe(self.error)
        return headers
