"""Benchmark of the SQLite session store at scale.

    python bench/bench_store.py [--sessions 100000 --messages 1000000]

Builds `state.db` in a temporary folder (bulk-loaded through `executemany` on the store's
own connection, so the schema, triggers and FTS index are the real ones), then times the
public store methods and prints median and p95 per operation against its target:

    list_sessions(limit=50)          < 20 ms
    search (common word, rare word)  < 100 ms
    fork of a 10,000-message session < 500 ms

Message text is drawn from a Zipf-like vocabulary; two marker words are planted at known
rates ("common" in about 10% of messages, "rare" in a handful) so the match counts are
printed alongside the timings.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hermes.store.records import NewMessage  # noqa: E402
from hermes.testing.state_db import SyncStateDb  # noqa: E402

FORK_MESSAGES = 10_000
COMMON_WORD = "docker"
COMMON_RATE = 0.10
RARE_WORD = "zanzibar"
RARE_COUNT = 12
VERY_COMMON_WORD = "file"  # the most frequent vocabulary word: a worst case, no target
BATCH = 50_000
SOURCES = ("cli", "tui", "api_server")

_VOCABULARY = (
    "file the a to of and in is for that it with this on be run test code error change "
    "function python value line return you can we not add use fix list config build "
    "path output check make update need should data call type string server request "
    "branch commit merge release module import class method variable loop async await "
    "session message token model prompt search index query table column database write "
    "read open close start stop install package version cache memory thread process "
    "network socket port host client response header body json yaml toml parse format "
    "debug trace log warning info level option flag argument default setting user group"
).split()


def _texts(rng: random.Random, count: int) -> Iterator[str]:
    weights = [1.0 / (rank + 1) for rank in range(len(_VOCABULARY))]
    cumulative = list(itertools.accumulate(weights))
    rare_at = set(rng.sample(range(count), RARE_COUNT))
    for index in range(count):
        words = rng.choices(_VOCABULARY, cum_weights=cumulative, k=rng.randint(6, 24))
        if rng.random() < COMMON_RATE:
            words.insert(rng.randrange(len(words)), COMMON_WORD)
        if index in rare_at:
            words.insert(rng.randrange(len(words)), RARE_WORD)
        yield " ".join(words)


def build(store: SyncStateDb, sessions: int, messages: int, seed: int) -> str:
    """Bulk-load `sessions` sessions holding `messages` messages in total, plus one
    session of FORK_MESSAGES messages (returned) for the fork benchmark."""
    rng = random.Random(seed)
    # Setup only: the measured operations below all go through public methods.
    db = store.executor.connection()
    start = time.time() - sessions * 30.0
    counts = [messages // sessions] * sessions
    for index in range(messages % sessions):
        counts[index] += 1
    session_rows = []
    for index, count in enumerate(counts):
        started = start + index * 30.0
        session_rows.append(
            (f"bench_{index:07d}", SOURCES[index % len(SOURCES)], f"Bench session {index}",
             "bench-model", started, started + 20.0, count)
        )  # fmt: skip
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO sessions (id, source, title, model, started_at, updated_at, message_count) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        session_rows,
    )
    db.execute("COMMIT")

    def message_rows() -> Iterator[tuple[Any, ...]]:
        texts = _texts(rng, messages)
        for (session_id, _, _, _, started, _, count) in session_rows:
            for turn in range(count):
                yield (session_id, "user" if turn % 2 == 0 else "assistant", next(texts),
                       started + turn)  # fmt: skip

    rows = message_rows()
    while batch := list(itertools.islice(rows, BATCH)):
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            batch,
        )
        db.execute("COMMIT")

    fork_source = store.create_session(source="cli", title="Big session", model="bench-model")
    fork_texts = _texts(random.Random(seed + 1), FORK_MESSAGES)
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
        ((fork_source.id, "user" if i % 2 == 0 else "assistant", text, time.time())
         for i, text in enumerate(fork_texts)),
    )  # fmt: skip
    db.execute(
        "UPDATE sessions SET message_count = ? WHERE id = ?", (FORK_MESSAGES, fork_source.id)
    )
    db.execute("COMMIT")
    store.optimize()
    return fork_source.id


def measure(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """(median, p95) wall time in milliseconds over `runs` calls, after one warm-up."""
    fn()
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples), p95


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as folder:
        path = Path(folder) / "state.db"
        store = SyncStateDb(path)
        began = time.perf_counter()
        fork_id = build(store, args.sessions, args.messages, args.seed)
        setup = time.perf_counter() - began
        size_mb = store.stats().db_bytes / 1e6
        print(
            f"setup: {args.sessions:,} sessions, {args.messages + FORK_MESSAGES:,} messages "
            f"in {setup:.1f} s; state.db {size_mb:.0f} MB (SQLite {sqlite3.sqlite_version})"
        )

        db = store.executor.connection()

        def matches(word: str) -> int:
            return int(db.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,)
            ).fetchone()[0])  # fmt: skip

        scratch = store.create_session(source="cli", title="append target")
        rows: list[tuple[str, float, float, str]] = []

        def add(name: str, fn: Callable[[], object], runs: int, target: str) -> None:
            median, p95 = measure(fn, runs)
            rows.append((name, median, p95, target))

        add("list_sessions(limit=50)", lambda: store.list_sessions(limit=50), args.runs * 3,
            "< 20 ms")  # fmt: skip
        add("list_sessions(limit=50, offset=5000)",
            lambda: store.list_sessions(limit=50, offset=5000), args.runs, "-")  # fmt: skip
        add("list_sessions(source='tui')", lambda: store.list_sessions(source="tui"),
            args.runs, "-")  # fmt: skip
        for label, word, target in (
            ("rare", RARE_WORD, "< 100 ms"),
            ("common", COMMON_WORD, "< 100 ms"),
            ("very common", VERY_COMMON_WORD, "-"),
        ):
            hits = matches(word)
            add(f"search {label} '{word}' ({hits:,} matches)", lambda w=word: store.search(w),
                args.runs, target)  # fmt: skip
        add("search common, source='tui'", lambda: store.search(COMMON_WORD, source="tui"),
            args.runs, "-")  # fmt: skip
        add(f"fork_session ({FORK_MESSAGES:,} messages)", lambda: store.fork_session(fork_id),
            max(5, args.runs // 4), "< 500 ms")  # fmt: skip
        add("append_message (durable commit)",
            lambda: store.append_message(scratch.id, NewMessage(role="user", content="hello")),
            args.runs, "-")  # fmt: skip
        add("count_sessions()", store.count_sessions, args.runs, "-")
        add("stats()", store.stats, max(5, args.runs // 4), "-")
        store.close()

    width = max(len(row[0]) for row in rows)
    print(f"{'operation':<{width}}  {'median ms':>9}  {'p95 ms':>8}  target")
    for name, median, p95, target in rows:
        print(f"{name:<{width}}  {median:9.2f}  {p95:8.2f}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
