"""Start-up of the CLI's fast paths as ratios to `python -c "import typer"`, in one run.

    python bench/bench_cli.py [--sessions 3000] [--runs 15] [--importtime] [--json]

Builds a temporary HERMES_HOME whose state.db holds --sessions sessions (two messages
each, written through the public store API), then runs, --runs rounds after one warm-up
round (so .pyc files exist), each of these as a fresh subprocess, interleaved so a busy
machine slows all three alike:

    baseline               python -c "import typer"
    hermes --help          target <= 1.5x the baseline
    hermes sessions list   target <= 2x the baseline

and prints the median wall and CPU (user + system) time of each and the ratios of the
medians (wall is the target; CPU stays meaningful when other work loads the machine).
The commands run this checkout (PYTHONPATH is its root). Exit status 1 when a wall
ratio misses its target.

--importtime also prints the slowest imports (cumulative, from `python -X importtime`)
of each command, which is where to look when a target is missed.
"""

from __future__ import annotations

import argparse
import json
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

from hermes.store.records import NewMessage
from hermes.testing.state_db import open_sync_state  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COMMANDS: dict[str, list[str]] = {
    "hermes --help": ["--help"],
    "hermes sessions list": ["sessions", "list"],
}
TARGETS = {"hermes --help": 1.5, "hermes sessions list": 2.0}
"""Each command's wall-time target, as a multiple of the baseline's."""
BASELINE = "import typer"


def hermes_command() -> list[str]:
    """The installed `hermes` script next to this interpreter, else `python -m hermes`."""
    script = shutil.which("hermes", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "hermes"]


def populate(home: Path, sessions: int) -> None:
    store = open_sync_state(home / "state.db")
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


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run of `argv`."""
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return elapsed, (_children_cpu() - cpu) * 1000


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU ms of each command, the commands interleaved round by round."""
    for argv in commands.values():
        run_once(argv, env)  # warm-up: compile .pyc files, fill the page cache
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(run_once(argv, env))
    return {
        label: {
            "wall_ms": statistics.median(wall for wall, _ in got),
            "cpu_ms": statistics.median(cpu for _, cpu in got),
            "wall_min_ms": min(wall for wall, _ in got),
        }
        for label, got in samples.items()
    }


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line at the end")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hermes-bench-cli-") as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        populate(home, args.sessions)
        built = time.perf_counter() - started
        print(f"state.db: {args.sessions} sessions, {2 * args.sessions} messages (built in {built:.1f} s)")
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        # .pyc files as an installed hermes has them (the warm-up writes them): without,
        # hermes would compile its sources on every run while typer's come precompiled.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {"HERMES_HOME": str(home), "PYTHONPATH": path}
        argv0 = hermes_command()
        commands = {"baseline": [sys.executable, "-c", BASELINE]}
        commands |= {label: argv0 + argv for label, argv in COMMANDS.items()}
        print(f"command: {' '.join(argv0)}; {args.runs} interleaved rounds after one warm-up")
        print(f"cpus: {os.cpu_count()}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
        results = measure(commands, env, args.runs)
        base = results["baseline"]
        print(
            f"{'command':<24} {'wall median':>11} {'min':>9} {'CPU median':>11} {'wall ratio':>10} {'CPU ratio':>9}"
            "  target"
        )
        ok = True
        report: dict[str, object] = {"cpus": os.cpu_count(), "runs": args.runs, "baseline": base}
        for label, got in results.items():
            wall_ratio, cpu_ratio = got["wall_ms"] / base["wall_ms"], got["cpu_ms"] / base["cpu_ms"]
            target = TARGETS.get(label)
            verdict = "" if target is None else f"<= {target}x {'ok' if wall_ratio <= target else 'OVER'}"
            ok = ok and (target is None or wall_ratio <= target)
            print(
                f"{label:<24} {got['wall_ms']:9.1f}ms {got['wall_min_ms']:7.1f}ms {got['cpu_ms']:9.1f}ms"
                f" {wall_ratio:9.2f}x {cpu_ratio:8.2f}x  {verdict}"
            )
            if target is not None:
                report[label] = {**got, "wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio, "target": target,
                                 "ok": wall_ratio <= target}  # fmt: skip
        if args.importtime:
            for label, argv in COMMANDS.items():
                print(f"\nslowest imports of `{label}` (cumulative µs):")
                for cumulative, name in slowest_imports(argv, env):
                    print(f"  {cumulative:>8}  {name}")
        if args.json:
            print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
