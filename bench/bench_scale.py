"""hermes serve scaled out: SQLite vs PostgreSQL, one worker, two workers, two instances.

    python bench/bench_scale.py [--requests 200] [--streams 200] [--chunks 500]
                                [--chunk-delay 0.001] [--database-url URL] [--json]

Processes: the scripted upstream of `bench_server.py`, PostgreSQL (a throwaway server
started from the installed binaries with PostgreSQL's durable defaults — fsync and
synchronous_commit on, unless `--pg-no-fsync` — or the one `--database-url` names), and,
one configuration after another:

- `sqlite`: `hermes serve` on the SQLite files (the embedded default);
- `pg`: `hermes serve` on PostgreSQL;
- `pg-2-workers`: `hermes serve --workers 2` on PostgreSQL (one port);
- `pg-2-instances`: two `hermes serve` processes on PostgreSQL, on two ports; the client
  sends request i to instance i % 2, as a round-robin load balancer would.

Each configuration is measured against the direct-upstream baseline taken in the same
run, right before it:

1. Non-streamed added latency: the same chat completion sent straight to the upstream
   and through hermes, interleaved, one at a time; added = median(hermes) - median(direct).
2. A burst of `--streams` concurrent streaming chat completions of `--chunks` chunks:
   time to the first content chunk p50/p99 and aggregate chunks/s, for hermes and for
   the same burst sent straight to the upstream.

hermes sets no durability of its own on PostgreSQL, so `fsync` and `synchronous_commit`
as hermes' pooled connections see them are measured and printed with the results: with
both `on` (the default here), every PostgreSQL commit waits for its WAL flush, and "pg
over sqlite" is the price of durable commits (SQLite runs WAL with synchronous=NORMAL).

Targets (exit status 1 when one is missed):
- PostgreSQL adds <= 2 ms per non-streamed request over SQLite (pg vs sqlite added latency);
- with 2 workers, the burst's first-chunk p50 is <= 1.5x the direct baseline's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from bench_server import CHUNK_CHARS, KEY, big_text_chars, chat_body, pct, raise_fd_limit, read_stream, start

PG_OVER_SQLITE_TARGET_MS = 2.0
WORKERS_TTFC_TARGET_RATIO = 1.5


@dataclass
class Config:
    name: str
    database: bool
    """On PostgreSQL (else the SQLite files)."""
    workers: int = 1
    instances: int = 1


CONFIGS = (
    Config("sqlite", database=False),
    Config("pg", database=True),
    Config("pg-2-workers", database=True, workers=2),
    Config("pg-2-instances", database=True, instances=2),
)


@dataclass
class Running:
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    def url(self, i: int) -> str:
        return self.urls[i % len(self.urls)]

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def postgres(url: str | None, *, durable: bool) -> Iterator[str]:
    """The database URL to use: the one given, or a fresh database on a throwaway server."""
    if url:
        yield url
        return
    import psycopg

    from hermes.testing.postgres import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("bench_scale: no PostgreSQL binaries found; pass --database-url")
    server = PostgresServer.start(bindir, durable=durable)
    try:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE hermes_bench")
        yield server.url("hermes_bench")
    finally:
        server.stop()


async def durability(url: str) -> dict[str, Any]:
    """`fsync` and `synchronous_commit` as hermes' own pooled connections see them."""
    from hermes.store.postgres.connect import open_pool

    pool = await open_pool(url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            cursor = await conn.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit')")
            row = await cursor.fetchone()
    finally:
        await pool.close()
    assert row is not None
    fsync, synchronous_commit = str(row[0]), str(row[1])
    return {
        "fsync": fsync,
        "synchronous_commit": synchronous_commit,
        "durable": fsync == "on" and synchronous_commit != "off",  # `local` waits for the local flush too
    }


def durability_label(pg: dict[str, Any]) -> str:
    commits = "durable commits" if pg["durable"] else "commits NOT durable"
    return f"{commits}: fsync={pg['fsync']}, synchronous_commit={pg['synchronous_commit']}"


def launch(config: Config, env: dict[str, str], home: Path, database_url: str) -> Running:
    running = Running()
    config_env = dict(env)
    if config.database:
        config_env["HERMES_DATABASE_URL"] = database_url
    command = [sys.executable, "-m", "hermes", "serve", "--port", "0"]
    if config.workers > 1:
        command += ["--workers", str(config.workers)]
    try:
        for i in range(config.instances):
            instance_home = home / f"{config.name}-{i}"
            instance_home.mkdir()
            proc, url = start(
                command, {**config_env, "HERMES_HOME": str(instance_home)}, str(instance_home),
                r"listening on (http://\S+)", "stderr",
            )  # fmt: skip
            running.procs.append(proc)
            running.urls.append(url)
    except BaseException:
        running.stop()
        raise
    return running


async def measure_latency(
    session: aiohttp.ClientSession, upstream: str, hermes: Running, n: int
) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {KEY}"}

    async def one(url: str, content: str, headers: dict[str, str]) -> float:
        started = time.perf_counter()
        async with session.post(url, json=chat_body(content, False), headers=headers) as resp:
            await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{url}: HTTP {resp.status}")
        return (time.perf_counter() - started) * 1000

    # Warm up imports, pages and pools on every instance and worker: a fresh connection per
    # request, so the kernel spreads them over the workers of a shared port.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as fresh:
        for i in range(40):
            async with fresh.post(f"{hermes.url(i)}/v1/chat/completions", json=chat_body(f"small warmup {i}", False),
                                  headers=auth) as resp:  # fmt: skip
                await resp.read()
        await asyncio.gather(*(
            _drain(fresh, f"{hermes.url(i)}/v1/chat/completions", chat_body(f"big:20:0.001:{i}", True), auth)
            for i in range(40)
        ))  # fmt: skip
    for _ in range(20):
        await one(f"{upstream}/chat/completions", "small", {})
    direct, through = [], []
    for i in range(n):
        direct.append(await one(f"{upstream}/chat/completions", "small", {}))
        through.append(await one(f"{hermes.url(i)}/v1/chat/completions", f"small {i}", auth))
    return {
        "requests": n,
        "direct_p50_ms": statistics.median(direct),
        "hermes_p50_ms": statistics.median(through),
        "hermes_p95_ms": pct(through, 0.95),
        "added_ms": statistics.median(through) - statistics.median(direct),
    }


async def _drain(session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]) -> None:
    async with session.post(url, json=body, headers=headers) as resp:
        await resp.read()


async def measure_burst(
    session: aiohttp.ClientSession, urls: list[str], streams: int, chunks: int, delay: float, *, auth: bool
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {KEY}"} if auth else {}

    statuses: list[int] = []

    async def one(i: int) -> tuple[float | None, float | None, int, bool]:
        started = time.perf_counter()
        body = chat_body(f"big:{chunks}:{delay}:{i}", True)
        async with session.post(urls[i % len(urls)], json=body, headers=headers) as resp:
            statuses.append(resp.status)
            if resp.status != 200:
                return None, None, 0, False
            return await read_stream(resp, started)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(streams)), return_exceptions=True)
    wall = time.perf_counter() - started
    good = [r for r in results if not isinstance(r, BaseException) and r[3] and r[2] == big_text_chars(chunks)]
    firsts = [r[1] for r in good if r[1] is not None]
    total = sum(r[2] for r in results if not isinstance(r, BaseException)) / CHUNK_CHARS
    return {
        "streams": streams,
        "succeeded": len(good),
        "refused": statuses.count(429),
        "errors": [repr(r)[:200] for r in results if isinstance(r, BaseException)][:3],
        "ttfc_p50_ms": statistics.median(firsts) if firsts else float("inf"),
        "ttfc_p99_ms": pct(firsts, 0.99) if firsts else float("inf"),
        "chunks_per_s": total / wall,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "configs": {}}
    durable = not args.pg_no_fsync
    scratch = tempfile.TemporaryDirectory(prefix="hermes-bench-scale-")
    with scratch as tmp, postgres(args.database_url, durable=durable) as db_url:
        if not args.only or any(c.database for c in CONFIGS if c.name in args.only):
            report["postgres"] = await durability(db_url)
        home = Path(tmp)
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
        bench_server = str(Path(__file__).with_name("bench_server.py"))
        up_proc, port = start([sys.executable, bench_server, "--upstream"], clean, tmp, r"^(\d+)$", "stdout")
        upstream = f"http://127.0.0.1:{port}/v1"
        env = {
            **clean,
            "HERMES_BASE_URL": upstream,
            "HERMES_MODEL": "scripted-model",
            "HERMES_API_KEY": "sk-upstream",
            "API_SERVER_KEY": KEY,
            "API_SERVER_MAX_CONCURRENT_RUNS": "0",
            "HERMES_SANDBOX": "off",  # no tool runs in the bench; serve refuses auto where bwrap cannot work
        }
        try:
            connector = aiohttp.TCPConnector(limit=0)
            timeout = aiohttp.ClientTimeout(total=600)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                for config in CONFIGS:
                    if args.only and config.name not in args.only:
                        continue
                    running = launch(config, env, home, db_url)
                    try:
                        latency = await measure_latency(session, upstream, running, args.requests)
                        direct = await measure_burst(
                            session, [f"{upstream}/chat/completions"], args.streams, args.chunks, args.chunk_delay,
                            auth=False,
                        )  # fmt: skip
                        burst = await measure_burst(
                            session, [f"{u}/v1/chat/completions" for u in running.urls], args.streams, args.chunks,
                            args.chunk_delay, auth=True,
                        )  # fmt: skip
                    finally:
                        running.stop()
                    report["configs"][config.name] = {"latency": latency, "direct_burst": direct, "burst": burst}
                    print(f"bench_scale: {config.name} done", file=sys.stderr, flush=True)
        finally:
            up_proc.terminate()
            up_proc.wait(10)
    report["targets"] = targets(report["configs"])
    return report


def targets(configs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "sqlite" in configs and "pg" in configs:
        over = configs["pg"]["latency"]["added_ms"] - configs["sqlite"]["latency"]["added_ms"]
        out["pg_over_sqlite_ms"] = {"value": over, "target": PG_OVER_SQLITE_TARGET_MS,
                                    "ok": over <= PG_OVER_SQLITE_TARGET_MS}  # fmt: skip
    if "pg-2-workers" in configs:
        workers = configs["pg-2-workers"]
        ratio = workers["burst"]["ttfc_p50_ms"] / workers["direct_burst"]["ttfc_p50_ms"]
        complete = workers["burst"]["succeeded"] == workers["burst"]["streams"]
        out["workers_ttfc_ratio"] = {"value": ratio, "target": WORKERS_TTFC_TARGET_RATIO,
                                     "ok": complete and ratio <= WORKERS_TTFC_TARGET_RATIO}  # fmt: skip
    return out


def print_report(report: dict[str, Any]) -> None:
    print(f"cpus: {report['cpus']}")
    if "postgres" in report:
        print(f"postgres: {durability_label(report['postgres'])}; sqlite: WAL, synchronous=NORMAL")
    header = (
        f"{'config':<16}{'added ms':>10}{'hermes p50':>12}{'direct p50':>12}"
        f"{'ok/streams':>12}{'TTFC p50':>10}{'p99':>9}{'direct p50':>12}{'p99':>9}{'chunks/s':>10}"
    )
    print(header)
    for name, c in report["configs"].items():
        lat, burst, direct = c["latency"], c["burst"], c["direct_burst"]
        print(
            f"{name:<16}{lat['added_ms']:>10.2f}{lat['hermes_p50_ms']:>12.2f}{lat['direct_p50_ms']:>12.2f}"
            f"{burst['succeeded']:>6}/{burst['streams']:<5}{burst['ttfc_p50_ms']:>10.1f}{burst['ttfc_p99_ms']:>9.1f}"
            f"{direct['ttfc_p50_ms']:>12.1f}{direct['ttfc_p99_ms']:>9.1f}{burst['chunks_per_s']:>10.0f}"
        )
        for error in burst["errors"]:
            print(f"    error: {error}")
    for name, t in report["targets"].items():
        label = f" ({durability_label(report['postgres'])})" if name == "pg_over_sqlite_ms" else ""
        print(f"[{'PASS' if t['ok'] else 'FAIL'}] {name}{label}: {t['value']:.2f} (target <= {t['target']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--chunk-delay", type=float, default=0.001)
    parser.add_argument("--database-url", help="an existing PostgreSQL database (default: a throwaway server)")
    parser.add_argument("--only", nargs="*", help="run only these configurations")
    parser.add_argument(
        "--pg-no-fsync", action="store_true",
        help="the throwaway server without fsync or synchronous_commit (isolates round trips from disk; not durable)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if all(t["ok"] for t in report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
