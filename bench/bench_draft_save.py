"""Cost of saving streamed text as a draft: per delta, and per draft write.

    python bench/bench_draft_save.py [--deltas 200000] [--writes 200]

Per delta the engine calls `TurnRecorder.streamed()`, which must cost a clock read and
a comparison (target: < 2 µs per delta on top of the engine's own work). A draft
write (`SyncStateDb.save_draft` on a real file in a temporary folder, one
transaction) happens at most once a second per streaming turn (target: < 5 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from hermes.agent._turn_recorder import TurnRecorder
from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb

DELTA_TARGET_US = 2.0
WRITE_TARGET_MS = 5.0


async def per_delta(store: SyncStateDb, deltas: int) -> float:
    session = store.create_session(source="cli")
    recorder = TurnRecorder(store.sessions, session.id)
    await recorder.record(NewMessage(role="user", content="bench"))
    parts: list[str] = []
    started = time.perf_counter()
    for i in range(deltas):
        parts.append("token ")
        recorder.streamed(parts)
        if i % 5000 == 0:
            await asyncio.sleep(0)  # let a due timer run, as a real stream would
    elapsed = time.perf_counter() - started
    await recorder.end("completed")
    return elapsed / deltas * 1e6


def per_write(store: SyncStateDb, writes: int) -> list[float]:
    session = store.create_session(source="cli")
    turn = store.begin_turn(session.id)
    store.append_message(session.id, NewMessage(role="user", content="bench"), turn_id=turn.id)
    text = ""
    times: list[float] = []
    for _ in range(writes):
        text += "token " * 40
        started = time.perf_counter()
        store.save_draft(turn.id, text)
        times.append((time.perf_counter() - started) * 1e3)
    store.end_turn(turn.id, "completed")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, SyncStateDb(Path(folder) / "state.db") as store:
        delta_us = asyncio.run(per_delta(store, args.deltas))
        writes = per_write(store, args.writes)
    print(f"streamed() per delta: {delta_us:.2f} µs (target < {DELTA_TARGET_US} µs)")
    print(
        f"save_draft per write: median {statistics.median(writes):.2f} ms, max {max(writes):.2f} ms "
        f"(target < {WRITE_TARGET_MS} ms; at most one a second per turn)"
    )


if __name__ == "__main__":
    main()
