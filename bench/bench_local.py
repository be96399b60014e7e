"""Benchmark of the local provider (hermes[local]) on this machine.

    python bench/bench_local.py [--home DIR] [--threads N] [--repeat 3] [--tasks-only] [--tasks a,b]
    python bench/bench_local.py --suite [--home DIR] [--via bundled,server] [--tasks a,b] [--limit 240]

Measures, with the bundled model (or HERMES_LOCAL_MODEL_PATH):

    assembly            first-use assembly + SHA-256 of the model (only when not yet done)
    load                llama.cpp server start with the model (port 0, in-process)
    first turn          time to first token and total, cold prompt cache ("hello")
    follow-up turn      time to first token of the next turn (prompt cache reused)
    decode speed        tokens/s of a longer answer
    tool step           seconds per model call that ends in a tool call, and the whole
                        read-a-file-then-answer turn through the real engine

    edit tasks          small "fix this file" requests (the calc.py one from issue 12 and
                        a few like it) in fresh folders: each is checked by running the
                        result; the success rate is reported with steps and seconds

    --suite             the project's own task suite: eight small coding tasks (read a
                        config value, fix a failing test, add a function, rename across
                        two files, create a file, find a definition, fix an import,
                        summarise a file), each run as a real `hermes chat -q --yolo
                        --json` process in a fresh folder, offline, checked by what it
                        left on disk and what it answered; success rate, exit codes,
                        seconds and tool calls per task. `--via server` runs the same
                        tasks against the same model behind a llama.cpp HTTP server with
                        tool_protocol = "json" (the way any endpoint's small model runs).

Every request goes through the real stack: Agent → JsonActionProvider →
OpenAICompatProvider → HTTP on 127.0.0.1 → llama.cpp. The prompt the model reads per
call (compact system prompt + tool catalogue) is reported in tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_suite import SuiteTask, task_sets

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import TextDelta, ToolCompleted, ToolStarted, TurnCompleted
from hermes.agent.provider import ModelRequest, Provider, ProviderEvent, TextChunk, ToolCallChunk, UsageChunk
from hermes.agent.providers.local import LocalProvider, LocalServer, local_status, resolve_model
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.config import Settings


class Timed(Provider):
    """Records, per model call: start, first visible event, end, usage, kind."""

    name = "timed"

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.calls: list[dict[str, Any]] = []

    def stream(self, request: ModelRequest) -> Any:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> Any:
        record: dict[str, Any] = {"start": time.perf_counter(), "first": None, "kind": "text", "usage": None}
        self.calls.append(record)
        async for event in self.inner.stream(request):
            if isinstance(event, (TextChunk, ToolCallChunk)) and record["first"] is None:
                record["first"] = time.perf_counter()
            if isinstance(event, ToolCallChunk):
                record["kind"] = "tool"
            if isinstance(event, UsageChunk):
                record["usage"] = event.usage
            yield event
        record["end"] = time.perf_counter()

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        return await self.inner.complete(request)


def tools() -> ToolRegistry:
    """The core tools: their real descriptions count toward the prompt the model reads."""
    from hermes.agent.tools import default_registry

    return default_registry()


async def turn(
    agent: Agent, text: str, history: list[dict[str, Any]], cwd: Path, *, yolo: bool = False
) -> dict[str, Any]:
    start = time.perf_counter()
    first = None
    tool_steps = 0
    names: list[str] = []
    steps: list[str] = []
    result = None
    request = TurnRequest(input=text, history=list(history), persist=False, cwd=str(cwd), yolo=yolo)
    async for event in agent.run_turn(request):
        if isinstance(event, TextDelta) and first is None:
            first = time.perf_counter() - start
        elif isinstance(event, ToolStarted):
            tool_steps += 1
            names.append(event.name)
            steps.append(f"{event.name} {json.dumps(event.arguments)[:160]}")
        elif isinstance(event, ToolCompleted):
            steps[-1] += f" → {'error: ' if event.is_error else ''}{' '.join(event.result.split())[:100]}"
        elif isinstance(event, TurnCompleted):
            result = event.result
    assert result is not None
    history.extend(result.messages)
    return {
        "first_token": first,
        "total": time.perf_counter() - start,
        "status": result.status,
        "tool_steps": tool_steps,
        "tools": names,
        "steps": steps,
        "text": result.final_text,
    }


@dataclass(frozen=True)
class EditTask:
    """A small edit request: files to start from and a check that the edit worked."""

    name: str
    prompt: str
    files: dict[str, str]
    check: str
    """Python run in the task folder; exit status 0 means the task was done."""


EDIT_TASKS: tuple[EditTask, ...] = (
    EditTask(
        "calc-add",
        "add in calc.py returns a - b; fix it so add(2, 3) is 5",
        {"calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"},
        "import calc; assert calc.add(2, 3) == 5 and calc.mul(2, 3) == 6",
    ),
    EditTask(
        "greet-punctuation",
        "greet in greet.py should end with an exclamation mark: greet('Bob') must return 'Hello, Bob!'",
        {"greet.py": 'def greet(name):\n    return "Hello, " + name\n'},
        "import greet; assert greet.greet('Bob') == 'Hello, Bob!'",
    ),
    EditTask(
        "settings-flag",
        "turn DEBUG off in settings.py",
        {"settings.py": 'APP_NAME = "demo"\nDEBUG = True\nPORT = 8000\n'},
        "import settings; assert settings.DEBUG is False and settings.PORT == 8000",
    ),
    EditTask(
        "rename-function",
        "rename the function mul in ops.py to multiply",
        {"ops.py": "def mul(a, b):\n    return a * b\n"},
        "import ops; assert ops.multiply(3, 4) == 12 and not hasattr(ops, 'mul')",
    ),
    EditTask(
        "two-matches",
        "sub in ops2.py is right but add returns a - b too; fix add so add(2, 3) is 5",
        {"ops2.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"},
        "import ops2; assert ops2.add(2, 3) == 5 and ops2.sub(5, 3) == 2",
    ),
    EditTask(
        "off-by-one",
        "last_item in items.py returns the wrong element; fix it so last_item([1, 2, 3]) is 3",
        {"items.py": "def last_item(values):\n    return values[len(values) - 2]\n"},
        "import items; assert items.last_item([1, 2, 3]) == 3",
    ),
)


def run_check(folder: Path, check: str) -> bool:
    done = subprocess.run([sys.executable, "-c", check], cwd=folder, capture_output=True, timeout=30, check=False)
    return done.returncode == 0


async def edit_tasks(agent: Agent, timed: Timed, home: Path, repeat: int, only: list[str] | None = None) -> None:
    print("\n-- edit tasks --")
    results: list[bool] = []
    for task in EDIT_TASKS:
        if only and task.name not in only:
            continue
        for round_ in range(repeat):
            folder = home / "edit-tasks" / f"{task.name}-{round_ + 1}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for name, text in task.files.items():
                (folder / name).write_text(text, encoding="utf-8")
            timed.calls.clear()
            outcome = await turn(agent, task.prompt, [], folder, yolo=True)
            ok = outcome["status"] == "completed" and run_check(folder, task.check)
            results.append(ok)
            answer = " ".join(str(outcome["text"]).split())[:100]
            print(f"{task.name:<18} {'ok  ' if ok else 'FAIL'} {outcome['tool_steps']} tool steps, "
                  f"{fmt(outcome['total'])} — {answer}")
            for step in outcome["steps"]:
                print(f"    {step}")
    rate = sum(results) / len(results) if results else 0.0
    print(f"edit tasks:          {sum(results)}/{len(results)} succeeded ({rate:.0%})")


@dataclass
class SuiteRun:
    task: str
    ok: bool
    exit_code: int | None
    seconds: float
    tool_calls: int
    why: str
    prompt_tokens: int = 0
    """Prompt tokens of the turn's model calls (usage), of which `cached_tokens` came from the cache."""
    cached_tokens: int = 0
    output_tokens: int = 0
    answer_by: str = "model"
    counters: dict[str, float] | None = None
    """llama.cpp's counters for this task (`--via server`: read from /metrics before and after)."""


METRICS = (
    "prompt_tokens_total", "prompt_seconds_total", "tokens_predicted_total", "tokens_predicted_seconds_total",
)


def read_counters(base_url: str) -> dict[str, float]:
    """llama.cpp's Prometheus counters (the server runs with `metrics=True`)."""
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:") and name[9:] in METRICS:
            out[name[9:]] = float(value)
    return out


def rates(counters: dict[str, float]) -> tuple[float, float]:
    """(prompt tokens read per second, tokens generated per second) over `counters`."""
    read = counters["prompt_tokens_total"] / max(counters["prompt_seconds_total"], 1e-9)
    write = counters["tokens_predicted_total"] / max(counters["tokens_predicted_seconds_total"], 1e-9)
    return read, write


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


def run_suite_task(task: SuiteTask, folder: Path, env: dict[str, str], limit: float) -> SuiteRun:
    """One task as a real `hermes chat -q --yolo --json` process in `folder`."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, text in task.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    before = _snapshot(folder)
    argv = [sys.executable, "-m", "hermes", "chat", "-q", task.prompt, "--yolo", "--json"]
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired as expired:
        partial = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else ""
        calls = [json.loads(line) for line in partial.splitlines() if '"type": "tool.started"' in line]
        steps = "; ".join(f"{c['name']} {c.get('preview', '')}"[:60] for c in calls)
        why = f"no exit within {limit:g} s (tools: {steps or 'none'})"
        return SuiteRun(task.name, False, None, time.perf_counter() - started, len(calls), why)
    seconds = time.perf_counter() - started
    (folder.parent / f"{task.name}.events.jsonl").write_text(done.stdout, encoding="utf-8")  # for a post-mortem
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    tool_calls = sum(1 for e in events if e.get("type") == "tool.started")
    result = next((e for e in events if e.get("type") == "result"), {})
    answer = str(result.get("final_text") or "")
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    why = ""
    if done.returncode != 0:
        why = f"exit {done.returncode}: {result.get('error') or done.stderr.strip()[-200:]}"
    elif task.unchanged and _snapshot(folder) != before:
        why = "changed files when only asked a question"
    elif any(want.lower() not in answer.lower() for want in task.answer_has):
        why = f"answer lacks {task.answer_has}: {' '.join(answer.split())[:120]!r}"
    elif task.check is not None and not run_check(folder, task.check):
        why = "the check failed"
    return SuiteRun(
        task.name, not why, done.returncode, seconds, tool_calls, why,
        prompt_tokens=int(usage.get("input_tokens") or 0), cached_tokens=int(usage.get("cached_input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0), answer_by=str(result.get("answer_by") or "model"),
    )


def verify_tasks(tasks: list[SuiteTask], work: Path) -> None:
    """Each check fails on the task's files and passes on its solution: no model involved."""
    bad = 0
    for task in tasks:
        if task.check is None:
            print(f"{task.name:<22} question (answer must contain {task.answer_has})")
            continue
        folder = work / task.name
        for label, overlay, want in (("start", {}, False), ("solution", task.solution, True)):
            if overlay is None:
                print(f"{task.name:<22} no solution to verify against")
                bad += 1
                break
            shutil.rmtree(folder, ignore_errors=True)
            for name, text in {**task.files, **overlay}.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text, encoding="utf-8")
            if run_check(folder, task.check) != want:
                print(f"{task.name:<22} the check {'fails' if want else 'passes'} on the {label} files")
                bad += 1
                break
        else:
            print(f"{task.name:<22} ok (fails at the start, passes on the solution)")
    sys.exit(1 if bad else 0)


def follow_up(env: dict[str, str], folder: Path, limit: float) -> str:
    """Two turns of one session in two processes (`chat -q`, then `chat -q -c`): how much of
    the second turn's prompt came from the cache, and how long it took."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "server.ini").write_text("[http]\nhost = 0.0.0.0\nport = 8317\n\n[admin]\nport = 9090\n")
    rows = []
    for argv in (["What port does server.ini configure for http?"], ["And the admin port?", "-c"]):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "hermes", "chat", "-q", *argv, "--yolo", "--json"],
            cwd=folder, env=env, capture_output=True, text=True, timeout=limit, check=False,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        result = next((json.loads(line) for line in done.stdout.splitlines() if '"type": "result"' in line), {})
        usage = result.get("usage") or {}
        rows.append(f"{seconds:.0f} s, {usage.get('cached_input_tokens', 0)}/{usage.get('input_tokens', 0)} "
                    f"prompt tokens cached, exit {done.returncode}")
    return f"first turn: {rows[0]}; continued in a new process: {rows[1]}"


def suite(args: argparse.Namespace) -> None:
    only = set(args.tasks.split(",")) if args.tasks else None
    sets = task_sets()
    unknown = [name for name in args.set.split(",") if name not in sets]
    if unknown:
        sys.exit(f"--set takes {', '.join(sets)}, not {', '.join(unknown)}")
    chosen = [task for name in args.set.split(",") for task in sets[name]]
    tasks = [t for t in chosen if only is None or t.name in only]
    if args.verify_tasks:
        verify_tasks(tasks, Path(tempfile.mkdtemp(prefix="hermes-suite-verify-")))
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="hermes-suite-"))
    settings = Settings.load(env={"HERMES_HOME": str(home), **_model_cache_env()})
    status = local_status(settings)
    print(f"provider: local — {status.reason}")
    if not status.available:
        sys.exit(1)
    path, name = resolve_model(settings)  # assembled once, before any task is timed
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    base.update(HERMES_HOME=str(home), HERMES_SANDBOX="auto", NO_COLOR="1")
    # Outside HERMES_HOME: tools never write there.
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="hermes-suite-work-"))
    rows: dict[str, list[SuiteRun]] = {}
    for via in args.via.split(","):
        server: LocalServer | None = None
        env = dict(base)
        if via == "bundled":
            env["HERMES_PROVIDER"] = "local"
        elif via == "server":
            server = LocalServer(path, alias=name, threads=args.threads, metrics=True).start()
            env.update(
                HERMES_PROVIDER="openai",
                HERMES_BASE_URL=f"{server.base_url}/v1",
                HERMES_MODEL=name,
                HERMES_TOOL_PROTOCOL="json",
                HERMES_STREAM_STALE_TIMEOUT="900",
            )
        else:
            sys.exit(f"--via takes bundled and/or server, not {via!r}")
        print(f"\n-- suite via {via} --")
        try:
            for task in tasks:
                before = read_counters(server.base_url) if server is not None else None
                run = run_suite_task(task, work / via / task.name, env, args.limit)
                if server is not None and before is not None:
                    after = read_counters(server.base_url)
                    run.counters = {k: after[k] - before.get(k, 0.0) for k in after}
                rows.setdefault(via, []).append(run)
                speed = ""
                if run.counters and run.counters.get("prompt_seconds_total"):
                    read, write = rates(run.counters)
                    speed = f"  read {read:.0f} tok/s, write {write:.1f} tok/s"
                cached = f"{run.cached_tokens}/{run.prompt_tokens} prompt tokens cached"
                print(f"{task.name:<22} {'ok  ' if run.ok else 'FAIL'} exit {run.exit_code}  {run.seconds:6.1f} s  "
                      f"{run.tool_calls} tool calls  {cached}{speed}  {run.answer_by}'s answer  {run.why}", flush=True)
            if args.follow_up:
                print(f"follow-up ({via}): {follow_up(env, work / via / 'follow-up', args.limit)}", flush=True)
        finally:
            if server is not None:
                server.close()
    print("\n| task | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for i, task in enumerate(tasks):
        cells = [f"{'ok' if r[i].ok else 'FAIL'}, {r[i].seconds:.0f} s, {r[i].tool_calls} calls" for r in rows.values()]
        print(f"| {task.name} | " + " | ".join(cells) + " |")
    totals = [f"{sum(r.ok for r in runs)}/{len(runs)}, clean exits {sum(r.exit_code == 0 for r in runs)}"
              for runs in rows.values()]
    print("| **solved** | " + " | ".join(totals) + " |")
    print("| median time per task | " + " | ".join(
        f"{statistics.median(r.seconds for r in runs):.0f} s" for runs in rows.values()) + " |")
    print("| prompt tokens from the cache | " + " | ".join(
        f"{sum(r.cached_tokens for r in runs) / max(1, sum(r.prompt_tokens for r in runs)):.0%}"
        for runs in rows.values()) + " |")
    for via, runs in rows.items():
        counted = [r.counters for r in runs if r.counters]
        if counted:
            total = {k: sum(c.get(k, 0.0) for c in counted) for k in METRICS}
            read, write = rates(total)
            print(f"{via}: read {read:.0f} prompt tokens/s ({total['prompt_tokens_total']:.0f} tokens read), "
                  f"wrote {write:.1f} tokens/s ({total['tokens_predicted_total']:.0f} tokens)")
    for via, runs in rows.items():
        for set_name, members in task_sets().items():
            names = {t.name for t in members}
            picked = [r for r in runs if r.task in names]
            if picked:
                print(f"{via} / {set_name}: {sum(r.ok for r in picked)}/{len(picked)} solved, "
                      f"clean exits {sum(r.exit_code == 0 for r in picked)}, "
                      f"median {statistics.median(r.seconds for r in picked):.0f} s, "
                      f"hermes-written answers {sum(r.answer_by == 'hermes' for r in picked)}")


def _model_cache_env() -> dict[str, str]:
    """The variables that place the per-user model cache (the model is shared, not per home)."""
    return {k: v for k, v in os.environ.items() if k in ("HERMES_MODEL_CACHE", "XDG_CACHE_HOME")}


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:6.2f} s"


async def bench(args: argparse.Namespace) -> None:
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    settings = Settings.load(env={"HERMES_HOME": str(home), **_model_cache_env()})
    status = local_status(settings)
    print(f"provider: local — {status.reason}")
    if not status.available:
        sys.exit(1)

    t = time.perf_counter()
    path, name = resolve_model(settings)
    print(f"assembly + verify:   {fmt(time.perf_counter() - t)}   ({path})")

    t = time.perf_counter()
    slot_dir = home / "models" / "prompt-cache"
    saved = len(list(slot_dir.glob("prompt-*.bin"))) if slot_dir.is_dir() else 0
    server = LocalServer(path, alias=name, threads=args.threads, slot_dir=slot_dir).start()
    print(f"load:                {fmt(time.perf_counter() - t)}   (saved prompt caches on disk: {saved})")

    provider = LocalProvider(server, name)
    timed = Timed(provider)
    # As build_agent does for the local provider: a loaded CPU may read a prompt for minutes.
    options = EngineOptions(max_iterations=8, stale_timeout=LocalProvider.recommended_stale_timeout)
    agent = Agent(timed, store=None, model=name, tools=tools(), options=options)
    work = home / "bench-project"  # stable: the system prompt names it, and saved caches are per prompt
    work.mkdir(exist_ok=True)
    (work / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "4.7.12"\n', encoding="utf-8")

    try:
        if args.tasks_only:
            await edit_tasks(agent, timed, home, args.repeat, args.tasks.split(",") if args.tasks else None)
            return
        for round_ in range(args.repeat):
            history: list[dict[str, Any]] = []
            print(f"\n-- round {round_ + 1} (fresh conversation) --")
            timed.calls.clear()
            first = await turn(agent, "hello", history, work)
            prompt = timed.calls[0]["usage"].input_tokens if timed.calls[0]["usage"] else 0
            print(f"first turn:          first token {fmt(first['first_token'])}, total {fmt(first['total'])} "
                  f"(prompt {prompt} tokens)")
            follow = await turn(agent, "What can you help me with? One sentence.", history, work)
            print(f"follow-up turn:      first token {fmt(follow['first_token'])}, total {fmt(follow['total'])}")

            timed.calls.clear()
            story = await turn(agent, "Write a 150-word story about a lighthouse.", [], work)
            call = timed.calls[-1]
            tokens = call["usage"].output_tokens if call["usage"] else 0
            decode = call["end"] - (call["first"] or call["start"])
            print(f"decode:              {tokens / decode:6.1f} tokens/s ({tokens} tokens in {decode:.2f} s)"
                  f", first token {fmt(story['first_token'])}")

            timed.calls.clear()
            task = await turn(agent, "read pyproject.toml and tell me the version", [], work)
            tool_calls = [c for c in timed.calls if c["kind"] == "tool"]
            per_step = statistics.mean(c["end"] - c["start"] for c in tool_calls) if tool_calls else None
            answer = timed.calls[-1]
            print(f"tool step:           {fmt(per_step)} per tool call ({len(tool_calls)} call(s)), "
                  f"answer call {fmt(answer['end'] - answer['start'])}, whole turn {fmt(task['total'])}, "
                  f"correct={'4.7.12' in task['text']}")
        await edit_tasks(agent, timed, home, args.repeat)
    finally:
        await provider.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", help="HERMES_HOME holding models/ (default: a fresh temporary folder)")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: its own choice)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tasks-only", action="store_true", help="run only the edit tasks")
    parser.add_argument("--tasks", help="comma-separated edit (or, with --suite, suite) task names (default: all)")
    parser.add_argument("--suite", action="store_true", help="run the task suite through `hermes chat -q`")
    parser.add_argument("--set", default="own", help="with --suite: task sets (own, reworded, other, unseen, fresh)")
    parser.add_argument("--follow-up", action="store_true", help="with --suite: also a session continued by -c")
    parser.add_argument("--verify-tasks", action="store_true", help="with --suite: check the tasks, no model")
    parser.add_argument("--via", default="bundled,server", help="with --suite: bundled, server or both")
    parser.add_argument("--limit", type=float, default=240.0, help="with --suite: seconds a task may take")
    parser.add_argument("--work", help="with --suite: folder for the task folders (default: a fresh temporary one)")
    args = parser.parse_args()
    if args.suite:
        suite(args)
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
