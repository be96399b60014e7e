"""The native Anthropic provider against a scripted Messages API on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.providers.anthropic_messages import AnthropicProvider, messages_params
from hermes.agent.types import Usage
from hermes.errors import ContextLengthExceeded, ProviderAuthError, ProviderError, ProviderRateLimited
from hermes.testing.anthropic_upstream import AnthropicError, ScriptedAnthropic, anthropic_text, anthropic_tools

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


@pytest_asyncio.fixture
async def api() -> AsyncIterator[ScriptedAnthropic]:
    server = await ScriptedAnthropic().start()
    try:
        yield server
    finally:
        await server.stop()


@pytest_asyncio.fixture
async def provider(api: ScriptedAnthropic) -> AsyncIterator[AnthropicProvider]:
    made = AnthropicProvider(api_key="sk-ant-test", base_url=api.base_url + "/v1")
    try:
        yield made
    finally:
        await made.aclose()


async def _collect(provider: AnthropicProvider, request: ModelRequest) -> list[object]:
    return [event async for event in provider.stream(request)]


def _request(messages: list[dict[str, object]], **kwargs: object) -> ModelRequest:
    return ModelRequest(model="claude-test-1", messages=messages, **kwargs)  # type: ignore[arg-type]


async def test_text_and_thinking_stream_with_usage_that_counts_cache_reads_and_writes(
    api: ScriptedAnthropic, provider: AnthropicProvider
) -> None:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 1000,
        "output_tokens": 9,
    }
    api.enqueue(anthropic_text("Hello there Ada", thinking="she asked politely", usage=usage))
    events = await _collect(
        provider, _request([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}])
    )
    assert "".join(e.text for e in events if isinstance(e, ReasoningChunk)) == "she asked politely"
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Hello there Ada"
    usages = [e.usage for e in events if isinstance(e, UsageChunk)]
    assert usages[-1] == Usage(input_tokens=1210, output_tokens=9, total_tokens=1219, cached_input_tokens=1000)
    assert [e.reason for e in events if isinstance(e, FinishChunk)] == ["stop"]
    sent = api.requests[0]
    key_sent = sent.headers.get("x-api-key") or sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert key_sent == "sk-ant-test" and "anthropic-version" in sent.headers
    assert sent.body["stream"] is True and sent.body["model"] == "claude-test-1" and sent.body["max_tokens"] == 8192
    # the system prompt and the conversation so far are cache breakpoints
    assert sent.body["system"] == [{"type": "text", "text": "Be kind.", "cache_control": {"type": "ephemeral"}}]
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    ]


async def test_a_tool_round_trip_in_the_messages_api_shape(api: ScriptedAnthropic, provider: AnthropicProvider) -> None:
    api.enqueue(anthropic_tools([("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"})], text="Reading."))
    events = await _collect(provider, _request([{"role": "user", "content": "read both"}], tools=TOOLS))
    calls = [e for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.index, c.id, c.name) for c in calls if c.name] == [
        (0, "toolu_msg_0001_1", "read_file"),
        (1, "toolu_msg_0001_2", "read_file"),
    ]
    assert "".join(c.arguments for c in calls if c.index == 1) == '{"path": "b.py"}'
    assert [e.reason for e in events if isinstance(e, FinishChunk)] == ["tool_calls"]
    assert api.requests[0].body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }
    ]
    # the engine's next request: the assistant's calls and both results, one user turn for the results
    history = [
        {"role": "user", "content": "read both"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "A"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "B"},
    ]
    system, messages = messages_params(history)
    assert system == []
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.py"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B", "cache_control": {"type": "ephemeral"}},
    ]


async def test_thinking_blocks_go_back_with_the_message_that_called_tools(api: ScriptedAnthropic) -> None:
    provider = AnthropicProvider(api_key="k", base_url=api.base_url, thinking_budget=2048)
    try:
        api.enqueue(anthropic_tools([("read_file", {"path": "a.py"})], thinking="look at a.py first"))
        events = await _collect(provider, _request([{"role": "user", "content": "go"}], tools=TOOLS))
        call_id = next(e.id for e in events if isinstance(e, ToolCallChunk) and e.id)
        assert api.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        api.enqueue(anthropic_text("done"))
        follow = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "print(1)"},
        ]
        await _collect(provider, _request(follow, tools=TOOLS))
        assistant = api.requests[1].body["messages"][1]
        assert assistant["content"][0] == {"type": "thinking", "thinking": "look at a.py first", "signature": "sig-0"}
        assert assistant["content"][1]["type"] == "tool_use"
    finally:
        await provider.aclose()


async def test_images_and_tool_choice_map_to_their_messages_api_forms() -> None:
    _, messages = messages_params(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                ],
            }
        ]
    )
    assert messages[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert messages[0]["content"][2]["source"] == {"type": "url", "url": "https://example.com/cat.jpg"}
    provider = AnthropicProvider(api_key="k")
    forced = provider.params(_request([{"role": "user", "content": "x"}], tools=TOOLS, tool_choice="required"))
    assert forced["tool_choice"] == {"type": "any"}
    named = {"type": "function", "function": {"name": "read_file"}}
    one = provider.params(
        _request([{"role": "user", "content": "x"}], tools=TOOLS, tool_choice=named, parallel_tool_calls=False)
    )
    assert one["tool_choice"] == {"type": "tool", "name": "read_file", "disable_parallel_tool_use": True}


@pytest.mark.parametrize(
    ("error", "kind", "retryable", "status"),
    [
        (AnthropicError(529, "overloaded_error", "Overloaded", retry_after=2), ProviderError, True, 529),
        (AnthropicError(429, "rate_limit_error", "slow down"), ProviderRateLimited, True, 429),
        (AnthropicError(401, "authentication_error", "invalid x-api-key"), ProviderAuthError, False, 401),
        (
            AnthropicError(400, "invalid_request_error", "prompt is too long: 250000 tokens"),
            ContextLengthExceeded,
            False,
            400,
        ),
        (AnthropicError(500, "api_error", "boom"), ProviderError, True, 500),
        (AnthropicError(400, "invalid_request_error", "bad field"), ProviderError, False, 400),
    ],
)
async def test_errors_become_provider_errors_the_engine_can_retry(
    api: ScriptedAnthropic, provider: AnthropicProvider, error: AnthropicError, kind: type, retryable: bool, status: int
) -> None:
    api.enqueue(error)
    with pytest.raises(kind) as raised:
        await _collect(provider, _request([{"role": "user", "content": "hi"}]))
    assert raised.value.retryable is retryable and raised.value.status == status
    assert error.message in str(raised.value)
    if error.retry_after is not None:
        assert raised.value.retry_after == error.retry_after
    assert len(api.requests) == 1  # the SDK itself never retries


async def test_an_overloaded_error_inside_a_stream_is_retryable(
    api: ScriptedAnthropic, provider: AnthropicProvider
) -> None:
    from hermes.testing.anthropic_upstream import AnthropicReply

    api.enqueue(AnthropicReply((("text", "partial"),), error_event="overloaded_error"))
    with pytest.raises(ProviderError) as raised:
        await _collect(provider, _request([{"role": "user", "content": "hi"}]))
    assert raised.value.retryable and raised.value.status == 529


async def test_non_streaming_and_the_model_list(api: ScriptedAnthropic, provider: AnthropicProvider) -> None:
    api.enqueue(anthropic_tools([("read_file", {"path": "a.py"})], text="Let me look."))
    events = await provider.complete(_request([{"role": "user", "content": "hi"}], tools=TOOLS))
    assert [type(e).__name__ for e in events] == ["TextChunk", "ToolCallChunk", "UsageChunk", "FinishChunk"]
    assert "stream" not in api.requests[0].body
    assert await provider.list_models() == ["claude-test-1", "claude-test-2"]


async def test_an_unreachable_api_is_a_retryable_connection_error() -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9", connect_timeout=2)
    try:
        with pytest.raises(ProviderError) as raised:
            await _collect(provider, _request([{"role": "user", "content": "hi"}]))
        assert raised.value.retryable and "cannot reach the Anthropic API" in str(raised.value)
    finally:
        await provider.aclose()
