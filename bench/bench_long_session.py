"""Cost that stays flat as the work grows (issue 34): long sessions, compaction, the WAL.

    python bench/bench_long_session.py [--rounds 12] [--block 10] [--sizes 10 500 2000]
                                       [--compaction-turns 40] [--sessions 20000] [--clients 8]
                                       [--listing-size 2000] [--listing-turns 100] [--listing-cold 10]
                                       [--only turns compaction wal listing] [--json]

Four phases, each against a real `hermes serve` (SQLite, `state.db`) and a scripted
upstream on loopback (`bench_server.py`'s); the server and its sandbox are those of
`bench_server.py`. Run it on another checkout (a base commit) by putting that checkout
first on PYTHONPATH: the server is started with `python -m hermes` from there.

1. turns: one session per size in `--sizes` (seeded in state.db before the server starts,
   short user/assistant messages); rounds of `--block` chat turns in each session with
   `X-Hermes-Session-Id`, the sizes interleaved block by block so a machine loaded by
   others weighs on every size alike. Per size: the hermes process's CPU time per turn
   (user + system from /proc, over the blocks of that size; not wall time), and the
   added latency: median(turn through hermes) - median(the same number of messages sent
   straight to the upstream). Ratio: CPU per turn at the largest size / at the smallest
   (goal <= 1.5).
2. compaction: a server with `HERMES_CONTEXT_WINDOW=4000`; on each path (the session
   header, a resent full history, a Responses chain by previous_response_id, /v1/runs with
   session_id) a conversation past its threshold goes on for `--compaction-turns` turns of
   ~400 characters; the upstream (in this process) counts its requests: summary requests
   and turn requests per turn. A session past its threshold is summarised once per
   crossing (the recent part grows back past it every dozen turns or so), not per turn.
3. wal: `--sessions` chat completions without a session header (each a new session),
   `--clients` at a time; the -wal file's size sampled every 0.25 s (its maximum) and at
   the end, beside the database's.

4. listing: `GET /api/sessions` (of `--listing-short` short sessions and the long ones)
   one after another, its latency (p50/p99/max): alone, while another client makes
   `--listing-turns` turns in a `--listing-size`-message session whose history it read
   before (warm), and while it makes the first turn in each of `--listing-cold` more
   sessions of that size (cold: each history read from the store).

Prints a report, or one JSON line with `--json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from bench_server import KEY, cpu_ms, raise_fd_limit, start

from hermes.testing.upstream import ScriptedUpstream, text_reply

AUTH = {"Authorization": f"Bearer {KEY}"}
SUMMARIZER_MARK = "You compact the history of a conversation"
"""The start of the summariser's system prompt (hermes.agent.context.SUMMARIZER_PROMPT)."""


def _env(home: str, upstream: str, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
    return {
        **clean,
        "HERMES_HOME": home,
        "HERMES_BASE_URL": upstream,
        "HERMES_MODEL": "scripted-model",
        "HERMES_API_KEY": "sk-upstream",
        "API_SERVER_KEY": KEY,
        "API_SERVER_MAX_CONCURRENT_RUNS": "0",
        "HERMES_SANDBOX": "off",  # no tool runs here
        **extra,
    }


def _serve(home: str, env: dict[str, str]) -> tuple[Any, str]:
    return start([sys.executable, "-m", "hermes", "serve", "--port", "0"], env, home, r"listening on (http://\S+)",
                 "stderr")  # fmt: skip


def _stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except Exception:  # noqa: BLE001 - a stuck server is killed
        proc.kill()


def _message(i: int) -> dict[str, str]:
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": f"message {i}: the quick brown fox jumps over the lazy dog"}


# ---- 1. turns by session length --------------------------------------------------------------


def seed_sessions(home: Path, sizes: list[int]) -> dict[int, str]:
    """One session of `size` messages per size, written before the server starts."""
    from hermes.store.records import NewMessage
    from hermes.testing.state_db import open_sync_state

    store = open_sync_state(home / "state.db")
    ids: dict[int, str] = {}
    try:
        for size in sizes:
            session = store.create_session(source="api_server", session_id=f"bench-{size}",
                                           system_prompt="You are a test agent.")  # fmt: skip
            for i in range(size):
                message = _message(i)
                store.append_message(session.id, NewMessage(role=message["role"], content=message["content"]))
            ids[size] = session.id
    finally:
        store.close()
    return ids


async def phase_turns(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hermes-long-") as home:
        env = _env(home, "")
        up_proc, port = start([sys.executable, str(Path(__file__).with_name("bench_server.py")), "--upstream"],
                              env, home, r"^(\d+)$", "stdout")  # fmt: skip
        upstream = f"http://127.0.0.1:{port}/v1"
        ids = seed_sessions(Path(home), args.sizes)
        proc, hermes = _serve(home, _env(home, upstream))
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

                async def through(size: int, i: int) -> float:
                    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": f"small {i}"}]}
                    headers = {**AUTH, "X-Hermes-Session-Id": ids[size]}
                    started = time.perf_counter()
                    async with session.post(f"{hermes}/v1/chat/completions", json=body, headers=headers) as resp:
                        await resp.read()
                        assert resp.status == 200, resp.status
                    return (time.perf_counter() - started) * 1000

                async def direct(size: int) -> float:
                    messages = [{"role": "system", "content": "You are a test agent."},
                                *(_message(i) for i in range(size)), {"role": "user", "content": "small"}]  # fmt: skip
                    started = time.perf_counter()
                    async with session.post(f"{upstream}/chat/completions", json={"model": "m", "messages": messages,
                                                                                 "stream": True}) as resp:  # fmt: skip
                        await resp.read()
                    return (time.perf_counter() - started) * 1000

                for size in args.sizes:  # warm up: the first turn of a session in this process reads it all
                    for i in range(3):
                        await through(size, -1 - i)
                        await direct(size)
                cpu: dict[int, float] = dict.fromkeys(args.sizes, 0.0)
                wall: dict[int, list[float]] = {size: [] for size in args.sizes}
                straight: dict[int, list[float]] = {size: [] for size in args.sizes}
                turns = 0
                for r in range(args.rounds):
                    order = args.sizes if r % 2 == 0 else list(reversed(args.sizes))
                    for size in order:
                        before = cpu_ms(proc.pid)
                        for _ in range(args.block):
                            wall[size].append(await through(size, turns))
                            turns += 1
                        cpu[size] += cpu_ms(proc.pid) - before
                        for _ in range(args.block):
                            straight[size].append(await direct(size))
                per_size = {}
                for size in args.sizes:
                    n = len(wall[size])
                    per_size[str(size)] = {
                        "turns": n,
                        "cpu_ms_per_turn": cpu[size] / n,
                        "hermes_ms_p50": statistics.median(wall[size]),
                        "direct_ms_p50": statistics.median(straight[size]),
                        "added_ms_p50": statistics.median(wall[size]) - statistics.median(straight[size]),
                    }
        finally:
            _stop(proc)
            _stop(up_proc)
    small, large = str(min(args.sizes)), str(max(args.sizes))
    ratio = per_size[large]["cpu_ms_per_turn"] / per_size[small]["cpu_ms_per_turn"]
    return {"sizes": per_size, "cpu_ratio_largest_to_smallest": ratio, "goal": 1.5, "ok": ratio <= 1.5}


# ---- 2. compaction on every path ---------------------------------------------------------------


def _long_history(pairs: int = 12) -> list[dict[str, str]]:
    out = []
    for i in range(pairs):
        out.append({"role": "user", "content": f"step {i}: " + "q" * 1200})
        out.append({"role": "assistant", "content": f"did {i}: " + "a" * 1200})
    return out


def _turn_text(i: int) -> str:
    return f"turn {i}: " + "lorem ipsum dolor sit amet " * 15


async def phase_compaction(args: argparse.Namespace) -> dict[str, Any]:
    upstream = ScriptedUpstream()
    upstream.default = text_reply("noted")
    await upstream.start()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hermes-compact-") as home:
        from hermes.store.records import NewMessage
        from hermes.testing.state_db import open_sync_state

        store = open_sync_state(Path(home) / "state.db")
        for name in ("header", "runs"):
            store.create_session(source="api_server", session_id=f"compact-{name}", system_prompt="You are a tester.")
            for message in _long_history():
                store.append_message(f"compact-{name}", NewMessage(role=message["role"], content=message["content"]))
        store.close()
        proc, hermes = _serve(home, _env(home, upstream.base_url, HERMES_CONTEXT_WINDOW="4000"))
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
                for path in ("header", "resent", "responses", "runs"):
                    out[path] = await _compaction_path(session, hermes, upstream, path, args.compaction_turns)
        finally:
            _stop(proc)
            await upstream.stop()
        import sqlite3

        db = sqlite3.connect(Path(home) / "state.db")
        try:
            for path in out:
                sid = out[path].pop("session_id")
                out[path]["markers"] = db.execute("SELECT count(*) FROM compactions WHERE session_id = ?",
                                                  (sid,)).fetchone()[0]  # fmt: skip
        finally:
            db.close()
    return out


async def _compaction_path(
    session: aiohttp.ClientSession, hermes: str, upstream: ScriptedUpstream, path: str, turns: int
) -> dict[str, Any]:
    per_turn: list[int] = []
    summaries = 0
    messages: list[dict[str, str]] = _long_history()
    previous: str | None = None
    session_id = f"compact-{path}"
    for i in range(turns):
        text = _turn_text(i)
        upstream.requests.clear()
        if path == "header":
            resp_json = await _post(session, f"{hermes}/v1/chat/completions",
                                    {"messages": [{"role": "user", "content": text}]},
                                    {"X-Hermes-Session-Id": session_id})  # fmt: skip
        elif path == "resent":
            messages.append({"role": "user", "content": text})
            resp_json = await _post(session, f"{hermes}/v1/chat/completions", {"messages": messages}, {})
            messages.append({"role": "assistant", "content": resp_json["choices"][0]["message"]["content"]})
            session_id = resp_json["_session"]
        elif path == "responses":
            body: dict[str, Any] = {"model": "hermes-agent", "input": text}
            if previous is None:
                items = [{"type": "message", "role": m["role"], "content": m["content"]} for m in messages]
                body["input"] = [*items, {"role": "user", "content": text}]
            else:
                body["previous_response_id"] = previous
            resp_json = await _post(session, f"{hermes}/v1/responses", body, {})
            previous = resp_json["id"]
            session_id = resp_json["_session"]
        else:
            started = await _post(session, f"{hermes}/v1/runs", {"input": text, "session_id": session_id}, {})
            for _ in range(3000):
                async with session.get(f"{hermes}/v1/runs/{started['run_id']}", headers=AUTH) as resp:
                    status = await resp.json()
                if status["status"] not in ("queued", "started", "running"):
                    break
                await asyncio.sleep(0.01)
            assert status["status"] == "completed", status
        summary = sum(1 for r in upstream.requests if str(r.messages[0].get("content", "")).startswith(SUMMARIZER_MARK))
        summaries += summary
        per_turn.append(len(upstream.requests))
    return {
        "turns": turns,
        "calls_per_turn": per_turn,
        "mean_calls_per_turn": sum(per_turn) / turns,
        "last_10_calls": per_turn[-10:],
        "summary_requests": summaries,
        "session_id": session_id,
    }


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    async with session.post(url, json=body, headers={**AUTH, **headers}) as resp:
        text = await resp.text()
        assert resp.status in (200, 202), (resp.status, text)
        data = json.loads(text)
        data["_session"] = resp.headers.get("X-Hermes-Session-Id")
        return data


# ---- 3. the WAL after many sessions ----------------------------------------------------------


async def phase_wal(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hermes-wal-") as home:
        env = _env(home, "")
        up_proc, port = start([sys.executable, str(Path(__file__).with_name("bench_server.py")), "--upstream"],
                              env, home, r"^(\d+)$", "stdout")  # fmt: skip
        proc, hermes = _serve(home, _env(home, f"http://127.0.0.1:{port}/v1"))
        wal = Path(home) / "state.db-wal"
        peak = 0
        done = 0
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

                async def client(k: int) -> None:
                    nonlocal done
                    for i in range(k, args.sessions, args.clients):
                        text = f"small new conversation {i} " + "x" * 200
                        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}
                        async with session.post(f"{hermes}/v1/chat/completions", json=body, headers=AUTH) as resp:
                            await resp.read()
                            assert resp.status == 200, resp.status
                        done += 1

                async def sample() -> None:
                    nonlocal peak
                    while True:
                        peak = max(peak, wal.stat().st_size if wal.exists() else 0)
                        await asyncio.sleep(0.25)

                sampler = asyncio.create_task(sample())
                started = time.perf_counter()
                await asyncio.gather(*(client(k) for k in range(args.clients)))
                elapsed = time.perf_counter() - started
                await asyncio.sleep(2.5)  # two more background checkpoints
                sampler.cancel()
            end = wal.stat().st_size if wal.exists() else 0
            db = (Path(home) / "state.db").stat().st_size
        finally:
            _stop(proc)
            _stop(up_proc)
    mb = 1024 * 1024
    return {"sessions": done, "seconds": elapsed, "wal_peak_mb": peak / mb, "wal_end_mb": end / mb,
            "db_mb": db / mb, "bound_mb": 64 + 16, "ok": peak <= (64 + 16) * mb}  # fmt: skip


# ---- 4. listing sessions while another client talks to a long session ------------------------


def seed_listing(home: Path, size: int, cold: int, short: int) -> tuple[str, list[str]]:
    """`short` sessions of two messages (something to list), one long session of `size`
    messages for the warm talker and `cold` more of that size, one per cold turn."""
    from hermes.store.records import NewMessage
    from hermes.testing.state_db import open_sync_state

    store = open_sync_state(home / "state.db")
    try:
        with store.transaction():
            for k in range(short):
                sid = store.create_session(source="api_server", title=f"short {k}").id
                for i in range(2):
                    store.append_message(sid, NewMessage(role=_message(i)["role"], content=_message(i)["content"]))
            long_ids = []
            for k in range(1 + cold):
                sid = store.create_session(source="api_server", session_id=f"long-{k}",
                                           system_prompt="You are a test agent.").id  # fmt: skip
                for i in range(size):
                    store.append_message(sid, NewMessage(role=_message(i)["role"], content=_message(i)["content"]))
                long_ids.append(sid)
    finally:
        store.close()
    return long_ids[0], long_ids[1:]


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"n": len(ordered), "p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))], "max": ordered[-1]}  # fmt: skip


async def settle(pid: int, *, idle_share: float = 0.05, limit: float = 60.0) -> None:
    """Wait (at most `limit` seconds) until the process spends under `idle_share` of a CPU."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = cpu_ms(pid)
        await asyncio.sleep(0.5)
        if cpu_ms(pid) - before < idle_share * 500:
            return


async def phase_listing(args: argparse.Namespace) -> dict[str, Any]:
    """`GET /api/sessions` latency alone, while another client makes turns in one long
    session (warm: its history read before), and while it makes the first turn of each
    of `--listing-cold` long sessions (cold: each read from the store)."""
    with tempfile.TemporaryDirectory(prefix="hermes-listing-") as home:
        env = _env(home, "")
        up_proc, port = start([sys.executable, str(Path(__file__).with_name("bench_server.py")), "--upstream"],
                              env, home, r"^(\d+)$", "stdout")  # fmt: skip
        upstream = f"http://127.0.0.1:{port}/v1"
        warm_id, cold_ids = seed_listing(Path(home), args.listing_size, args.listing_cold, args.listing_short)
        proc, hermes = _serve(home, _env(home, upstream))
        out: dict[str, Any] = {"size": args.listing_size}
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

                async def listing() -> float:
                    started = time.perf_counter()
                    async with session.get(f"{hermes}/api/sessions", headers=AUTH) as resp:
                        await resp.read()
                        assert resp.status == 200, resp.status
                    return (time.perf_counter() - started) * 1000

                async def turn(session_id: str, i: int) -> float:
                    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": f"small {i}"}]}
                    started = time.perf_counter()
                    async with session.post(f"{hermes}/v1/chat/completions", json=body,
                                            headers={**AUTH, "X-Hermes-Session-Id": session_id}) as resp:  # fmt: skip
                        await resp.read()
                        assert resp.status == 200, resp.status
                    return (time.perf_counter() - started) * 1000

                async def while_talking(talk: Any) -> tuple[list[float], list[float]]:
                    lists: list[float] = []
                    turns: list[float] = []
                    done = asyncio.Event()

                    async def talker() -> None:
                        try:
                            await talk(turns)
                        finally:
                            done.set()

                    task = asyncio.create_task(talker())
                    while not done.is_set():
                        lists.append(await listing())
                    await task
                    return lists, turns

                for _ in range(20):  # warm up the server and the client's connections
                    await listing()
                await settle(proc.pid)  # search indexing of the seeded messages in the background, where it is
                for i in range(3):  # the warm session's history is read (and cached, where it is)
                    await turn(warm_id, -1 - i)
                out["alone"] = _stats([await listing() for _ in range(args.listing_requests)])

                async def warm_talk(turns: list[float]) -> None:
                    for i in range(args.listing_turns):
                        turns.append(await turn(warm_id, i))

                lists, turns = await while_talking(warm_talk)
                out["warm"] = {**_stats(lists), "turns": len(turns), "turn_p50": statistics.median(turns)}

                async def cold_talk(turns: list[float]) -> None:
                    for i, sid in enumerate(cold_ids):
                        turns.append(await turn(sid, i))

                lists, turns = await while_talking(cold_talk)
                out["cold"] = {**_stats(lists), "turns": len(turns), "turn_p50": statistics.median(turns)}
        finally:
            _stop(proc)
            _stop(up_proc)
    return out


# ---- orchestration ----------------------------------------------------------------------------


def print_report(report: dict[str, Any]) -> None:
    if "turns" in report:
        t = report["turns"]
        print("per turn by session length (X-Hermes-Session-Id, non-streamed):")
        print(f"  {'messages':>9} {'CPU ms/turn':>12} {'hermes p50':>11} {'direct p50':>11} {'added p50':>10}")
        for size, row in t["sizes"].items():
            print(f"  {size:>9} {row['cpu_ms_per_turn']:>12.2f} {row['hermes_ms_p50']:>11.2f} "
                  f"{row['direct_ms_p50']:>11.2f} {row['added_ms_p50']:>10.2f}")  # fmt: skip
        print(f"  CPU ratio largest/smallest: {t['cpu_ratio_largest_to_smallest']:.2f} (goal <= {t['goal']})")
    if "compaction" in report:
        print("upstream calls per turn past the compaction threshold (context_window 4000):")
        for path, row in report["compaction"].items():
            print(f"  {path:>9}: mean {row['mean_calls_per_turn']:.2f} over {row['turns']} turns, "
                  f"summary requests {row['summary_requests']}, markers {row['markers']}, "
                  f"last 10 {row['last_10_calls']}")  # fmt: skip
    if "listing" in report:
        li = report["listing"]
        print(f"GET /api/sessions (ms) while another client talks to a {li['size']}-message session:")
        for mode in ("alone", "warm", "cold"):
            row = li[mode]
            extra = f"  ({row['turns']} turns, turn p50 {row['turn_p50']:.1f} ms)" if "turns" in row else ""
            print(f"  {mode:>6}: p50 {row['p50']:.2f}  p99 {row['p99']:.2f}  max {row['max']:.2f}  n {row['n']}{extra}")
    if "wal" in report:
        w = report["wal"]
        print(f"WAL after {w['sessions']} sessions ({w['seconds']:.0f} s): peak {w['wal_peak_mb']:.1f} MB, "
              f"end {w['wal_end_mb']:.1f} MB, database {w['db_mb']:.1f} MB (bound {w['bound_mb']} MB)")


async def main(args: argparse.Namespace) -> int:
    raise_fd_limit()
    report: dict[str, Any] = {"cpus": os.cpu_count()}
    if "turns" in args.only:
        report["turns"] = await phase_turns(args)
    if "compaction" in args.only:
        report["compaction"] = await phase_compaction(args)
    if "wal" in args.only:
        report["wal"] = await phase_wal(args)
    if "listing" in args.only:
        report["listing"] = await phase_listing(args)
    if args.json:
        print(json.dumps({"bench": "long_session", **report}))
    else:
        print_report(report)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 500, 2000])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--compaction-turns", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--listing-size", type=int, default=2000)
    parser.add_argument("--listing-requests", type=int, default=300)
    parser.add_argument("--listing-turns", type=int, default=100)
    parser.add_argument("--listing-cold", type=int, default=10)
    parser.add_argument("--listing-short", type=int, default=50)
    parser.add_argument("--only", nargs="+", default=["turns", "compaction", "wal", "listing"],
                        choices=["turns", "compaction", "wal", "listing"])  # fmt: skip
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
