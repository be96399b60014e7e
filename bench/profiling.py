"""cProfile of a running `hermes serve`, switched on and off by signals (the benches' `--profile`).

    python bench/profiling.py OUT_DIR [hermes serve arguments …]   # the server, profiled on demand

    capture = ProfileCapture(pid, out_dir)
    with capture.phase("turn"):          # SIGUSR1 … SIGUSR2: OUT_DIR/turn.pstats
        ...run 200 plain turns...
    print(capture.report("turn", per=200, unit="turn", top=25))

The server process is `hermes serve` run in-process by this module, with two signal
handlers: SIGUSR1 starts a `cProfile.Profile`, SIGUSR2 stops it and writes its stats
(`N.pstats`, N counting from 0, written under a temporary name and renamed, so a file
that exists is whole). The handlers run on the main thread, which is the server's event
loop thread, so the profile sees the loop and everything that runs on it (the SQLite
store included); it does not see other threads. It counts the process's CPU time
(`time.process_time`), not the wall clock, so waiting in `epoll` or being preempted on a
busy machine does not show. Profiling slows the server several times over: read the
shares and the per-unit order, not the absolute times.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import pstats
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def serve_profiled(out_dir: str, argv: list[str]) -> None:
    """Run `hermes <argv>` in this process, profiled between SIGUSR1 and SIGUSR2."""
    state: dict[str, Any] = {"profiler": None, "count": 0}

    def begin(_signum: int, _frame: object) -> None:
        profiler = cProfile.Profile(time.process_time)  # CPU time: waits and preemption do not count
        state["profiler"] = profiler
        profiler.enable()

    def end(_signum: int, _frame: object) -> None:
        profiler = state["profiler"]
        if profiler is None:
            return
        profiler.disable()
        state["profiler"] = None
        target = Path(out_dir) / f"{state['count']}.pstats"
        state["count"] += 1
        partial = target.with_suffix(".part")
        profiler.dump_stats(partial)
        partial.replace(target)

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)
    sys.argv = ["hermes", *argv]
    from hermes.cli.main import main

    main()


class ProfileCapture:
    """The bench's side: one profile per phase of a server started by `serve_profiled`."""

    def __init__(self, pid: int, out_dir: Path) -> None:
        self.pid = pid
        self.out_dir = out_dir
        self.files: dict[str, Path] = {}
        self._count = 0

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        os.kill(self.pid, signal.SIGUSR1)
        try:
            yield
        finally:
            os.kill(self.pid, signal.SIGUSR2)
            target = self.out_dir / f"{self._count}.pstats"
            self._count += 1
            deadline = time.monotonic() + 60
            while not target.exists() and time.monotonic() < deadline:
                time.sleep(0.05)  # the server writes it from its signal handler
            self.files[name] = target

    def report(self, name: str, *, per: int, unit: str, top: int) -> str:
        """The top `top` functions by own time and by cumulative time, per `unit`."""
        stats = pstats.Stats(str(self.files[name]))
        return format_stats(stats, title=name, per=per, unit=unit, top=top)


def format_stats(stats: pstats.Stats, *, title: str, per: int, unit: str, top: int) -> str:
    """Two tables (own time, cumulative time) in µs per `unit`, with calls per `unit`."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    out = io.StringIO()
    out.write(f"== profile: {title} ({per} {unit}s; profiled total own time {total * 1e6 / per:.0f} µs per {unit})\n")
    for label, index in (("own time", 2), ("cumulative", 3)):
        out.write(f"-- top {top} by {label}: µs/{unit}  calls/{unit}  function\n")
        ranked = sorted(raw.items(), key=lambda item: item[1][index], reverse=True)[:top]
        for (filename, line, func), entry in ranked:
            where = _short(filename)
            out.write(f"{entry[index] * 1e6 / per:10.1f} {entry[1] / per:9.2f}  {where}:{line}({func})\n")
    return out.getvalue()


def _short(filename: str) -> str:
    for marker in ("/site-packages/", "/hermes/", "/lib/python3"):
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + 1 :]
    return filename


if __name__ == "__main__":
    serve_profiled(sys.argv[1], sys.argv[2:])
