"""Messages on both backends: round-trips, counters, paging, history shape."""

from __future__ import annotations

from typing import Any

from hermes.store.api import AsyncSessionStore
from hermes.store.records import NewMessage

PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "What is in this picture? ünïcødé ✓"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    {"type": "text", "text": ""},
]
TOOL_CALLS: list[dict[str, Any]] = [
    {"id": "call_1", "type": "function",
     "function": {"name": "terminal", "arguments": '{"command": "ls -la"}'}},
    {"id": "call_2", "type": "function",
     "function": {"name": "read_file", "arguments": '{"path": "a \\"quoted\\" name"}'}},
]  # fmt: skip


async def test_append_returns_what_get_messages_returns(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    parts = [dict(part) for part in PARTS]
    returned = await store.append_message(
        session.id,
        NewMessage(role="user", content=parts, reasoning="r", finish_reason="stop", token_count=7),
    )
    parts.append({"type": "text", "text": "mutated after append"})
    (stored,) = await store.get_messages(session.id)
    assert returned == stored
    assert stored.content == PARTS
    assert (stored.reasoning, stored.finish_reason, stored.token_count) == ("r", "stop", 7)
    assert stored.to_json()["object"] == "message"


async def test_content_of_another_type_is_rejected(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    try:
        bad = NewMessage(role="user", content={"a": 1})  # type: ignore[arg-type]
        await store.append_message(session.id, bad)
    except TypeError:
        pass
    else:
        raise AssertionError("a dict content should be rejected")
    assert (await store.get_session(session.id)).message_count == 0


async def test_tool_calls_round_trip_and_counts(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await store.append_message(session.id, NewMessage(role="user", content="list files"))
    call = await store.append_message(
        session.id, NewMessage(role="assistant", content=None, tool_calls=TOOL_CALLS)
    )
    await store.append_message(
        session.id,
        NewMessage(role="tool", content="a.txt", tool_call_id="call_1", tool_name="terminal"),
    )
    await store.append_message(
        session.id,
        NewMessage(role="tool", content="text", tool_call_id="call_2", tool_name="read_file"),
    )
    await store.append_message(
        session.id, NewMessage(role="assistant", content="done", tool_calls=TOOL_CALLS[:1])
    )
    record = await store.get_session(session.id)
    assert record.message_count == 5
    assert record.tool_call_count == 3
    assert record.updated_at >= call.timestamp
    messages = await store.get_messages(session.id)
    assert messages[1].tool_calls == TOOL_CALLS
    assert messages[1].content is None
    assert messages[2].tool_call_id == "call_1" and messages[2].tool_name == "terminal"
    assert messages[0].tool_calls is None


async def test_get_messages_order_limit_offset(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    other = await store.create_session(source="cli")
    for index in range(6):
        await store.append_message(session.id, NewMessage(role="user", content=f"m{index}"))
        await store.append_message(other.id, NewMessage(role="user", content=f"other{index}"))
    all_messages = await store.get_messages(session.id)
    assert [m.content for m in all_messages] == [f"m{i}" for i in range(6)]
    assert [m.id for m in all_messages] == sorted(m.id for m in all_messages)
    timestamps = [m.timestamp for m in all_messages]
    assert timestamps == sorted(timestamps)
    assert [m.content for m in await store.get_messages(session.id, limit=2)] == ["m0", "m1"]
    assert [m.content for m in await store.get_messages(session.id, limit=2, offset=3)] == ["m3", "m4"]
    assert [m.content for m in await store.get_messages(session.id, offset=5)] == ["m5"]
    assert await store.get_messages(session.id, offset=6) == []


async def test_history_is_ready_to_resend(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli", system_prompt="you are hermes")
    await store.append_message(session.id, NewMessage(role="user", content=PARTS))
    await store.append_message(
        session.id,
        NewMessage(role="assistant", content=None, tool_calls=TOOL_CALLS[:1], reasoning="think"),
    )
    await store.append_message(
        session.id,
        NewMessage(role="tool", content="a.txt", tool_call_id="call_1", tool_name="terminal"),
    )
    await store.append_message(session.id, NewMessage(role="assistant", content="There is a.txt"))
    assert await store.history(session.id) == [
        {"role": "user", "content": PARTS},
        {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS[:1]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "call_1", "name": "terminal"},
        {"role": "assistant", "content": "There is a.txt"},
    ]


async def test_from_openai_round_trip(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="api_server")
    sent = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": TOOL_CALLS},
        {"role": "tool", "content": "out", "tool_call_id": "call_1", "name": "terminal"},
        {"role": "tool", "content": "text", "tool_call_id": "call_2", "name": "read_file"},
    ]
    for message in sent:
        await store.append_message(session.id, NewMessage.from_openai(message))
    assert await store.history(session.id) == sent
