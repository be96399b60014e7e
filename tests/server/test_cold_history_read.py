"""The first turn of a long session reads its history off the event loop (issue 34).

A session of 5,000 messages (written straight into state.db) gets its first turn in this
server process: `SessionHistories` reads the history from the store, in a worker thread
on a connection of its own (`hermes.store.sqlite.history_reader`), and makes it
model-ready in a worker thread too. Meanwhile `GET /api/sessions` (a statement on the
shared connection) keeps being answered: requests sent and answered inside the read's
own time span, each in a small part of it. With the read on the loop, the read is a
single step of the loop and no request can be answered inside it.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from _api_harness import SERVER_KEY, MakeServer

from hermes.agent.history import LARGE_READ
from hermes.server.http.state import STORAGE
from hermes.store.records import NewMessage
from hermes.testing.upstream import text_reply

MESSAGES = 5000
SESSION = "long-session"


def _content(i: int) -> str:
    return f"message {i}: the quick brown fox jumps over the lazy dog"


async def test_first_turn_of_a_long_session_leaves_the_loop_free(make_server: MakeServer) -> None:
    srv = await make_server(server_key=SERVER_KEY, context_window=10_000_000)
    srv.upstream.enqueue(text_reply("done"))
    sessions = srv.sessions
    sessions.create_session(source="api_server", session_id=SESSION, system_prompt="You are a test agent.")
    with sessions.transaction():
        for i in range(MESSAGES):
            role = "user" if i % 2 == 0 else "assistant"
            sessions.append_message(SESSION, NewMessage(role=role, content=_content(i)))

    histories = srv.agent.histories
    load = histories.load
    spans: list[tuple[float, float]] = []

    async def timed_load(session_id: str) -> Any:
        started = time.perf_counter()
        try:
            return await load(session_id)
        finally:
            spans.append((started, time.perf_counter()))

    histories.load = timed_load
    probes: list[tuple[float, float]] = []
    turn_done = asyncio.Event()

    async def probe() -> None:
        while not turn_done.is_set():
            started = time.perf_counter()
            resp = await srv.client.get("/api/sessions", headers=srv.auth, timeout=30)
            assert resp.status == 200, await resp.text()
            await resp.read()
            probes.append((started, time.perf_counter()))

    async def turn() -> Any:
        try:
            resp = await asyncio.wait_for(srv.client.post(
                "/v1/chat/completions", headers={**srv.auth, "X-Hermes-Session-Id": SESSION},
                json={"model": "hermes-agent", "messages": [{"role": "user", "content": "and now?"}]},
            ), 60)  # fmt: skip
            assert resp.status == 200, await resp.text()
            return await resp.json()
        finally:
            turn_done.set()

    prober = asyncio.create_task(probe())
    await asyncio.sleep(0.05)  # the prober is under way before the turn starts
    body = await turn()
    await asyncio.wait_for(prober, 30)

    assert body["choices"][0]["message"]["content"] == "done"
    # The whole history reached the model, in order.
    sent = srv.upstream.requests[-1].messages
    assert len(sent) == 1 + MESSAGES + 1
    assert [m["content"] for m in sent[1:-1]] == [_content(i) for i in range(MESSAGES)]
    assert histories.reads["full"] == 1
    assert MESSAGES >= LARGE_READ  # the read this test is about is a large one

    assert len(spans) == 1
    read_start, read_end = spans[0]
    read = read_end - read_start
    inside = [end - start for start, end in probes if start >= read_start and end <= read_end]
    # Requests were sent and answered while the read went on, most in a small part of it
    # (one may wait out a scheduling stall on a loaded machine; a read on the event loop
    # answers none inside it).
    slowest = max(inside, default=0.0)
    print(f"read {read * 1000:.0f} ms; {len(inside)} requests answered inside it, slowest {slowest * 1000:.1f} ms")
    assert len(inside) >= 3, (len(inside), read, len(probes))
    assert statistics.median(inside) < read / 4, (statistics.median(inside), read, inside)


async def test_a_large_read_equals_the_inline_one_and_uses_its_own_connection(make_server: MakeServer) -> None:
    srv = await make_server()
    sessions = srv.sessions
    sessions.create_session(source="api_server", session_id="s")
    with sessions.transaction():
        for i in range(40):
            sessions.append_message("s", NewMessage(role="user" if i % 2 == 0 else "assistant", content=_content(i)))
    store = srv.app[STORAGE].sessions
    assert sessions.history_reader is not None
    first = sessions.get_messages("s")[5].id
    inline = await store.history_since("s", first)
    large = await store.history_since("s", first, large=True)
    assert large == inline and len(large) == 35
    assert sessions.history_reader._rules is not None  # its connection opened for the large read
