"""A request's size and JSON from what earlier requests shared (hermes/agent/prefix_memo.py):
always equal to computing them afresh, whatever the lists share, branch or drop."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from hermes.agent.context import estimate_tokens, request_tokens
from hermes.agent.prefix_memo import PrefixMemo
from hermes.agent.providers.openai_compat import OpenAICompatProvider


def _check(provider: OpenAICompatProvider, messages: list[Any], tools: list[Any] | None = None) -> None:
    body: dict[str, Any] = {"model": "m", "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    assert json.loads(provider._encode(body)) == body
    assert request_tokens(messages, tools) == estimate_tokens(messages, tools)


def test_shared_prefixes_branches_and_shorter_lists_give_the_fresh_answer() -> None:
    provider = OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", api_key="k")
    rng = random.Random(34)
    pool = [{"role": "user" if i % 2 else "assistant", "content": f"m{i} " + "é" * rng.randint(0, 9)}
            for i in range(40)]  # fmt: skip
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    pool.append({"role": "assistant", "content": None, "tool_calls": [call]})
    for _ in range(1500):
        first = pool[rng.randint(0, 2)]  # a few "sessions", each keyed by its first message
        messages = [{"role": "system", "content": "s"}, first, *rng.sample(pool, rng.randint(0, 10))]
        _check(provider, messages, [{"type": "function", "function": {"name": "f"}}] if rng.random() < 0.2 else None)
        _check(provider, messages[: rng.randint(0, len(messages))])


def test_a_growing_history_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.agent.providers import openai_compat

    provider = OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", api_key="k")
    history = [{"role": "user", "content": f"q{i}"} for i in range(50)]
    encoded: list[Any] = []
    original = openai_compat._compact

    def counting(value: Any) -> bytes:
        encoded.append(value)
        return original(value)

    monkeypatch.setattr(openai_compat, "_compact", counting)
    for turn in range(3):
        request = [{"role": "system", "content": "s"}, *history, {"role": "user", "content": f"new {turn}"}]
        _check(provider, request)
        history.append({"role": "user", "content": f"new {turn}"})  # as the store gives it back: a new dict
    messages = [value for value in encoded if isinstance(value, dict) and "role" in value]
    assert len(messages) == (1 + 51) + (1 + 2) + (1 + 2)  # then only the system prompt and what is new


def test_the_memo_keeps_its_bounds() -> None:
    memo: PrefixMemo[int] = PrefixMemo(entries=2, max_weight=10)
    lists = [[object(), object()] for _ in range(3)]
    for index, kept in enumerate(lists):
        memo.keep(kept, index, weight=4)
    assert memo.find(lists[0]) is None  # the oldest went
    assert memo.find(lists[2]) == (2, 2)
    assert memo.find([lists[2][0]]) == (1, 2)  # shares the first message only
    memo.keep(lists[0], 9, weight=11)  # heavier than the whole memo: not kept
    assert memo.find(lists[0]) is None
