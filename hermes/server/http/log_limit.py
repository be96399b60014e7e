"""A logging filter that rate-limits repeated lines.

Under a flood (thousands of "Too many open files" accept errors a second, a scanner's
malformed requests) the same line must not fill the log. `RateLimitFilter` lets at most
`burst` records with the same key (logger, level, first line of the message template,
or of the message when it has no arguments; digits folded) through per `window` seconds;
the first record let through in a later window says how many were dropped.

    handler.addFilter(RateLimitFilter(burst=5, window=60.0))
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

_DIGITS = re.compile(r"\d+")
MAX_KEYS = 1024
"""Distinct keys remembered; beyond it the table is cleared (bounded memory)."""


@dataclass(slots=True)
class _Bucket:
    window_start: float
    passed: int = 0
    dropped: int = 0


def record_key(record: logging.LogRecord) -> tuple[str, int, str]:
    if record.args:  # the template: "auth failed: %s %s" is one line whatever the request
        text = str(record.msg)
    else:
        text = str(record.getMessage())
    first = text.split("\n", 1)[0][:120]
    return record.name, record.levelno, _DIGITS.sub("#", first)


class RateLimitFilter(logging.Filter):
    def __init__(self, *, burst: int = 5, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self._clock = clock
        self._buckets: dict[tuple[str, int, str], _Bucket] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        key = record_key(record)
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_KEYS:
                self._buckets.clear()
            bucket = self._buckets[key] = _Bucket(now)
        elif now - bucket.window_start >= self.window:
            if bucket.dropped:
                record.msg = f"{record.msg} ({bucket.dropped} similar lines suppressed)"
            bucket.window_start, bucket.passed, bucket.dropped = now, 0, 0
        if bucket.passed >= self.burst:
            bucket.dropped += 1
            return False
        bucket.passed += 1
        return True


class RedactingFormatter(logging.Formatter):
    """Credentials in URLs are masked in every formatted line (tracebacks included)."""

    def format(self, record: logging.LogRecord) -> str:
        from hermes.redact import redact_text

        return redact_text(super().format(record))


def install(level: int = logging.WARNING) -> logging.Handler:
    """A stderr handler on the root logger with the rate limit (for `hermes serve`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("hermes serve: %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimitFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    return handler
