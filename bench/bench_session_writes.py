"""Cost of `append_message` through the async session interface, SQLite vs PostgreSQL.

    python bench/bench_session_writes.py [--n 2000] [--database-url postgresql://…]

Per backend: one append on its own (SQLite: one BEGIN IMMEDIATE … COMMIT; PostgreSQL:
one autocommit statement on a pooled connection), and appends inside `transaction()`
blocks of 1 and of 10 (the cost per append, the block's commit included). Without
`--database-url` a throwaway PostgreSQL server is started (`hermes.testing.postgres`),
measured twice: with the tests' settings (fsync off) and durable (fsync and synchronous
commit on). SQLite runs on a real file
with the store's settings (WAL, synchronous=NORMAL: no fsync per commit).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

from hermes.store.api import Storage
from hermes.store.records import NewMessage


async def timed(n: int, op: Callable[[], Awaitable[object]], per_call: int = 1) -> list[float]:
    """Microseconds per append for each of n calls of `op` (which appends per_call messages)."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await op()
        samples.append((time.perf_counter() - start) * 1e6 / per_call)
    return samples


def line(label: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p50 = statistics.median(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return f"  {label:<34} mean {statistics.fmean(samples):7.0f} µs   p50 {p50:7.0f} µs   p99 {p99:7.0f} µs"


async def measure(name: str, storage: Storage, n: int) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli", title="bench")
    message = NewMessage(role="assistant", content="a reply of ordinary length " * 8)

    async def plain() -> None:
        await store.append_message(session.id, message)

    async def block(size: int) -> None:
        async with store.transaction():
            for _ in range(size):
                await store.append_message(session.id, message)

    await timed(50, plain)  # warm-up: pool, caches, prepared plans
    print(name)
    print(line("append_message alone", await timed(n, plain)))
    print(line("append_message in transaction() of 1", await timed(n, lambda: block(1))))
    print(line("append_message in transaction() of 10", await timed(n // 10, lambda: block(10), per_call=10)))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--database-url", help="an existing PostgreSQL database (its schema gets migrated)")
    args = parser.parse_args()

    from hermes.store.postgres import open_postgres_storage
    from hermes.store.sqlite.assemble import open_sqlite_storage

    with tempfile.TemporaryDirectory() as home:
        sqlite = open_sqlite_storage(home)
        try:
            await measure("SQLite (state.db, WAL, synchronous=NORMAL)", sqlite, args.n)
        finally:
            await sqlite.aclose()

    if args.database_url:
        async with await open_postgres_storage(args.database_url) as pg:
            await measure(f"PostgreSQL {pg.location}", pg, args.n)
        return

    import psycopg

    from hermes.testing.postgres import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL binaries found; pass --database-url")
    for durable, label in ((False, "fsync off (the tests' server)"), (True, "durable (fsync, synchronous commit)")):
        server = PostgresServer.start(bindir, durable=durable)
        try:
            with psycopg.connect(server.admin_url, autocommit=True) as conn:
                conn.execute("CREATE DATABASE bench")
            async with await open_postgres_storage(server.url("bench")) as pg:
                await measure(f"PostgreSQL 15, loopback TCP, {label}", pg, args.n)
        finally:
            server.stop()

if __name__ == "__main__":
    asyncio.run(main())
