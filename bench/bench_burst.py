"""A burst of streamed chat completions on one `hermes serve` process: SQLite vs PostgreSQL.

    python bench/bench_burst.py [--streams 200] [--chunks 500] [--chunk-delay 0.001]
                                [--requests 100] [--database-url URL] [--pg-no-fsync]
                                [--default-cap] [--json]

For each configuration (`sqlite`: the SQLite files; `pg`: PostgreSQL, a throwaway server
with PostgreSQL's durable defaults unless `--database-url` names one), one `hermes serve`
process of this checkout runs against the scripted upstream of `bench_server.py`, and:

1. `--requests` non-streamed chat completions, one at a time, interleaved with the same
   request sent straight to the upstream: added ms = median(hermes) - median(direct);
2. `--streams` concurrent streamed chat completions of `--chunks` chunks each: time to
   the first content chunk (TTFC) p50 and p99, and the same burst sent straight to the
   upstream right before it.

`--default-cap` keeps the server's default `max_concurrent_runs` (otherwise the bench
lifts the cap): the burst then also shows how many streams the default refuses (429),
target none for 100 streams.

Targets (exit status 1 when one is missed):
- PostgreSQL's TTFC p50 <= 1.2x SQLite's;
- PostgreSQL's TTFC p99 <= 2x its own p50;
- PostgreSQL adds <= 2 ms per non-streamed request over SQLite (with durable commits).

`run_burst(config, streams, chunks)` runs one configuration's burst alone (its own
upstream and, for `pg`, its own PostgreSQL) and returns its figures, for a summary.
On a small machine shared with other work, use smaller bursts (e.g. 50 x 200).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from bench_scale import (
    CONFIGS,
    Config,
    Running,
    durability,
    durability_label,
    launch,
    measure_burst,
    measure_latency,
    postgres,
)  # fmt: skip
from bench_server import KEY, raise_fd_limit, start

ROOT = Path(__file__).resolve().parents[1]
PG_TTFC_OVER_SQLITE = 1.2
PG_P99_OVER_P50 = 2.0
PG_ADDED_OVER_SQLITE_MS = 2.0
BURST_CONFIGS = {c.name: c for c in CONFIGS if c.name in ("sqlite", "pg")}


@contextlib.asynccontextmanager
async def scripted_upstream(tmp: str) -> AsyncIterator[tuple[str, dict[str, str]]]:
    """The scripted upstream's URL and the environment `hermes serve` runs with."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
    bench_server = str(Path(__file__).with_name("bench_server.py"))
    proc, port = start([sys.executable, bench_server, "--upstream"], clean, tmp, r"^(\d+)$", "stdout")
    upstream = f"http://127.0.0.1:{port}/v1"
    env = {
        **clean,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), clean.get("PYTHONPATH")])),  # this checkout
        "HERMES_BASE_URL": upstream,
        "HERMES_MODEL": "scripted-model",
        "HERMES_API_KEY": "sk-upstream",
        "API_SERVER_KEY": KEY,
        "API_SERVER_MAX_CONCURRENT_RUNS": "0",
        "HERMES_SANDBOX": "off",
    }
    try:
        yield upstream, env
    finally:
        proc.terminate()
        proc.wait(10)


async def _measure(
    config: Config, upstream: str, env: dict[str, str], home: Path, db_url: str, args: argparse.Namespace
) -> dict[str, Any]:
    running: Running = launch(config, env, home, db_url)
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
            latency = await measure_latency(session, upstream, running, args.requests) if args.requests else None
            direct = await measure_burst(
                session, [f"{upstream}/chat/completions"], args.streams, args.chunks, args.chunk_delay, auth=False
            )
            hermes = await measure_burst(
                session, [f"{u}/v1/chat/completions" for u in running.urls], args.streams, args.chunks,
                args.chunk_delay, auth=True,
            )  # fmt: skip
    finally:
        running.stop()
    return {"config": config.name, "chunks": args.chunks, "latency": latency, "direct_burst": direct, "burst": hermes}


async def _run(names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "configs": {}}
    needs_pg = any(BURST_CONFIGS[name].database for name in names)
    with tempfile.TemporaryDirectory(prefix="hermes-bench-burst-") as tmp, contextlib.ExitStack() as stack:
        db_url = stack.enter_context(postgres(args.database_url, durable=not args.pg_no_fsync)) if needs_pg else ""
        if needs_pg:
            report["postgres"] = await durability(db_url)
        async with scripted_upstream(tmp) as (upstream, env):
            if getattr(args, "default_cap", False):
                env.pop("API_SERVER_MAX_CONCURRENT_RUNS", None)
            for name in names:
                report["configs"][name] = await _measure(BURST_CONFIGS[name], upstream, env, Path(tmp), db_url, args)
                print(f"bench_burst: {name} done", file=sys.stderr, flush=True)
    report["targets"] = targets(report["configs"])
    return report


def _args(streams: int, chunks: int, **overrides: Any) -> argparse.Namespace:
    defaults = {"chunk_delay": 0.001, "requests": 0, "database_url": None, "pg_no_fsync": False}
    return argparse.Namespace(streams=streams, chunks=chunks, **{**defaults, **overrides})


def run_burst(config: Config | str, streams: int, chunks: int, **options: Any) -> dict[str, Any]:
    """One configuration's burst ("sqlite" or "pg"), from a fresh process, upstream and
    database: {"config", "burst": {ttfc_p50_ms, ttfc_p99_ms, succeeded, ...},
    "direct_burst": {...}, "latency": None or {added_ms, ...}, "postgres": durability}.

    `options`: chunk_delay (s, default 0.001), requests (non-streamed latency pairs,
    default 0: none), database_url, pg_no_fsync."""
    name = config if isinstance(config, str) else config.name
    report = asyncio.run(_run([name], _args(streams, chunks, **options)))
    return {**report["configs"][name], "postgres": report.get("postgres"), "cpus": report["cpus"]}


def targets(configs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    refused = sum(c["burst"].get("refused", 0) for c in configs.values())
    out["refused_429"] = {"value": refused, "target": 0, "ok": refused == 0}
    pg, sqlite = configs.get("pg"), configs.get("sqlite")
    if pg is not None:
        p50, p99 = pg["burst"]["ttfc_p50_ms"], pg["burst"]["ttfc_p99_ms"]
        complete = pg["burst"]["succeeded"] == pg["burst"]["streams"]
        out["pg_p99_over_p50"] = {"value": p99 / p50, "target": PG_P99_OVER_P50, "ok": complete and p99 <= 2 * p50}
    if pg is not None and sqlite is not None:
        ratio = pg["burst"]["ttfc_p50_ms"] / sqlite["burst"]["ttfc_p50_ms"]
        out["pg_ttfc_over_sqlite"] = {"value": ratio, "target": PG_TTFC_OVER_SQLITE, "ok": ratio <= PG_TTFC_OVER_SQLITE}
        if pg["latency"] is not None and sqlite["latency"] is not None:
            over = pg["latency"]["added_ms"] - sqlite["latency"]["added_ms"]
            out["pg_added_over_sqlite_ms"] = {"value": over, "target": PG_ADDED_OVER_SQLITE_MS,
                                              "ok": over <= PG_ADDED_OVER_SQLITE_MS}  # fmt: skip
    return out


def print_report(report: dict[str, Any]) -> None:
    print(f"cpus: {report['cpus']}")
    if "postgres" in report:
        print(f"postgres: {durability_label(report['postgres'])}; sqlite: WAL, synchronous=NORMAL")
    print(
        f"{'config':<8}{'added ms':>10}{'ok/streams':>12}{'chunks':>8}{'TTFC p50':>10}{'p99':>9}"
        f"{'direct p50':>12}{'p99':>9}{'chunks/s':>10}"
    )
    for name, c in report["configs"].items():
        lat, b, d = c["latency"], c["burst"], c["direct_burst"]
        added = f"{lat['added_ms']:10.2f}" if lat else f"{'-':>10}"
        print(
            f"{name:<8}{added}{b['succeeded']:>6}/{b['streams']:<5}{c['chunks']:>8}{b['ttfc_p50_ms']:>10.1f}"
            f"{b['ttfc_p99_ms']:>9.1f}{d['ttfc_p50_ms']:>12.1f}{d['ttfc_p99_ms']:>9.1f}{b['chunks_per_s']:>10.0f}"
        )
        if b.get("refused"):
            print(f"    refused (429): {b['refused']}")
        for error in b["errors"]:
            print(f"    error: {error}")
    for name, t in report["targets"].items():
        print(f"[{'PASS' if t['ok'] else 'FAIL'}] {name}: {t['value']:.2f} (target <= {t['target']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--chunk-delay", type=float, default=0.001)
    parser.add_argument("--requests", type=int, default=100, help="non-streamed latency pairs (0: skip)")
    parser.add_argument("--database-url", help="an existing PostgreSQL database (default: a throwaway server)")
    parser.add_argument("--pg-no-fsync", action="store_true", help="the throwaway server without durable commits")
    parser.add_argument("--only", nargs="*", choices=sorted(BURST_CONFIGS), default=["sqlite", "pg"])
    parser.add_argument("--default-cap", action="store_true", help="keep the default max_concurrent_runs")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line at the end")
    args = parser.parse_args()
    report = asyncio.run(_run(args.only, args))
    print_report(report)
    if args.json:
        print(json.dumps(report))
    return 0 if all(t["ok"] for t in report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
