"""Anthropic's Messages API, native, through Anthropic's own SDK (`anthropic`).

    provider = AnthropicProvider(api_key=..., base_url="https://api.anthropic.com")
    async for event in provider.stream(ModelRequest(model="claude-sonnet-4-5", messages=...)): ...

Requests arrive in the engine's OpenAI message shape and are translated here
(`messages_params`): system messages become the `system` blocks, assistant tool calls
`tool_use` blocks, tool results `tool_result` blocks in a user turn, image parts image
blocks; consecutive messages of one role are merged, as the API requires.

Invariants:
- the SDK never retries (`max_retries=0`): retries, backoff and the stale-stream watchdog
  are the engine's, as for every provider;
- every SDK exception leaves as a `hermes.errors.ProviderError`: overloaded (529), API
  errors and 5xx are retryable, with `retry-after` when sent; 429 is `ProviderRateLimited`;
  401/403 `ProviderAuthError`; "prompt is too long" `ContextLengthExceeded`; an error
  event inside a stream is judged by its type the same way;
- the system prompt and the conversation so far carry `cache_control` breakpoints (the
  system's last block and the last message's last block), so each step reads the prefix
  from the cache; usage maps cache reads to `cached_input_tokens`, and `input_tokens`
  counts every prompt token (uncached, cache writes and cache reads);
- with thinking on (`thinking_budget`), the thinking blocks of a message that called
  tools are kept (with their signatures) by tool-call id and sent back with that
  message, as the API requires while a tool loop goes on.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from hermes.agent.output_format import JsonSchemaFormat, OutputFormat
from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.types import ChatMessage, Usage
from hermes.errors import (
    ContextLengthExceeded,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
)
from hermes.redact import redact_url

if TYPE_CHECKING:
    import anthropic

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192
_CACHE = {"type": "ephemeral"}
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
_RETRYABLE_TYPES = {"overloaded_error": 529, "api_error": 500, "timeout_error": 504}


class AnthropicProvider(Provider):
    name: ClassVar[str] = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        connect_timeout: float = 30.0,
        read_timeout: float = 600.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budget: int = 0,
        label: str = "anthropic",
    ) -> None:
        self.base_url = _sdk_base_url(base_url or DEFAULT_BASE_URL)
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.label = label
        self._timeouts = (connect_timeout, read_timeout)
        self._client: anthropic.AsyncAnthropic | None = None
        self._thinking: dict[str, list[dict[str, Any]]] = {}
        """Thinking blocks (with signatures) of a message that called tools, by its first call id."""

    def describe(self) -> str:
        return f"anthropic ({redact_url(self.base_url)})"

    async def warm(self) -> None:
        """Import the SDK (about a second of CPU) in a thread, so the loop never waits on it."""
        if self._client is None:
            await asyncio.to_thread(importlib.import_module, "anthropic")

    def _sdk(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            import anthropic
            import httpx2

            connect, read = self._timeouts
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key or "",
                base_url=self.base_url,
                max_retries=0,
                timeout=httpx2.Timeout(read, connect=connect),
            )
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API body for `request` (without `stream`)."""
        system, messages = messages_params(request.messages, self._thinking)
        params: dict[str, Any] = {"model": request.model, "max_tokens": self.max_tokens, "messages": messages}
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [_tool(schema) for schema in request.tools]
            choice = _tool_choice(request.tool_choice, request.parallel_tool_calls)
            if choice is not None:
                params["tool_choice"] = choice
        if self.thinking_budget > 0:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            params["max_tokens"] = max(self.max_tokens, self.thinking_budget + 1024)
        if request.output_format is not None:
            params.setdefault("system", []).append({"type": "text", "text": format_instruction(request.output_format)})
        for key, value in request.extra.items():
            params[key] = value
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        reader = _StreamReader(self._thinking)
        await self.warm()
        with self._errors():
            response = await self._sdk().messages.create(**self.params(request), stream=True)
            try:
                async for event in response:
                    for out in reader.feed(event):
                        yield out
            finally:
                await response.close()

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        await self.warm()
        with self._errors():
            message = await self._sdk().messages.create(**self.params(request))
        events: list[ProviderEvent] = []
        thinking: list[dict[str, Any]] = []
        index = 0
        for block in message.content:
            if block.type == "text" and block.text:
                events.append(TextChunk(block.text))
            elif block.type == "thinking":
                events.append(ReasoningChunk(block.thinking))
                thinking.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
            elif block.type == "redacted_thinking":
                thinking.append({"type": "redacted_thinking", "data": block.data})
            elif block.type == "tool_use":
                if index == 0 and thinking:
                    self._thinking[block.id] = thinking
                events.append(ToolCallChunk(index, block.id, block.name, json.dumps(block.input)))
                index += 1
        events.append(UsageChunk(_usage(message.usage.model_dump())))
        events.append(FinishChunk(_STOP_REASONS.get(message.stop_reason or "", message.stop_reason or "stop")))
        return events

    async def list_models(self) -> list[str]:
        """The model ids the API offers (GET /v1/models)."""
        await self.warm()
        with self._errors():
            page = await self._sdk().models.list(limit=100)
            return [model.id for model in page.data]

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import anthropic  # imported by `warm` before any request

        try:
            yield
        except anthropic.APITimeoutError:
            raise ProviderTimeout(
                f"timed out talking to {redact_url(self.base_url)}", retryable=True, provider=self.label
            ) from None
        except anthropic.APIConnectionError as exc:
            raise ProviderConnectionError(
                f"cannot reach the Anthropic API at {redact_url(self.base_url)} ({exc.__cause__ or exc})",
                retryable=True,
                provider=self.label,
            ) from None
        except anthropic.APIStatusError as exc:
            message = exc.api_message or str(exc)
            raise status_error(exc.status_code, exc.type, message, exc.response.headers, self.label) from None
        except anthropic.AnthropicError as exc:
            raise ProviderError(f"Anthropic API error: {exc}", provider=self.label) from None


def format_instruction(fmt: OutputFormat) -> str:
    """The Messages API has no `response_format`: the format is asked for in the system prompt."""
    if isinstance(fmt, JsonSchemaFormat):
        schema = json.dumps(fmt.schema, separators=(",", ":"))
        return f"Answer with one JSON value only (no prose, no code fence) matching this JSON schema: {schema}"
    return "Answer with one JSON object only (no prose, no code fence)."


def status_error(
    status: int, kind: str | None, message: str, headers: Any, provider: str
) -> ProviderError:
    """The ProviderError of an Anthropic error (an HTTP status, or an error event in a stream)."""
    retry_after = _retry_after(headers)
    if kind == "overloaded_error" or status == 529:
        return ProviderError(
            f"Anthropic is overloaded (529): {message}", status=529, retryable=True, retry_after=retry_after,
            provider=provider,
        )  # fmt: skip
    if kind == "rate_limit_error" or status == 429:
        return ProviderRateLimited(
            f"rate limited by Anthropic (429): {message}", status=429, retryable=True, retry_after=retry_after,
            provider=provider,
        )  # fmt: skip
    if kind in ("authentication_error", "permission_error") or status in (401, 403):
        return ProviderAuthError(
            f"authentication failed ({status}): check the provider's api_key_env — {message}",
            status=status,
            provider=provider,
        )
    if "prompt is too long" in message.lower():
        return ContextLengthExceeded(
            f"the request is too long for the model's context ({status}): {message}", status=status, provider=provider
        )
    if kind in _RETRYABLE_TYPES or status >= 500 or status == 408:
        code = _RETRYABLE_TYPES.get(kind or "", status if status >= 400 else 500)
        return ProviderError(
            f"Anthropic API error ({code}): {message}", status=code, retryable=True, retry_after=retry_after,
            provider=provider,
        )  # fmt: skip
    return ProviderError(f"Anthropic refused the request ({status}): {message}", status=status, provider=provider)


class _StreamReader:
    """Turns the Messages stream's events into ProviderEvents."""

    def __init__(self, memo: dict[str, list[dict[str, Any]]]) -> None:
        self._memo = memo
        self._blocks: dict[int, str] = {}
        """Content block index → its type."""
        self._tool_index: dict[int, int] = {}
        """Content block index → the tool call's index among this message's calls."""
        self._thinking: list[dict[str, Any]] = []
        self._usage: dict[str, int] = {}

    def feed(self, event: Any) -> list[ProviderEvent]:
        kind = event.type
        if kind == "message_start":
            self._merge_usage(event.message.usage.model_dump())
            return []
        if kind == "content_block_start":
            block = event.content_block
            self._blocks[event.index] = block.type
            if block.type == "tool_use":
                position = len(self._tool_index)
                self._tool_index[event.index] = position
                if position == 0 and self._thinking:
                    self._memo[block.id] = self._thinking
                return [ToolCallChunk(position, block.id, block.name, "")]
            if block.type == "thinking":
                self._thinking.append({"type": "thinking", "thinking": "", "signature": ""})
            elif block.type == "redacted_thinking":
                self._thinking.append({"type": "redacted_thinking", "data": block.data})
            elif block.type == "text" and block.text:
                return [TextChunk(block.text)]
            return []
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextChunk(delta.text)] if delta.text else []
            if delta.type == "input_json_delta":
                return [ToolCallChunk(self._tool_index[event.index], arguments=delta.partial_json)]
            if delta.type == "thinking_delta":
                self._thinking[-1]["thinking"] += delta.thinking
                return [ReasoningChunk(delta.thinking)] if delta.thinking else []
            if delta.type == "signature_delta":
                self._thinking[-1]["signature"] += delta.signature
            return []
        if kind == "message_delta":
            self._merge_usage(event.usage.model_dump())
            reason = event.delta.stop_reason
            out: list[ProviderEvent] = [UsageChunk(_usage(self._usage))]
            if reason:
                out.append(FinishChunk(_STOP_REASONS.get(reason, reason)))
            return out
        return []

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        for key, value in usage.items():
            if isinstance(value, int):
                self._usage[key] = max(value, self._usage.get(key, 0))


def _usage(raw: dict[str, Any]) -> Usage:
    uncached = int(raw.get("input_tokens") or 0)
    written = int(raw.get("cache_creation_input_tokens") or 0)
    read = int(raw.get("cache_read_input_tokens") or 0)
    output = int(raw.get("output_tokens") or 0)
    prompt = uncached + written + read
    return Usage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output, cached_input_tokens=read)


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _sdk_base_url(url: str) -> str:
    """The SDK adds `/v1/messages` itself: a configured `…/v1` is cut back to the root."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


# ---- OpenAI message shape → Messages API ---------------------------------------------------


def messages_params(
    messages: list[ChatMessage], thinking: dict[str, list[dict[str, Any]]] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) for the Messages API, with the cache breakpoints set."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_text_blocks(message.get("content")))
            continue
        if role == "tool":
            blocks = [_tool_result(message)]
            role = "user"
        elif role == "assistant":
            blocks = _assistant_blocks(message, thinking or {})
        else:
            blocks = _user_blocks(message.get("content"))
            role = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(the conversation continues)"}]})
    if system:
        system[-1] = {**system[-1], "cache_control": _CACHE}
    if turns:
        last = turns[-1]["content"]
        last[-1] = {**last[-1], "cache_control": _CACHE}
    return system, turns


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text") and part.get("text"):
            blocks.append({"type": "text", "text": str(part["text"])})
    return blocks


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str) or content is None:
        return _text_blocks(content)
    blocks: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str):
                blocks.append(_image_block(url))
        else:
            blocks.extend(_text_blocks([part]))
    return blocks


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _assistant_blocks(message: ChatMessage, thinking: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    blocks: list[dict[str, Any]] = []
    if calls and isinstance(calls[0].get("id"), str):
        blocks.extend(thinking.get(calls[0]["id"], []))
    blocks.extend(_text_blocks(message.get("content")))
    for call in calls:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            arguments = {"_unparsed_arguments": raw}
        if not isinstance(arguments, dict):
            arguments = {"value": arguments}
        blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": arguments})
    return blocks


def _tool_result(message: ChatMessage) -> dict[str, Any]:
    content = message.get("content")
    text = content if isinstance(content, str) else "\n".join(b["text"] for b in _text_blocks(content))
    return {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": text or "(no output)"}


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    function = schema.get("function", schema)
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _tool_choice(choice: str | dict[str, Any] | None, parallel: bool | None) -> dict[str, Any] | None:
    picked: dict[str, Any] | None
    if choice is None or choice == "auto":
        picked = {"type": "auto"} if parallel is False else None
    elif choice == "required":
        picked = {"type": "any"}
    elif choice == "none":
        picked = {"type": "none"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        picked = {"type": "tool", "name": choice["function"].get("name")}
    else:
        picked = None
    if picked is not None and parallel is False and picked["type"] != "none":
        picked["disable_parallel_tool_use"] = True
    return picked
