"""Utility requests: a front end's background prompts, answered by one plain model call.

Open WebUI asks the model for a chat title, tags and follow-up suggestions after each
answer. Those are not agent turns: each gets exactly one model call with no tools, and
nothing is written to the session store (no session, nothing in `hermes sessions list`),
nor to the response store.

A request is a utility request when it is **not streamed** and either

- its ``metadata.task`` is a non-empty string (Open WebUI's own task marker, e.g.
  ``title_generation``, present when the front end forwards request metadata; any client
  may set it), or
- its new user message begins with ``### Task:`` (every prompt template Open WebUI ships
  for its background tasks starts so; Open WebUI does not forward its metadata to an
  OpenAI connection, so this is the signal it actually sends).

`UtilityEngine` satisfies `TurnEngine` (its `start` returns a `TurnHandle`), so a
utility request runs through the same pipeline as a turn (admission, idempotency,
disconnects) and is answered by the same translators.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes.agent.events import TurnCompleted, TurnStarted
from hermes.agent.provider import ModelRequest, Provider, ProviderEvent, ReasoningChunk, TextChunk, UsageChunk
from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult, Usage
from hermes.error_codes import INTERNAL_ERROR
from hermes.errors import HermesError

TASK_PREFIX = "### Task:"


def flatten_text(content: str | list[dict[str, Any]]) -> str:
    """Text only (images dropped) — for system prompts."""
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def is_utility_request(*, stream: bool, new_input: Any, metadata: Any) -> bool:
    """See the module docstring."""
    if stream:
        return False
    if isinstance(metadata, dict) and isinstance(metadata.get("task"), str) and metadata["task"].strip():
        return True
    text = new_input if isinstance(new_input, str) else flatten_text(new_input)
    return text.lstrip().startswith(TASK_PREFIX)


class UtilityEngine:
    """One model call without tools or persistence, reported as a turn's events."""

    def __init__(self, provider: Provider, model: str) -> None:
        self._provider = provider
        self._model = model

    def start(self, request: TurnRequest, *, inline: bool = False) -> TurnHandle:
        """The utility call as a turn behind a `TurnHandle` (stop() cancels the call)."""

        async def produce(handle: TurnHandle) -> None:
            await self._answer(request, handle)

        return TurnHandle(produce, name="hermes-utility", inline=inline)

    async def _answer(self, request: TurnRequest, handle: TurnHandle) -> None:
        model = request.model or self._model
        session_id = request.session_id or ""
        user: ChatMessage = {"role": "user", "content": request.input}
        messages: list[ChatMessage] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages += [*(request.history or []), user]
        await handle.emit(TurnStarted(session_id=session_id, model=model))
        interrupted = TurnResult(session_id, "interrupted", "", [user], model=model)
        handle.listen()
        try:
            if handle.stop_requested:  # stopped before the call: it is never made
                handle.unlisten()
                await handle.emit(TurnCompleted(_stopped(interrupted, handle)))
                return
            call = ModelRequest(model=model, messages=messages, tools=None, output_format=request.output_format)
            events = await self._provider.complete(call)
        except asyncio.CancelledError:
            if not handle.unlisten():
                raise
            await handle.emit(TurnCompleted(_stopped(interrupted, handle)))
            return
        except Exception as exc:  # noqa: BLE001 - a failed call is a failed turn, as in the engine
            handle.unlisten()
            code = exc.code if isinstance(exc, HermesError) else INTERNAL_ERROR
            await handle.emit(
                TurnCompleted(
                    TurnResult(
                        session_id,
                        "failed",
                        "",
                        [user],
                        api_calls=1,
                        model=model,
                        error=str(exc) or type(exc).__name__,
                        error_code=code,
                    )
                )
            )
            return
        handle.unlisten()
        await handle.emit(TurnCompleted(_result(session_id, model, user, events)))


def _stopped(result: TurnResult, handle: TurnHandle) -> TurnResult:
    result.error, result.error_code = handle.stop_message, handle.stop_code
    return result


def _result(session_id: str, model: str, user: ChatMessage, events: list[ProviderEvent]) -> TurnResult:
    text, reasoning, usage = "", "", Usage()
    for event in events:
        if isinstance(event, TextChunk):
            text += event.text
        elif isinstance(event, ReasoningChunk):
            reasoning += event.text
        elif isinstance(event, UsageChunk):
            usage = usage + event.usage
        # Tool calls cannot come without tools; the finish reason adds nothing here.
    assistant: ChatMessage = {"role": "assistant", "content": text}
    return TurnResult(
        session_id, "completed", text, [user, assistant], usage=usage, api_calls=1, model=model,
        reasoning=reasoning or None,
    )
