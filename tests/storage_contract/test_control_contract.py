"""The control channel: messages to the instance that owns a run, and their replies."""

from __future__ import annotations

import asyncio

import pytest

from hermes.store.api import ControlChannel, ControlUnanswered, Storage
from hermes.store.records import ControlMessage, ControlReply


async def _echo(message: ControlMessage) -> ControlReply:
    if message.op == "boom":
        raise RuntimeError("handler failed")
    return ControlReply(ok=True, data={"op": message.op, "run_id": message.run_id, "args": message.args})


async def test_a_message_to_this_instance_reaches_its_handler(storage: Storage) -> None:
    assert isinstance(storage.control, ControlChannel)
    await storage.control.serve(_echo)
    message = ControlMessage("stop", "run_1", {"all": True, "choice": "once"})
    reply = await storage.control.request(storage.instance_id, message, timeout=5)
    assert reply.ok
    assert reply.data == {"op": "stop", "run_id": "run_1", "args": {"all": True, "choice": "once"}}


async def test_postgres_routes_messages_between_instances(pg_storage: Storage, request: pytest.FixtureRequest) -> None:
    from hermes.store.postgres import open_postgres_storage

    storage = pg_storage
    other = await open_postgres_storage(request.getfixturevalue("pg_url"))
    try:
        await other.control.serve(_echo)
        reply = await storage.control.request(other.instance_id, ControlMessage("approval", "run_2"), timeout=5)
        assert reply.ok and reply.data["run_id"] == "run_2"
        failed = await storage.control.request(other.instance_id, ControlMessage("boom", "run_2"), timeout=5)
        assert not failed.ok and failed.code == "internal_error" and failed.message == "handler failed"
        # Many requests at once each get their own reply.
        replies = await asyncio.gather(
            *(storage.control.request(other.instance_id, ControlMessage("stop", f"run_{i}"), timeout=5)
              for i in range(10))
        )
        assert [r.data["run_id"] for r in replies] == [f"run_{i}" for i in range(10)]
        # Nobody listens for a dead instance: no reply within the timeout.
        with pytest.raises(ControlUnanswered):
            await storage.control.request("inst_" + "0" * 24, ControlMessage("stop", "run_3"), timeout=0.3)
        await other.aclose()
        with pytest.raises(ControlUnanswered):
            await storage.control.request(other.instance_id, ControlMessage("stop", "run_4"), timeout=0.3)
    finally:
        await other.aclose()


async def test_sqlite_answers_for_another_instance_at_once(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    await storage.control.serve(_echo)
    reply = await storage.control.request("inst_" + "0" * 24, ControlMessage("stop", "run_1"), timeout=5)
    assert not reply.ok and reply.code == "run_not_active"
