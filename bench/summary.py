"""One table for the server benches: SQLite and PostgreSQL, one process and two workers.

    python bench/summary.py [--requests 200] [--streams 200] [--chunks 500] [--chunk-delay 0.001]
                            [--only sqlite pg pg-2-workers] [--database-url URL] [--pg-no-fsync]

Runs the scripted upstream of `bench_server.py` and, one configuration after another
(`bench_scale.py`'s `sqlite`, `pg` and `pg-2-workers`), a real `hermes serve`; for each:

- added ms: median(through hermes) - median(direct to the upstream), non-streamed, one at
  a time, interleaved (`bench_scale.measure_latency`); ratio: median(hermes) / median(direct);
- CPU per turn: the CPU time (user + system, /proc) of the serving processes (the server,
  or the supervisor and its workers) over `--requests` more plain turns, per turn;
- µs per chunk: their CPU time over a burst of `--streams` x `--chunks`, less the streams'
  turns (streams x CPU per turn), per content chunk the upstream sent;
- burst TTFC: time to the first content chunk, p50 and p99, through hermes and direct
  (the direct burst is run right before hermes' own).

Prints the table, then one JSON line (`{"bench": "summary", ...}`) with every figure.
Targets (issue 19): CPU per turn <= 1.0 ms, <= 20 µs per chunk, ratio <= 2; the machine
(CPU count and model) is printed with the table, since the figures are only comparable on
one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from bench_burst import scripted_upstream
from bench_scale import CONFIGS, Running, durability, durability_label, launch, measure_burst, measure_latency, postgres
from bench_server import KEY, chat_body, raise_fd_limit

TARGET_CPU_MS_PER_TURN = 1.0
TARGET_CPU_US_PER_CHUNK = 20.0
TARGET_RATIO = 2.0
NAMES = ("sqlite", "pg", "pg-2-workers")


def tree_cpu_ms(pids: list[int]) -> float:
    """CPU time (user + system) of these processes and their children, in ms."""
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) * tick)
    wanted = set(pids)
    wanted |= {pid for pid, (ppid, _) in stats.items() if ppid in wanted}
    return sum(cpu for pid, (_, cpu) in stats.items() if pid in wanted)


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs, {model}, Python {platform.python_version()}"


async def cpu_per_turn(session: aiohttp.ClientSession, running: Running, n: int) -> float:
    auth = {"Authorization": f"Bearer {KEY}"}
    pids = [proc.pid for proc in running.procs]
    before = tree_cpu_ms(pids)
    for i in range(n):
        body = chat_body(f"small cpu {i}", False)
        async with session.post(f"{running.url(i)}/v1/chat/completions", json=body, headers=auth) as resp:
            await resp.read()
    return (tree_cpu_ms(pids) - before) / n


async def measure(
    session: aiohttp.ClientSession, upstream: str, running: Running, args: argparse.Namespace
) -> dict[str, Any]:
    latency = await measure_latency(session, upstream, running, args.requests)
    turn_ms = await cpu_per_turn(session, running, args.requests)
    direct = await measure_burst(
        session, [f"{upstream}/chat/completions"], args.streams, args.chunks, args.chunk_delay, auth=False
    )
    pids = [proc.pid for proc in running.procs]
    before = tree_cpu_ms(pids)
    urls = [f"{u}/v1/chat/completions" for u in running.urls]
    burst = await measure_burst(session, urls, args.streams, args.chunks, args.chunk_delay, auth=True)
    burst_cpu = tree_cpu_ms(pids) - before
    chunks = args.streams * args.chunks
    return {
        "added_ms": latency["added_ms"],
        "hermes_p50_ms": latency["hermes_p50_ms"],
        "direct_p50_ms": latency["direct_p50_ms"],
        "ratio": latency["hermes_p50_ms"] / latency["direct_p50_ms"],
        "cpu_ms_per_turn": turn_ms,
        "cpu_us_per_chunk": (burst_cpu - args.streams * turn_ms) * 1000 / chunks,
        "burst": burst,
        "direct_burst": direct,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit()
    names = args.only or list(NAMES)
    configs = [config for config in CONFIGS if config.name in names]
    report: dict[str, Any] = {
        "bench": "summary",
        "machine": machine(),
        "streams": args.streams,
        "chunks": args.chunks,
        "requests": args.requests,
        "configs": {},
    }
    with tempfile.TemporaryDirectory(prefix="hermes-bench-summary-") as tmp:
        with postgres(args.database_url, durable=not args.pg_no_fsync) as db_url:
            if any(config.database for config in configs):
                report["postgres"] = await durability(db_url)
            async with scripted_upstream(tmp) as (upstream, env):
                timeout = aiohttp.ClientTimeout(total=600)
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
                    for config in configs:
                        running = launch(config, env, Path(tmp), db_url)
                        try:
                            report["configs"][config.name] = await measure(session, upstream, running, args)
                        finally:
                            running.stop()
                        print(f"summary: {config.name} done", file=sys.stderr, flush=True)
    return report


def table(report: dict[str, Any]) -> str:
    lines = [
        f"machine: {report['machine']}; burst {report['streams']} streams x {report['chunks']} chunks, "
        f"{report['requests']} plain turns",
    ]
    if "postgres" in report:
        lines.append(f"postgres: {durability_label(report['postgres'])}; sqlite: WAL, synchronous=NORMAL")
    lines += [
        "| config | added ms | ratio | CPU per turn | µs per chunk | burst TTFC p50 (p99) | direct TTFC p50 "
        "| ok/streams |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["configs"].items():
        burst, direct = c["burst"], c["direct_burst"]
        lines.append(
            f"| {name} | {c['added_ms']:.2f} | {c['ratio']:.2f}x | {c['cpu_ms_per_turn']:.2f} ms "
            f"| {c['cpu_us_per_chunk']:.1f} | {burst['ttfc_p50_ms']:.0f} ms ({burst['ttfc_p99_ms']:.0f}) "
            f"| {direct['ttfc_p50_ms']:.0f} ms | {burst['succeeded']}/{burst['streams']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--chunk-delay", type=float, default=0.001)
    parser.add_argument("--only", nargs="*", choices=NAMES, help="run only these configurations")
    parser.add_argument("--database-url", help="an existing PostgreSQL database (default: a throwaway server)")
    parser.add_argument("--pg-no-fsync", action="store_true", help="the throwaway server without durable commits")
    args = parser.parse_args()
    started = time.perf_counter()
    report = asyncio.run(run(args))
    report["wall_s"] = time.perf_counter() - started
    print(table(report))
    print(json.dumps(report, separators=(",", ":"), default=str))
    ok = all(
        c["cpu_ms_per_turn"] <= TARGET_CPU_MS_PER_TURN
        and c["cpu_us_per_chunk"] <= TARGET_CPU_US_PER_CHUNK
        and c["ratio"] <= TARGET_RATIO
        for c in report["configs"].values()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
