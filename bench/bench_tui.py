"""Headless benchmarks of the chat TUI (run: `.venv/bin/python bench/bench_tui.py`).

1. streaming: 10,000 text deltas at 2,000 per second go through the same renderer a
   turn uses; we measure the lag between the last delta and its text being on screen
   (in the rendered screen lines), the worst event-loop stall while streaming, and the
   number of Markdown renders the coalescing needed.
2. resume: a stored session of 5,000 messages (answers in Markdown, tool calls) is
   opened by `make_app(session_id=...)`; we measure from app start to its last message
   being on screen, and switching to it from a running app.
3. memory: peak RSS of the process after both.

Targets: lag < 250 ms, open < 1 s, memory < 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes.agent.events import TextDelta, TurnCompleted, TurnStarted
from hermes.agent.factory import build_agent
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnResult
from hermes.config import Settings
from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb, open_sync_state
from hermes.tui.app import HermesApp, make_app
from hermes.tui.widgets.assistant_message import AssistantMessage

MARKER = "ENDMARK"


def screen_text(app: HermesApp) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


async def until_on_screen(app: HermesApp, text: str) -> None:
    """Wait until `text` is in the rendered screen (checked every 10 ms: a full render is not free)."""
    while not (app.transcript.query(AssistantMessage) and text in screen_text(app)):
        await asyncio.sleep(0.01)


def build(home: Path, store: SyncStateDb, **kwargs: object) -> HermesApp:
    settings = Settings(home=home, base_url="http://127.0.0.1:9/v1", model="bench-model", api_key="x")
    sessions = store.sessions
    agent = build_agent(settings, sessions, tools=ToolRegistry())  # no turn is run: events are fed directly
    return make_app(agent, sessions, settings, cwd=str(home), **kwargs)  # type: ignore[arg-type]


def delta_stream(count: int) -> list[str]:
    """Realistic deltas: words, paragraph breaks, a code block now and then."""
    out: list[str] = []
    for i in range(count - 1):
        if i % 400 == 200:
            out.append("\n\n```python\n")
        elif i % 400 == 230:
            out.append("\n```\n\n")
        elif i % 60 == 59:
            out.append(f"word{i}.\n\n")
        else:
            out.append(f"wörd{i} " if i % 7 == 0 else f"word{i} ")
    out.append(f" {MARKER}")
    return out


async def bench_streaming(
    home: Path, store: SyncStateDb, count: int, rate: float, size: tuple[int, int]
) -> dict[str, float]:
    app = build(home, store)
    deltas = delta_stream(count)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        renderer = app.begin_turn("stream a long answer")
        renderer.handle(TurnStarted("bench", "bench-model"))
        stalls: list[float] = []

        async def watch_loop() -> None:
            # The event loop's responsiveness: how late a 10 ms sleep wakes up.
            while True:
                before = time.perf_counter()
                await asyncio.sleep(0.01)
                stalls.append(time.perf_counter() - before - 0.01)

        watcher = asyncio.create_task(watch_loop())
        start = time.perf_counter()
        sent = 0
        while sent < count:
            due = min(count, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                renderer.handle(TextDelta(deltas[sent]))
                sent += 1
            await asyncio.sleep(0.001)
        last_sent = time.perf_counter()
        send_seconds = last_sent - start
        message = app.transcript.query_one(AssistantMessage)
        while not message.rendered_text.endswith(MARKER):
            await asyncio.sleep(0.002)
        while MARKER not in screen_text(app):
            await asyncio.sleep(0.005)
        lag = time.perf_counter() - last_sent
        watcher.cancel()
        chunks = message.chunks
        blocks = sum(len(chunk.children) for chunk in chunks)
        renderer.handle(TurnCompleted(TurnResult("bench", "completed", "".join(deltas))))
        assert message.text == "".join(deltas)
    return {
        "deltas": count,
        "rate_per_s": rate,
        "send_seconds": round(send_seconds, 3),
        "lag_ms": round(lag * 1000, 1),
        "loop_stall_max_ms": round(max(stalls) * 1000, 1) if stalls else 0.0,
        "loop_stall_p95_ms": round(statistics.quantiles(stalls, n=20)[-1] * 1000, 1) if len(stalls) > 20 else 0.0,
        "markdown_chunks": len(chunks),
        "markdown_blocks": blocks,
    }


def seed_long_session(store: SyncStateDb, messages: int) -> str:
    record = store.create_session(source="tui", model="bench-model", title="A very long session")
    answer = (
        "Here is **what** I found:\n\n- item one\n- item two with `code`\n\n"
        "```python\ndef f(x):\n    return x * 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    n = 0
    i = 0
    while n < messages:
        store.append_message(record.id, NewMessage(role="user", content=f"question {i}: how does part {i} work?"))
        n += 1
        if i % 10 == 5 and n + 3 <= messages:
            call_id = f"call_{i}"
            store.append_message(
                record.id,
                NewMessage(
                    role="assistant",
                    content="Let me look.",
                    tool_calls=[
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/part{i}.py"})},
                        }
                    ],
                ),
            )
            store.append_message(
                record.id, NewMessage(role="tool", content="line\n" * 30, tool_call_id=call_id, tool_name="read_file")
            )
            n += 2
        if n < messages:
            store.append_message(record.id, NewMessage(role="assistant", content=f"Answer {i}. {answer}"))
            n += 1
        i += 1
    return record.id


async def bench_resume(home: Path, store: SyncStateDb, messages: int, size: tuple[int, int]) -> dict[str, float]:
    sid = seed_long_session(store, messages)
    last = store.get_messages(sid)[-1]
    last_text = str(last.content)[:12]

    settings = Settings(home=home, base_url="http://127.0.0.1:9/v1", model="bench-model", api_key="x")
    sessions = store.sessions
    agent = build_agent(settings, sessions, tools=ToolRegistry())  # built before the clock starts, as in `hermes chat`
    start = time.perf_counter()
    app = make_app(agent, sessions, settings, session_id=sid, cwd=str(home))
    async with app.run_test(size=size) as pilot:
        await until_on_screen(app, last_text)
        open_seconds = time.perf_counter() - start
        # Switching to it again from the running app (what the session picker does).
        app.new_session()
        await pilot.pause()
        start = time.perf_counter()
        app.open_session(sid)
        await until_on_screen(app, last_text)
        switch_seconds = time.perf_counter() - start
    return {
        "messages": messages,
        "open_seconds": round(open_seconds, 3),
        "switch_seconds": round(switch_seconds, 3),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=2_000.0)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--width", type=int, default=120)
    parser.add_argument("--height", type=int, default=40)
    args = parser.parse_args()
    size = (args.width, args.height)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store = open_sync_state(home / "state.db")
        try:
            streaming = await bench_streaming(home, store, args.deltas, args.rate, size)
            resume = await bench_resume(home, store, args.messages, size)
        finally:
            store.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {"streaming": streaming, "resume": resume, "peak_rss_mb": round(rss_mb, 1)}
    print(json.dumps(report, indent=2))
    ok = streaming["lag_ms"] < 250 and resume["open_seconds"] < 1.0 and rss_mb < 300
    print("PASS" if ok else "FAIL", "(targets: lag < 250 ms, open < 1 s, peak RSS < 300 MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
