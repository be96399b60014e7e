"""The newest lines of a running command's output, reported at a bounded rate.

`OutputTail.feed(data)` takes raw bytes as the command writes them (stdout and stderr as
they arrive); `report` is called with the last `lines` lines (each cut to `width`
characters) at most once per `interval` seconds, and once more, soon after the last
write, so the final lines are always shown. It keeps only those lines (and one partial
line), whatever the command writes. `close()` cancels a pending report.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

TAIL_LINES = 5
LINE_WIDTH = 300
INTERVAL = 0.25
"""Seconds between reports: at most four a second, however fast the output comes."""


class OutputTail:
    def __init__(
        self,
        report: Callable[[str], None],
        *,
        lines: int = TAIL_LINES,
        width: int = LINE_WIDTH,
        interval: float = INTERVAL,
    ) -> None:
        self._report = report
        self._lines: deque[str] = deque(maxlen=lines)
        self._partial = b""
        self._width = width
        self._interval = interval
        self._last = 0.0
        self._pending: asyncio.TimerHandle | None = None
        self._shown = ""

    def feed(self, data: bytes) -> None:
        chunk = self._partial + data
        *complete, self._partial = chunk.split(b"\n")
        for raw in complete:
            self._lines.append(self._line(raw))
        if len(self._partial) > 4 * self._width:  # a very long line without a newline yet
            self._partial = self._partial[-4 * self._width :]
        self._schedule()

    def _line(self, raw: bytes) -> str:
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if "\r" in text:  # a progress bar redrawn in place: its latest state
            text = text.rsplit("\r", 1)[1]
        return text if len(text) <= self._width else text[: self._width - 1] + "…"

    def text(self) -> str:
        lines = list(self._lines)
        if self._partial:
            lines = [*lines, self._line(self._partial)][-(self._lines.maxlen or 1) :]
        return "\n".join(lines)

    def _schedule(self) -> None:
        if self._pending is not None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, self._last + self._interval - loop.time())
        self._pending = loop.call_later(delay, self._send)

    def _send(self) -> None:
        self._pending = None
        self._last = asyncio.get_running_loop().time()
        text = self.text()
        if text != self._shown:
            self._shown = text
            self._report(text)

    def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
