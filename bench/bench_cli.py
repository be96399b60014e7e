"""Wall time of the CLI's fast paths, as a user runs them (a fresh process each time).

    python bench/bench_cli.py [--sessions 3000] [--runs 10] [--importtime]

Builds a temporary HERMES_HOME whose state.db holds --sessions sessions (two messages
each, written through the public store API), then runs each command --runs times as a
subprocess (after one warm-up run, so .pyc files exist) and prints the median, min and
max wall time against the target, and the median CPU time (user + system), which stays
meaningful when other work loads the machine:

    hermes --help          < 150 ms
    hermes sessions list   < 150 ms

--importtime also prints the slowest imports (cumulative, from `python -X importtime`)
of each command, which is where to look when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hermes.store import open_session_store  # noqa: E402
from hermes.store.records import NewMessage

TARGET_MS = 150.0
COMMANDS: dict[str, list[str]] = {
    "hermes --help": ["--help"],
    "hermes sessions list": ["sessions", "list"],
}


def hermes_command() -> list[str]:
    """The installed `hermes` script next to this interpreter, else `python -m hermes`."""
    script = shutil.which("hermes", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "hermes"]


def populate(home: Path, sessions: int) -> None:
    store = open_session_store(home / "state.db")
    try:
        sources = ("cli", "tui", "api_server")
        for i in range(sessions):
            record = store.create_session(source=sources[i % 3], title=f"Session number {i}", model="bench-model")
            store.append_message(record.id, NewMessage(role="user", content=f"question {i} about docker and files"))
            store.append_message(record.id, NewMessage(role="assistant", content=f"answer {i}: it depends"))
    finally:
        store.close()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_runs(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) of each run. CPU time (user + system of the child) barely moves
    when other work shares the machine; wall time is the target."""

    def once() -> tuple[float, float]:
        cpu = _children_cpu()
        started = time.perf_counter()
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        elapsed = (time.perf_counter() - started) * 1000
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()}")
        return elapsed, (_children_cpu() - cpu) * 1000

    once()  # warm-up: compile .pyc files, fill the page cache
    samples = [once() for _ in range(runs)]
    return [wall for wall, _ in samples], [cpu for _, cpu in samples]


def slowest_imports(argv: list[str], env: dict[str, str], top: int = 12) -> list[tuple[int, str]]:
    python_argv = [sys.executable, "-X", "importtime", "-m", "hermes", *argv]
    proc = subprocess.run(python_argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append((int(cumulative_us), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hermes-bench-cli-") as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        populate(home, args.sessions)
        built = time.perf_counter() - started
        print(f"state.db: {args.sessions} sessions, {2 * args.sessions} messages (built in {built:.1f} s)")
        env = {**os.environ, "HERMES_HOME": str(home)}
        argv0 = hermes_command()
        print(f"command: {' '.join(argv0)}; {args.runs} runs each after one warm-up\n")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'command':<24} {'wall median':>11} {'min':>9} {'max':>9} {'CPU median':>11}  target (wall)")
        for label, argv in COMMANDS.items():
            wall, cpu = time_runs(argv0 + argv, env, args.runs)
            median = statistics.median(wall)
            verdict = "ok" if median < TARGET_MS else "OVER"
            print(
                f"{label:<24} {median:9.1f}ms {min(wall):7.1f}ms {max(wall):7.1f}ms {statistics.median(cpu):9.1f}ms"
                f"  < {TARGET_MS:.0f} ms {verdict}"
            )
        if args.importtime:
            for label, argv in COMMANDS.items():
                print(f"\nslowest imports of `{label}` (cumulative µs):")
                for cumulative, name in slowest_imports(argv, env):
                    print(f"  {cumulative:>8}  {name}")


if __name__ == "__main__":
    main()
