"""One model call: retries, the stale-stream watchdog and delta accumulation.

`model_call(...)` is an async generator of engine events (TextDelta, ReasoningDelta,
ToolCallGenerating, Retrying, StreamStalled, Status); what the call produced is left in
the `CallOutcome` passed in, because async generators cannot return values.

Invariants:
- A request is retried only while nothing visible (text or reasoning) was delivered from
  it, so retries never duplicate or interleave text.
- A tool call whose arguments did not finish streaming is never executed.
- Every attempt's upstream request is closed before the next one starts or the
  generator exits (cancellation included).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from hermes.agent.events import (
    AgentEvent,
    ModelProgress,
    ReasoningDelta,
    Retrying,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
)
from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    ProgressChunk,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.types import ChatMessage, Usage
from hermes.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    StreamingUnsupported,
)


@dataclass(slots=True)
class CallPolicy:
    stream_retries: int = 2
    """Retries after the first attempt (so retries+1 attempts)."""
    stale_timeout: float = 180.0
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0


@dataclass(slots=True)
class ToolSlot:
    id: str
    name: str
    arguments: str = ""
    announced: bool = False

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they are not complete JSON."""
        text = self.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass(slots=True)
class CallOutcome:
    """What one model call produced."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolSlot] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: ProviderError | None = None
    """Set when the call failed with nothing usable."""
    stalled: bool = False
    """The stream broke after text was delivered; `text` is what arrived."""
    stalled_tools: tuple[str, ...] = ()
    """Tool calls of the broken message (never executed)."""
    warning: str = ""
    """The stall warning appended to the text (already emitted as a TextDelta)."""

    def reset(self) -> None:
        self.text, self.reasoning, self.finish_reason = "", "", None
        self.tool_calls = []


class _Accumulator:
    """Folds provider events into an outcome; yields what the user sees."""

    def __init__(self, outcome: CallOutcome) -> None:
        self.outcome = outcome
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.slot_at: dict[int, ToolSlot] = {}
        self.delivered = False
        self.got_usage = False

    def feed(self, event: ProviderEvent) -> AgentEvent | None:
        if isinstance(event, TextChunk):
            self.text_parts.append(event.text)
            self.delivered = True
            return TextDelta(event.text)
        if isinstance(event, ReasoningChunk):
            self.reasoning_parts.append(event.text)
            self.delivered = True
            return ReasoningDelta(event.text)
        if isinstance(event, ToolCallChunk):
            return self._tool_chunk(event)
        if isinstance(event, UsageChunk):
            self.outcome.usage = self.outcome.usage + event.usage
            self.got_usage = True
            return None
        if isinstance(event, FinishChunk):
            self.outcome.finish_reason = event.reason
        if isinstance(event, ProgressChunk):
            # Not output: `delivered` stays as it is, so a failed call may still be retried.
            return ModelProgress(event.phase, event.tokens, event.tokens_per_second)
        return None

    def _tool_chunk(self, chunk: ToolCallChunk) -> AgentEvent | None:
        slot = self.slot_at.get(chunk.index)
        # A new id at a used index is a new call (some servers reuse index 0).
        if slot is None or (chunk.id and slot.id and chunk.id != slot.id):
            slot = ToolSlot(id=chunk.id or "", name="")
            self.slot_at[chunk.index] = slot
            self.outcome.tool_calls.append(slot)
        if chunk.id and not slot.id:
            slot.id = chunk.id
        if chunk.name:
            slot.name = chunk.name  # assigned, not appended: some servers resend it whole
        slot.arguments += chunk.arguments
        if slot.name and not slot.announced:
            slot.announced = True
            if not slot.id:
                slot.id = f"call_{len(self.outcome.tool_calls)}"
            return ToolCallGenerating(call_id=slot.id, name=slot.name, index=chunk.index)
        return None

    def finish(self) -> None:
        self.outcome.text = "".join(self.text_parts)
        self.outcome.reasoning = "".join(self.reasoning_parts)
        for position, slot in enumerate(self.outcome.tool_calls):
            if not slot.id:
                slot.id = f"call_{position}"

    def incomplete_tools(self) -> list[ToolSlot]:
        return [s for s in self.outcome.tool_calls if s.name and s.parsed_arguments() is None]


def stall_warning(names: list[str]) -> str:
    shown = ", ".join(names[:3])
    if len(names) > 3:
        shown += f", +{len(names) - 3} more"
    return (
        f"⚠ Stream stalled mid tool-call ({shown}); the action was not executed. "
        "Ask me to retry if you want to continue."
    )


class _EmptyStream(ProviderError):
    pass


async def model_call(
    provider: Provider,
    request: ModelRequest,
    policy: CallPolicy,
    outcome: CallOutcome,
    *,
    streaming: bool,
    on_streaming_unsupported: Any = None,
) -> AsyncGenerator[AgentEvent, None]:
    """Run one model call with retries; see the module docstring."""
    attempts = policy.stream_retries + 1
    attempt = 1
    loop = asyncio.get_running_loop()
    while True:
        outcome.reset()
        acc = _Accumulator(outcome)
        try:
            if streaming:
                # Inline, not a generator of its own: each event passes one layer fewer.
                stream = provider.stream(request)
                try:
                    # It fires only after `stale_timeout` seconds with no chunk at all; time
                    # spent by the consumer is not upstream silence.
                    async with asyncio.timeout(None) as deadline:
                        watchdog = _Watchdog(loop, deadline, policy.stale_timeout)
                        try:
                            async for provider_event in stream:
                                shown = acc.feed(provider_event)
                                if shown is not None:
                                    watchdog.paused = True
                                    yield shown
                                    watchdog.paused = False
                                watchdog.heard = loop.time()
                        finally:
                            watchdog.cancel()
                finally:
                    await stream.aclose()  # type: ignore[attr-defined]
            else:
                async with asyncio.timeout(policy.stale_timeout):
                    events = await provider.complete(request)
                for provider_event in events:
                    shown = acc.feed(provider_event)
                    if shown is not None:
                        yield shown
            acc.finish()
            if not streaming or outcome.finish_reason or acc.got_usage:
                return
            # The stream ended without a finish reason: judge what arrived.
            if not acc.delivered and not outcome.tool_calls:
                raise _EmptyStream("the model endpoint sent an empty response stream", retryable=True)
            if acc.incomplete_tools() or (acc.delivered and not outcome.tool_calls):
                raise ProviderError("the response stream ended before the model finished", retryable=True)
            return
        except StreamingUnsupported:
            if not streaming:
                raise
            streaming = False
            if on_streaming_unsupported is not None:
                on_streaming_unsupported()
            yield Status("streaming_disabled", "the endpoint does not support streaming; using non-streaming calls")
            continue
        except (ProviderError, TimeoutError) as raw:
            error = raw if isinstance(raw, ProviderError) else ProviderTimeout(
                f"no response from the model for {policy.stale_timeout:g} s", retryable=True
            )
            acc.finish()
            delivered = acc.delivered
            # The message broke off: none of its tool calls may run, so all are "cut".
            cut = [slot for slot in outcome.tool_calls if slot.name]
            if not delivered and error.retryable and attempt < attempts and not isinstance(error, ProviderAuthError):
                attempt += 1
                delay = _backoff(policy, attempt, error)
                yield Retrying(attempt=attempt, max_attempts=attempts, reason=str(error), delay=delay)
                if delay:
                    await asyncio.sleep(delay)
                continue
            if delivered or cut:
                # Keep what was said; name the calls that were cut off, never run them.
                outcome.stalled = True
                if cut:
                    names = [s.name for s in cut]
                    outcome.stalled_tools = tuple(names)
                    outcome.warning = stall_warning(names)
                    separator = "\n\n" if outcome.text and not outcome.text.endswith("\n") else ""
                    warning_text = separator + outcome.warning
                    outcome.text += warning_text
                    yield TextDelta(warning_text)
                    yield StreamStalled(tool_names=tuple(names), message=outcome.warning)
                outcome.tool_calls = []  # a broken message runs no tools
                return
            if attempt > 1 and error.retryable:
                error = type(error)(
                    f"{error} (gave up after {attempt} attempts)",
                    status=error.status,
                    retryable=False,
                    provider=error.provider,
                )
            outcome.error = error
            return


class _Watchdog:
    """Fires `deadline` once the upstream has been silent `stale` seconds.

    A chunk only stamps the time (`heard`); the one timer re-arms itself when it finds
    that something was heard since, so a chunk costs a clock read instead of a timer
    cancelled and another scheduled. While the consumer holds an event (`paused`) no
    silence is counted.
    """

    __slots__ = ("_deadline", "_handle", "_loop", "_stale", "heard", "paused")

    def __init__(self, loop: asyncio.AbstractEventLoop, deadline: asyncio.Timeout, stale: float) -> None:
        self._loop, self._deadline, self._stale = loop, deadline, stale
        self.heard = loop.time()
        self.paused = False
        self._handle = loop.call_at(self.heard + stale, self._check)

    def _check(self) -> None:
        now = self._loop.time()
        if self.paused:
            self._handle = self._loop.call_at(now + self._stale, self._check)
        elif now - self.heard >= self._stale:
            self._deadline.reschedule(now)  # expires now: the stream's task gets TimeoutError
        else:
            self._handle = self._loop.call_at(self.heard + self._stale, self._check)

    def cancel(self) -> None:
        self._handle.cancel()


def falls_back(error: ProviderError) -> bool:
    """A failure another model may not share: a server error, a timeout, no connection."""
    if isinstance(error, (ProviderTimeout, ProviderConnectionError)):
        return True
    return error.status is not None and error.status >= 500


def _backoff(policy: CallPolicy, attempt: int, error: ProviderError) -> float:
    if error.retry_after is not None:
        return min(float(error.retry_after), policy.retry_max_delay)
    if error.status is None:
        return 0.0 if attempt == 2 else min(policy.retry_base_delay * (attempt - 2), policy.retry_max_delay)
    return min(policy.retry_base_delay * 2.0 ** (attempt - 2), policy.retry_max_delay)


class ModelCaller:
    """The provider and how it is called: streaming until it says it cannot (then never again).

    Shared by the turns of one agent and by its summaries (compaction), so one refusal to
    stream switches every later call to plain requests.

    `fallbacks` are models tried in order when a call failed after its retries with a
    server error, a timeout or a refused connection (`falls_back`), before anything of it
    was shown; each switch is announced by a `Status("fallback", …)`.
    """

    __slots__ = ("fallbacks", "provider", "streaming")

    def __init__(self, provider: Provider, fallbacks: tuple[str, ...] = ()) -> None:
        self.provider = provider
        self.streaming = provider.supports_streaming
        self.fallbacks = fallbacks

    def call(self, request: ModelRequest, policy: CallPolicy, outcome: CallOutcome) -> AsyncGenerator[AgentEvent, None]:
        """`model_call` with this provider (see there), going on with the fallbacks."""
        if not self.fallbacks:
            return self._one(request, policy, outcome)
        return self._with_fallbacks(request, policy, outcome)

    def _one(self, request: ModelRequest, policy: CallPolicy, outcome: CallOutcome) -> AsyncGenerator[AgentEvent, None]:
        return model_call(
            self.provider,
            request,
            policy,
            outcome,
            streaming=self.streaming,
            on_streaming_unsupported=self._no_streaming,
        )

    async def _with_fallbacks(
        self, request: ModelRequest, policy: CallPolicy, outcome: CallOutcome
    ) -> AsyncGenerator[AgentEvent, None]:
        models = [request.model, *(m for m in self.fallbacks if m != request.model)]
        for position, model in enumerate(models):
            attempt = request if model == request.model else replace(request, model=model)
            async with aclosing(self._one(attempt, policy, outcome)) as events:
                async for event in events:
                    yield event
            error = outcome.error
            if error is None or not falls_back(error) or position + 1 == len(models):
                return
            yield Status("fallback", f"{model} failed ({error}); going on with {models[position + 1]}")
            outcome.error = None

    def summarizer(self, model: str, policy: CallPolicy) -> Callable[[list[ChatMessage]], Awaitable[tuple[str, Usage]]]:
        """A summary call for compaction: one tool-less request; its text and usage (nothing is shown)."""

        async def summarize(messages: list[ChatMessage]) -> tuple[str, Usage]:
            outcome = CallOutcome()
            request = ModelRequest(model=model, messages=messages, tools=None)
            async with aclosing(self.call(request, policy, outcome)) as events:
                async for _ in events:
                    pass  # the summary is not part of the answer: nothing is shown while it streams
            if outcome.error is not None:
                raise outcome.error
            return outcome.text, outcome.usage

        return summarize

    def _no_streaming(self) -> None:
        self.streaming = False
