"""The model seam: a Provider turns a ModelRequest into a stream of ProviderEvents.

Providers translate their SDK's errors into `hermes.errors.ProviderError` subclasses
(with `retryable`, `status`, `retry_after`) at this seam; the engine never sees an
SDK exception. Retries, the stale-stream watchdog and tool-call accumulation live in
the engine, so every provider gets them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from hermes.agent.output_format import OutputFormat
from hermes.agent.types import ChatMessage, Usage


@dataclass(slots=True)
class ModelRequest:
    model: str
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] | None = None
    """OpenAI function-tool schemas ({"type": "function", "function": {...}})."""
    tool_choice: str | dict[str, Any] | None = None
    """OpenAI `tool_choice` (none, required, a named function); None: the endpoint's default."""
    parallel_tool_calls: bool | None = None
    """OpenAI `parallel_tool_calls`; None: leave it out."""
    include_usage: bool = True
    """Ask for the final usage chunk (stream_options.include_usage)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Extra body fields (temperature, max_tokens…); they win over the typed fields."""
    output_format: OutputFormat | None = None
    """The format the answer's text must take (`hermes.agent.output_format`); None: free text."""


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A fragment of a streamed tool call, keyed by the upstream's index."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class UsageChunk:
    usage: Usage
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class FinishChunk:
    reason: str
    kind: Literal["finish"] = "finish"


@dataclass(frozen=True, slots=True)
class ProgressChunk:
    """How far the model is with this request (from providers that can tell: the local one).

    Not content: it never counts as delivered output, and a consumer may drop it.
    """

    phase: Literal["reading", "generating"]
    """reading: the request is sent and no token has come yet; generating: tokens are coming."""
    tokens: int = 0
    """Tokens generated so far in this request (including ones a wrapper hides, e.g. JSON actions)."""
    tokens_per_second: float | None = None
    kind: Literal["progress"] = "progress"


ProviderEvent: TypeAlias = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | FinishChunk | ProgressChunk


class Provider(ABC):
    """A model endpoint.

    `stream` yields ProviderEvents. `complete` does the same work without streaming and
    returns the events at once (used when the endpoint refuses to stream); both raise
    ProviderError subclasses only.
    """

    name: ClassVar[str] = "provider"
    supports_streaming: ClassVar[bool] = True
    supports_tools: ClassVar[bool] = True

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Start a streaming request. Cancelling the iteration closes the request."""

    @abstractmethod
    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        """One non-streaming request, reported as the same events."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def describe(self) -> str:
        """One line for `hermes doctor` and status bars."""
        return self.name

    def context_window(self) -> int | None:
        """The real context window of the model behind this provider, when it is known."""
        return None


ProviderFactory: TypeAlias = Callable[..., Provider]
_REGISTRY: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    _REGISTRY[name] = factory


def unregister_provider(name: str) -> None:
    _REGISTRY.pop(name, None)


def provider_factory(name: str) -> ProviderFactory | None:
    return _REGISTRY.get(name)
