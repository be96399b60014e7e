"""Forking a session: copied messages, lineage titles, the parent marked branched."""

from __future__ import annotations

import pytest

from hermes.errors import MessageNotFound
from hermes.store.api import AsyncSessionStore
from hermes.store.records import MessageRecord, NewMessage, SessionRecord
from hermes.store.sqlite.state_db import SqliteSessions

CALL = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}


async def seeded(
    store: AsyncSessionStore, title: str | None = "Plan"
) -> tuple[SessionRecord, list[MessageRecord]]:
    parent = await store.create_session(
        source="tui", title=title, model="gpt-x", system_prompt="be helpful"
    )
    messages = [
        await store.append_message(parent.id, NewMessage(role="user", content="first path")),
        await store.append_message(parent.id, NewMessage(role="assistant", tool_calls=[CALL, CALL])),
        await store.append_message(
            parent.id,
            NewMessage(role="tool", content="ok", tool_call_id="c1", tool_name="terminal"),
        ),
        await store.append_message(parent.id, NewMessage(role="assistant", content="answer")),
        await store.append_message(
            parent.id, NewMessage(role="user", content=[{"type": "text", "text": "more"}])
        ),
    ]
    return await store.get_session(parent.id), messages


def comparable(message: MessageRecord) -> tuple[object, ...]:
    return (message.role, message.content, message.tool_calls, message.tool_call_id,
            message.tool_name, message.reasoning, message.finish_reason, message.timestamp,
            message.token_count)  # fmt: skip


async def test_fork_copies_every_message(store: AsyncSessionStore) -> None:
    parent, messages = await seeded(store)
    child = await store.fork_session(parent.id)

    assert child.id != parent.id
    assert child.parent_session_id == parent.id
    assert (child.source, child.model, child.system_prompt) == ("tui", "gpt-x", "be helpful")
    assert child.title == "Plan #2"
    assert child.message_count == 5
    assert child.tool_call_count == 2
    assert (child.input_tokens, child.output_tokens) == (0, 0)
    assert child.ended_at is None and child.end_reason is None

    copied = await store.get_messages(child.id)
    assert [comparable(m) for m in copied] == [comparable(m) for m in messages]
    assert all(m.session_id == child.id for m in copied)
    assert min(m.id for m in copied) > max(m.id for m in messages)
    assert await store.history(child.id) == await store.history(parent.id)
    assert (await store.list_sessions())[0].id == child.id
    if isinstance(store, SqliteSessions):
        assert store.state.integrity_check() == "ok"


async def test_parent_is_marked_branched(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store)
    await store.fork_session(parent.id)
    after = await store.get_session(parent.id)
    assert after.end_reason == "branched"
    assert after.ended_at is not None and after.ended_at >= parent.updated_at
    assert after.message_count == 5


async def test_fork_replaces_an_earlier_end_reason(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store)
    await store.end_session(parent.id, "completed")
    await store.fork_session(parent.id)
    assert (await store.get_session(parent.id)).end_reason == "branched"


async def test_fork_at_message(store: AsyncSessionStore) -> None:
    parent, messages = await seeded(store)
    child = await store.fork_session(parent.id, at_message_id=messages[1].id)
    copied = await store.get_messages(child.id)
    assert [comparable(m) for m in copied] == [comparable(m) for m in messages[:2]]
    assert child.message_count == 2
    assert child.tool_call_count == 2

    first_only = await store.fork_session(parent.id, at_message_id=messages[0].id)
    assert (first_only.message_count, first_only.tool_call_count) == (1, 0)
    assert (await store.get_session(parent.id)).message_count == 5


async def test_fork_at_unknown_message(store: AsyncSessionStore) -> None:
    parent, messages = await seeded(store)
    other = await store.create_session(source="cli")
    foreign = await store.append_message(other.id, NewMessage(role="user", content="elsewhere"))
    for bad in (999_999, foreign.id):
        with pytest.raises(MessageNotFound) as caught:
            await store.fork_session(parent.id, at_message_id=bad)
        assert caught.value.message_id == bad
        assert caught.value.session_id == parent.id
    # Nothing changed: no child, parent not branched.
    assert await store.count_sessions() == 2
    assert (await store.get_session(parent.id)).end_reason is None


async def test_fork_title_numbering(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store, title="Plan")
    assert (await store.fork_session(parent.id)).title == "Plan #2"
    assert (await store.fork_session(parent.id)).title == "Plan #3"
    third = await store.fork_session(parent.id)
    assert third.title == "Plan #4"
    # Forking a numbered child continues from the base.
    assert (await store.fork_session(third.id)).title == "Plan #5"
    # Unrelated titles that merely share a prefix do not count.
    await store.create_session(source="cli", title="Plan #99 notes")
    await store.create_session(source="cli", title="Planning #40")
    assert (await store.fork_session(parent.id)).title == "Plan #6"


async def test_fork_of_a_numbered_title_without_its_base(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store, title="x #2")
    assert (await store.fork_session(parent.id)).title == "x #3"


async def test_fork_title_skips_taken_numbers(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store, title="Report")
    await store.create_session(source="cli", title="Report #2")
    assert (await store.fork_session(parent.id)).title == "Report #3"


async def test_fork_of_an_untitled_session(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store, title=None)
    first = await store.fork_session(parent.id)
    second = await store.fork_session(parent.id)
    suffix = parent.id[-6:]
    assert first.title == f"Session {suffix} #2"
    assert second.title == f"Session {suffix} #3"


async def test_fork_with_title_and_source(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store)
    child = await store.fork_session(parent.id, title="Alternative", source="api_server")
    assert (child.title, child.source) == ("Alternative", "api_server")


async def test_child_and_parent_diverge(store: AsyncSessionStore) -> None:
    parent, _ = await seeded(store)
    child = await store.fork_session(parent.id)
    await store.append_message(child.id, NewMessage(role="user", content="only in child"))
    assert (await store.get_session(child.id)).message_count == 6
    assert (await store.get_session(parent.id)).message_count == 5
    assert "only in child" not in [m.content for m in await store.get_messages(parent.id)]
    hits = await store.search("child")
    assert [hit.session.id for hit in hits] == [child.id]


async def test_fork_of_an_empty_session(store: AsyncSessionStore) -> None:
    parent = await store.create_session(source="cli", title="Empty")
    child = await store.fork_session(parent.id)
    assert (child.message_count, child.tool_call_count) == (0, 0)
    assert await store.get_messages(child.id) == []
