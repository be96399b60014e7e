"""hermes serve under load, against a scripted upstream on loopback (one run, three processes).

    python bench/bench_server.py [--requests 300] [--streams 200] [--chunks 500]
                                 [--idle 1000] [--idle-seconds 60] [--json] [--latency-only]
                                 [--profile [N]] [--profile-out FILE] [--api chat|responses]

Processes: a scripted OpenAI-compatible upstream, a real `hermes serve` pointed at it,
and this client. The upstream picks its reply from the last user message ("small",
"big", "stall"), so one upstream serves every phase.

1. Added latency: the same non-streaming chat completion sent straight to the upstream
   and through hermes, interleaved; target: median(hermes) - median(direct) < 3 ms.
   A third series runs the same turn with `Agent.run_turn` in this process (engine,
   provider and a session store like the server's, no HTTP), to split the added time
   between the engine/store and the HTTP server layer.
   The same pair is then measured from outside with the SDK's own HTTP client (httpx, one
   keep-alive connection, in a thread so the client's loop is not shared); the
   outside-measured ratio median(hermes) / median(direct) has a target of <= 2.
   CPU per plain turn: the hermes process's CPU time (/proc/PID/stat, user + system)
   over `--requests` more turns, divided by their number; target <= 1.0 ms.
2. Streaming load: `--streams` concurrent streaming chat completions of `--chunks`
   content chunks each, the upstream pausing `--chunk-delay` before each chunk (default
   1 ms — far faster than a real model, but it lets the scripted upstream interleave its
   streams instead of writing them one after another); targets: all succeed, median time to the first content chunk
   < 100 ms; aggregate chunks/s reported. CPU per forwarded chunk: the hermes process's
   CPU time over the burst, less the streams' turns (streams x CPU per plain turn),
   divided by the content chunks the upstream sent; target <= 20 µs. hermes may merge
   deltas that wait for a slow client into one frame: the client counts content
   characters, not frames. `--api responses` streams POST /v1/responses (store off)
   instead of chat completions, in this phase and in the profiled burst.
3. Memory: RSS of the hermes process after phases 1-2; target < 200 MB.
4. Idle streams: `--idle` SSE connections whose turns wait on a silent upstream, held
   `--idle-seconds`; target: none dropped, each receives keepalives; RSS growth reported.

`--profile [N]` (default N = 25) runs the server under cProfile (`bench/profiling.py`,
switched on only around two extra phases after the measured ones, so the figures above
are unprofiled): `--requests` plain turns, and a burst of min(`--streams`, 50) streams
of `--chunks` chunks; it prints the top N functions by own and by cumulative time, in
µs per turn and per forwarded chunk (to `--profile-out` when given).

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from profiling import ProfileCapture

from hermes.testing.upstream import Reply, ScriptedUpstream, Stall, text_reply

KEY = "sk-bench"
WORDS = "lorem ipsum dolor sit amet "

CHUNK_CHARS = 5
"""Characters of content in each chunk of the upstream's `big:<chunks>` answer."""


def big_text_chars(chunks: int) -> int:
    """Characters of content in the upstream's `big:<chunks>` answer."""
    return chunks * CHUNK_CHARS


# ---- the upstream process ----------------------------------------------------------------


class BenchUpstream(ScriptedUpstream):
    """Chooses the reply from the last user message: small | big:<n> | stall."""

    async def _chat(self, request: Any) -> Any:
        body = await request.json()
        last = str((body.get("messages") or [{}])[-1].get("content", ""))
        if last.startswith("big:"):
            _, n_text, delay_text, _ = last.split(":", 3)
            n = int(n_text)
            text = (WORDS * (n // 5 + 1))[: big_text_chars(n)]
            self.default = text_reply(text, pieces=n, chunk_delay=float(delay_text))
        elif last.startswith("stall"):
            self.default = Reply([Stall(3600)])
        else:
            self.default = text_reply("ok")
        self.requests.clear()  # keep the upstream's memory flat
        return await super()._chat(request)


async def run_upstream() -> None:
    upstream = BenchUpstream()
    await upstream.start()
    print(upstream.port, flush=True)
    await asyncio.Event().wait()


# ---- helpers -------------------------------------------------------------------------------


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 16384), hard), hard))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def chat_body(content: str, stream: bool) -> dict[str, Any]:
    return {"model": "hermes-agent", "messages": [{"role": "user", "content": content}], "stream": stream}


def stream_request(api: str, content: str) -> tuple[str, dict[str, Any]]:
    """(path, body) of a streamed turn on `api` (chat | responses)."""
    if api == "responses":
        return "/v1/responses", {"model": "hermes-agent", "input": content, "stream": True, "store": False}
    return "/v1/chat/completions", chat_body(content, True)


# ---- phases --------------------------------------------------------------------------------


class EngineOnly:
    """The same turn run in this process with `Agent.run_turn` (engine + provider + store, no HTTP)."""

    def __init__(self, upstream: str, home: str) -> None:
        from hermes.agent.factory import build_agent
        from hermes.agent.tools.base import ToolRegistry
        from hermes.config import Settings
        from hermes.testing.state_db import open_sync_state

        settings = Settings(home=Path(home), provider="openai", base_url=upstream, model="scripted-model", api_key="k")
        self.store = open_sync_state(Path(home) / "engine-only.db")
        self.agent = build_agent(settings, self.store.sessions, tools=ToolRegistry())

    async def turn(self, i: int) -> float:
        from hermes.agent.types import TurnRequest

        started = time.perf_counter()
        request = TurnRequest(input=f"small engine {i}", session_id=f"api-{i:016x}", history=[], source="api_server")
        async for _ in self.agent.run_turn(request):
            pass
        return (time.perf_counter() - started) * 1000

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


async def phase_latency(
    session: aiohttp.ClientSession, upstream: str, hermes: str, n: int, engine: EngineOnly
) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {KEY}"}

    async def one(url: str, content: str, headers: dict[str, str]) -> float:
        started = time.perf_counter()
        async with session.post(url, json=chat_body(content, False), headers=headers) as resp:
            await resp.read()
            assert resp.status == 200, resp.status
        return (time.perf_counter() - started) * 1000

    for i in range(30):  # warm up every path (connections, imports, SQLite pages)
        await one(f"{upstream}/chat/completions", "small", {})
        await one(f"{hermes}/v1/chat/completions", f"small warmup {i}", auth)
        await engine.turn(1_000_000 + i)
    direct, through, engine_only = [], [], []
    for i in range(n):
        direct.append(await one(f"{upstream}/chat/completions", "small", {}))
        through.append(await one(f"{hermes}/v1/chat/completions", f"small {i}", auth))
        engine_only.append(await engine.turn(i))
    added = statistics.median(through) - statistics.median(direct)
    return {
        "requests": n,
        "direct_ms": {"p50": statistics.median(direct), "p95": pct(direct, 0.95)},
        "hermes_ms": {"p50": statistics.median(through), "p95": pct(through, 0.95)},
        "engine_only_ms": {"p50": statistics.median(engine_only), "p95": pct(engine_only, 0.95)},
        "http_layer_median_ms": statistics.median(through) - statistics.median(engine_only),
        "added_median_ms": added,
        "target_ms": 3.0,
        "ok": added < 3.0,
    }


def cpu_split_ms(pid: int) -> tuple[float, float]:
    """(user, system) CPU time the process has used, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * tick, int(fields[12]) * tick


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used, in ms."""
    return sum(cpu_split_ms(pid))


def outside_latency(upstream: str, hermes: str, n: int, hermes_pid: int, upstream_pid: int) -> dict[str, Any]:
    """Direct vs through-hermes medians with httpx (the SDK's client), interleaved.

    Also the CPU time each request costs the hermes process and the upstream: unlike the
    wall-clock ratio, it hardly moves when other work loads the machine.
    """
    try:
        import httpx2 as httpx
    except ImportError:  # older SDK releases depend on httpx itself
        import httpx  # type: ignore[no-redef,import-not-found,unused-ignore]

    auth = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(timeout=60) as client:

        def one(url: str, content: str, headers: dict[str, str]) -> float:
            started = time.perf_counter()
            resp = client.post(url, json=chat_body(content, False), headers=headers)
            assert resp.status_code == 200, resp.status_code
            return (time.perf_counter() - started) * 1000

        for i in range(30):
            one(f"{upstream}/chat/completions", "small", {})
            one(f"{hermes}/v1/chat/completions", f"small outside warmup {i}", auth)
        direct, through = [], []
        for i in range(n):
            direct.append(one(f"{upstream}/chat/completions", "small", {}))
            through.append(one(f"{hermes}/v1/chat/completions", f"small outside {i}", auth))
        up_before = cpu_ms(upstream_pid)
        for _ in range(n):
            one(f"{upstream}/chat/completions", "small", {})
        up_direct = (cpu_ms(upstream_pid) - up_before) / n
        user_before, system_before = cpu_split_ms(hermes_pid)
        for i in range(n):
            one(f"{hermes}/v1/chat/completions", f"small cpu {i}", auth)
        user_after, system_after = cpu_split_ms(hermes_pid)
        hermes_user, hermes_system = (user_after - user_before) / n, (system_after - system_before) / n
        hermes_cpu = hermes_user + hermes_system
    ratio = statistics.median(through) / statistics.median(direct)
    return {
        "requests": n,
        "client": "httpx",
        "direct_ms": {"p50": statistics.median(direct), "p95": pct(direct, 0.95)},
        "hermes_ms": {"p50": statistics.median(through), "p95": pct(through, 0.95)},
        "ratio": ratio,
        "hermes_cpu_ms_per_request": hermes_cpu,
        "hermes_user_cpu_ms_per_request": hermes_user,
        "hermes_system_cpu_ms_per_request": hermes_system,
        "upstream_cpu_ms_per_direct_request": up_direct,
        "target_ratio": 2.0,
        "target_cpu_ms_per_request": 1.0,
        "ok": ratio <= 2.0 and hermes_cpu <= 1.0,
    }


async def read_stream(resp: aiohttp.ClientResponse, started: float) -> tuple[float | None, float | None, int, bool]:
    """(first frame ms, first content ms, content characters, saw [DONE] after finish stop).

    Characters, not frames: hermes may merge the deltas a slow reader has not taken yet.
    """
    first_frame = first_content = None
    chars = 0
    finish = None
    done = False
    async for raw in resp.content:
        line = raw.strip()
        if not line.startswith(b"data: "):
            continue
        if first_frame is None:
            first_frame = (time.perf_counter() - started) * 1000
        data = line[6:]
        if data == b"[DONE]":
            done = True
            break
        chunk = json.loads(data)
        choice = chunk["choices"][0]
        content = choice["delta"].get("content")
        if content:
            chars += len(content)
            if first_content is None:
                first_content = (time.perf_counter() - started) * 1000
        finish = choice.get("finish_reason") or finish
    return first_frame, first_content, chars, done and finish == "stop"


async def read_responses_stream(
    resp: aiohttp.ClientResponse, started: float
) -> tuple[float | None, float | None, int, bool]:
    """`read_stream` for a Responses stream: text from `response.output_text.delta` events,
    done at `response.completed`."""
    first_frame = first_content = None
    chars = 0
    async for raw in resp.content:
        line = raw.strip()
        if not line.startswith(b"data: "):
            continue
        if first_frame is None:
            first_frame = (time.perf_counter() - started) * 1000
        event = json.loads(line[6:])
        if event["type"] == "response.output_text.delta":
            chars += len(event["delta"])
            if first_content is None:
                first_content = (time.perf_counter() - started) * 1000
        elif event["type"] == "response.completed":
            return first_frame, first_content, chars, True
    return first_frame, first_content, chars, False


async def read_api_stream(
    api: str, resp: aiohttp.ClientResponse, started: float
) -> tuple[float | None, float | None, int, bool]:
    return await (read_responses_stream if api == "responses" else read_stream)(resp, started)


async def phase_streams(
    session: aiohttp.ClientSession,
    hermes: str,
    streams: int,
    chunks: int,
    delay: float,
    *,
    pid: int,
    turn_cpu_ms: float,
    api: str = "chat",
) -> dict[str, Any]:
    """The burst; `turn_cpu_ms` (CPU per plain turn) is taken off the burst's CPU once
    per stream, to leave what the chunks cost."""
    auth = {"Authorization": f"Bearer {KEY}"}

    async def one(i: int) -> tuple[float | None, float | None, int, bool]:
        started = time.perf_counter()
        path, body = stream_request(api, f"big:{chunks}:{delay}:{i}")
        async with session.post(f"{hermes}{path}", json=body, headers=auth) as resp:
            if resp.status != 200:
                return None, None, 0, False
            return await read_api_stream(api, resp, started)

    cpu_before = cpu_ms(pid)
    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(streams)), return_exceptions=True)
    wall = time.perf_counter() - started
    cpu = cpu_ms(pid) - cpu_before
    expected = big_text_chars(chunks)
    good = [r for r in results if not isinstance(r, BaseException) and r[3] and r[2] == expected]
    firsts = [r[1] for r in good if r[1] is not None]
    frames = [r[0] for r in good if r[0] is not None]
    total = sum(r[2] for r in results if not isinstance(r, BaseException)) / CHUNK_CHARS
    ttfc = statistics.median(firsts) if firsts else float("inf")
    chunk_us = (cpu - streams * turn_cpu_ms) * 1000 / (streams * chunks)
    return {
        "api": api,
        "streams": streams,
        "chunks_per_stream": chunks,
        "upstream_chunk_delay_s": delay,
        "succeeded": len(good),
        "errors": [repr(r)[:200] for r in results if isinstance(r, BaseException)][:5],
        "wall_s": wall,
        "first_frame_ms": {"p50": statistics.median(frames) if frames else None},
        "first_content_ms": {"p50": ttfc, "p95": pct(firsts, 0.95) if firsts else None},
        "aggregate_chunks_per_s": total / wall,
        "target_first_content_ms": 100.0,
        "hermes_cpu_ms": cpu,
        "hermes_cpu_us_per_chunk_gross": cpu * 1000 / (streams * chunks),
        "hermes_cpu_us_per_chunk": chunk_us,
        "target_cpu_us_per_chunk": 20.0,
        "ok": len(good) == streams and ttfc < 100.0 and chunk_us <= 20.0,
    }


async def phase_idle(hermes: str, pid: int, count: int, seconds: float, keepalive: float) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {KEY}"}
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=keepalive * 3 + 5)
    rss_before = rss_mb(pid)
    opened = asyncio.Event()
    counter = {"open": 0}
    deadline: dict[str, float] = {}

    async def one(session: aiohttp.ClientSession, i: int) -> tuple[bool, int]:
        async with session.post(
            f"{hermes}/v1/chat/completions", json=chat_body(f"stall {i}", True), headers=auth
        ) as resp:
            if resp.status != 200:
                return False, 0
            counter["open"] += 1
            if counter["open"] == count:
                deadline["at"] = time.monotonic() + seconds
                opened.set()
            keepalives = 0
            await opened.wait()
            while time.monotonic() < deadline["at"]:
                try:
                    line = await asyncio.wait_for(resp.content.readline(), deadline["at"] - time.monotonic())
                except TimeoutError:
                    break
                if not line:
                    return False, keepalives  # EOF: dropped
                if line.startswith(b": keepalive"):
                    keepalives += 1
            return True, keepalives

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks = [asyncio.create_task(one(session, i)) for i in range(count)]
        try:
            await asyncio.wait_for(opened.wait(), 120)
        except TimeoutError:
            pass
        rss_open = rss_mb(pid)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        rss_held = rss_mb(pid)
    ok = [r for r in results if not isinstance(r, BaseException) and r[0]]
    keepalives = [r[1] for r in ok]
    expected = int(seconds // keepalive) - 1
    await asyncio.sleep(2)  # let the server cancel the turns
    return {
        "connections": count,
        "held_s": seconds,
        "opened": counter["open"],
        "held_without_drop": len(ok),
        "dropped": count - len(ok),
        "errors": [repr(r)[:200] for r in results if isinstance(r, BaseException)][:5],
        "keepalives_per_conn_min": min(keepalives) if keepalives else 0,
        "rss_mb_before": rss_before,
        "rss_mb_open": rss_open,
        "rss_mb_held": rss_held,
        "rss_growth_mb": rss_held - rss_before,
        "rss_mb_after_close": rss_mb(pid),
        "ok": len(ok) == count and (min(keepalives) if keepalives else 0) >= expected,
    }


async def profile_phases(
    session: aiohttp.ClientSession, hermes: str, args: argparse.Namespace, capture: ProfileCapture
) -> str:
    """The server's profile of `--requests` plain turns and of one burst (see `--profile`)."""
    auth = {"Authorization": f"Bearer {KEY}"}
    turns, streams = args.requests, min(args.streams, 50)

    async def plain(i: int) -> None:
        body = chat_body(f"small profile {i}", False)
        async with session.post(f"{hermes}/v1/chat/completions", json=body, headers=auth) as resp:
            await resp.read()

    async def streamed(i: int) -> None:
        path, body = stream_request(args.api, f"big:{args.chunks}:{args.chunk_delay}:{i}")
        async with session.post(f"{hermes}{path}", json=body, headers=auth) as resp:
            await read_api_stream(args.api, resp, time.perf_counter())

    with capture.phase("turn"):
        for i in range(turns):
            await plain(i)
    with capture.phase("chunks"):
        await asyncio.gather(*(streamed(i) for i in range(streams)))
    if args.profile_out:  # the raw stats too, for pstats' callers and callees
        for name, path in capture.files.items():
            shutil.copyfile(path, f"{args.profile_out}.{name}.pstats")
    return "\n".join((
        capture.report("turn", per=turns, unit="turn", top=args.profile),
        capture.report("chunks", per=streams * args.chunks, unit="chunk", top=args.profile),
    ))  # fmt: skip


# ---- orchestration -------------------------------------------------------------------------


def start(
    cmd: list[str], env: dict[str, str], cwd: str, pattern: str, stream: str
) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=raise_fd_limit,  # noqa: PLW1509 - the bench starts its processes before any thread
    )
    pipe = proc.stdout if stream == "stdout" else proc.stderr
    assert pipe is not None
    for line in pipe:
        match = re.search(pattern, line)
        if match:
            return proc, match.group(1)
    raise RuntimeError(f"{cmd[:3]} did not start (exit {proc.poll()})")


async def main(args: argparse.Namespace) -> int:
    raise_fd_limit()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
        up_proc, port = start([sys.executable, __file__, "--upstream"], clean, home, r"^(\d+)$", "stdout")
        upstream = f"http://127.0.0.1:{port}/v1"
        env = {
            **clean,
            "HERMES_HOME": home,
            "HERMES_BASE_URL": upstream,
            "HERMES_MODEL": "scripted-model",
            "HERMES_API_KEY": "sk-upstream",
            "API_SERVER_KEY": KEY,
            "API_SERVER_MAX_CONCURRENT_RUNS": "0",
            "API_SERVER_KEEPALIVE_SECONDS": str(args.keepalive),
            "HERMES_SANDBOX": "off",  # no tool runs in the bench; serve refuses auto where bwrap cannot work
        }
        serve = ["serve", "--port", "0"]
        profile_dir = Path(home) / "profiles"
        if args.profile:
            profile_dir.mkdir()
            command = [sys.executable, str(Path(__file__).with_name("profiling.py")), str(profile_dir), *serve]
        else:
            command = [sys.executable, "-m", "hermes", *serve]
        hermes_proc, hermes = start(command, env, home, r"listening on (http://\S+)", "stderr")
        report: dict[str, Any] = {"cpus": os.cpu_count()}
        profiles = ""
        try:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
                engine = EngineOnly(upstream, home)
                try:
                    report["latency"] = await phase_latency(session, upstream, hermes, args.requests, engine)
                finally:
                    await engine.close()
                report["outside"] = await asyncio.to_thread(
                    outside_latency, upstream, hermes, args.requests, hermes_proc.pid, up_proc.pid
                )
                turn_cpu = report["outside"]["hermes_cpu_ms_per_request"]
                if not args.latency_only:
                    report["streams"] = await phase_streams(
                        session, hermes, args.streams, args.chunks, args.chunk_delay,
                        pid=hermes_proc.pid, turn_cpu_ms=turn_cpu, api=args.api,
                    )  # fmt: skip
                if args.profile:
                    profiles = await profile_phases(session, hermes, args, ProfileCapture(hermes_proc.pid, profile_dir))
            rss = rss_mb(hermes_proc.pid)
            report["memory"] = {"rss_mb_after_load": rss, "target_mb": 200, "ok": rss < 200}
            if args.idle and not args.latency_only:
                report["idle"] = await phase_idle(hermes, hermes_proc.pid, args.idle, args.idle_seconds, args.keepalive)
        finally:
            for proc in (hermes_proc, up_proc):
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    if args.profile:
        if args.profile_out:
            Path(args.profile_out).write_text(profiles)
            print(f"profile written to {args.profile_out} (with its .turn.pstats and .chunks.pstats)", file=sys.stderr)
        else:
            print(profiles, file=sys.stderr if args.json else sys.stdout)
    return 0 if all(part.get("ok", True) for part in report.values() if isinstance(part, dict)) else 1


def print_report(r: dict[str, Any]) -> None:
    def mark(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    lat = r["latency"]
    print(f"cpus: {r['cpus']}")
    print(
        f"[{mark(lat['ok'])}] added latency (non-streaming, {lat['requests']} req): median "
        f"{lat['added_median_ms']:.2f} ms "
        f"(hermes p50 {lat['hermes_ms']['p50']:.2f} / p95 {lat['hermes_ms']['p95']:.2f} ms, "
        f"direct p50 {lat['direct_ms']['p50']:.2f} / p95 {lat['direct_ms']['p95']:.2f} ms; target < 3 ms)"
    )
    print(
        f"       of which: engine turn alone (same store settings, no HTTP) p50 {lat['engine_only_ms']['p50']:.2f} ms, "
        f"server HTTP layer {lat['http_layer_median_ms']:.2f} ms"
    )
    out = r["outside"]
    print(
        f"[{mark(out['ok'])}] measured from outside ({out['client']}, {out['requests']} req): hermes p50 "
        f"{out['hermes_ms']['p50']:.2f} ms / direct p50 {out['direct_ms']['p50']:.2f} ms = ratio {out['ratio']:.2f}x "
        f"(p95 {out['hermes_ms']['p95']:.2f} / {out['direct_ms']['p95']:.2f} ms; target <= 2x)"
    )
    print(
        f"[{mark(out['hermes_cpu_ms_per_request'] <= out['target_cpu_ms_per_request'])}] CPU per plain turn: hermes "
        f"{out['hermes_cpu_ms_per_request']:.2f} ms (user {out['hermes_user_cpu_ms_per_request']:.2f}, system "
        f"{out['hermes_system_cpu_ms_per_request']:.2f}; target <= 1.0 ms); "
        f"the upstream answering directly {out['upstream_cpu_ms_per_direct_request']:.2f} ms"
    )
    st = r.get("streams")
    if st is None:
        print(f"server RSS: {r['memory']['rss_mb_after_load']:.1f} MB")
        return
    print(
        f"[{mark(st['ok'])}] {st['streams']} concurrent {st['api']} streams x {st['chunks_per_stream']} chunks: "
        f"{st['succeeded']}/{st['streams']} succeeded, first content chunk p50 {st['first_content_ms']['p50']:.1f} ms "
        f"(p95 {st['first_content_ms']['p95']}, first frame p50 {st['first_frame_ms']['p50']}), "
        f"{st['aggregate_chunks_per_s']:.0f} chunks/s aggregate, wall {st['wall_s']:.1f} s"
    )
    print(
        f"[{mark(st['hermes_cpu_us_per_chunk'] <= st['target_cpu_us_per_chunk'])}] CPU per forwarded chunk: "
        f"{st['hermes_cpu_us_per_chunk']:.1f} µs (the streams' turns taken off; "
        f"{st['hermes_cpu_us_per_chunk_gross']:.1f} µs with them; target <= 20 µs)"
    )
    if st["errors"]:
        print("    errors:", st["errors"])
    mem = r["memory"]
    print(f"[{mark(mem['ok'])}] server RSS after load: {mem['rss_mb_after_load']:.1f} MB (target < 200 MB)")
    if "idle" in r:
        idle = r["idle"]
        print(
            f"[{mark(idle['ok'])}] {idle['connections']} idle SSE connections held {idle['held_s']:.0f} s: "
            f"{idle['held_without_drop']} held, {idle['dropped']} dropped, min keepalives/conn "
            f"{idle['keepalives_per_conn_min']}; RSS {idle['rss_mb_before']:.1f} -> {idle['rss_mb_held']:.1f} MB "
            f"(growth {idle['rss_growth_mb']:.1f} MB), after close {idle['rss_mb_after_close']:.1f} MB"
        )
        if idle["errors"]:
            print("    errors:", idle["errors"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument(
        "--chunk-delay",
        type=float,
        default=0.001,
        help="upstream pause before each chunk (s); "
        "0 makes the scripted upstream write each stream whole, one after another",
    )
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--keepalive", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--latency-only", action="store_true", help="only the added-latency phases")
    parser.add_argument(
        "--profile", type=int, nargs="?", const=25, default=0, metavar="N",
        help="profile the server (cProfile) over extra plain turns and one burst; print the top N functions",
    )  # fmt: skip
    parser.add_argument("--profile-out", help="write the profile tables to this file")
    parser.add_argument(
        "--api", choices=("chat", "responses"), default="chat",
        help="the API of the streaming burst: chat completions or the Responses API",
    )  # fmt: skip
    ns = parser.parse_args()
    if ns.upstream:
        asyncio.run(run_upstream())
    else:
        sys.exit(asyncio.run(main(ns)))
