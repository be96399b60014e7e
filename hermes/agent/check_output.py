"""What a command's result says, in a few lines: its exit code and why it failed.

    run = command_result(text)        # a `terminal` tool result ("exit code: 1\n--- stdout ---\n…")
    run.exit_code                     # 1 (None when the text is not a terminal result)
    run.failed                        # exit code other than 0, or a timeout
    essential_lines(output)           # ["stats.py:2: in mean", "E   assert 3.0 == 4"]

`essential_lines` keeps what a person reads first in a failure: pytest's `E` lines and
its short summary, a Python traceback's last frame and exception, or else the last few
lines. Used to steer a small model after a failed check and to say what still fails
when hermes writes a turn's answer itself (`hermes.agent.turn_facts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINES = 8
LINE_CHARS = 200

_EXIT = re.compile(r"^exit code: (-?\d+|None)\b")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure)|AssertionError)\b:?.*")
_PYTEST_E = re.compile(r"^E\s{2,}\S")
_PYTEST_WHERE = re.compile(r"^[\w./-]+\.py:\d+: ")
_PYTEST_SUMMARY = re.compile(r"^(FAILED|ERROR) \S+")
_NOISE = re.compile(r"^(--- (stdout|stderr) ---|\(no output\)|=+.*=+|_+ .* _+)$")


@dataclass(frozen=True, slots=True)
class CommandResult:
    """A terminal tool result, read back."""

    exit_code: int | None
    timed_out: bool
    output: str
    """stdout and stderr as the result shows them (section markers kept)."""

    @property
    def failed(self) -> bool:
        return self.timed_out or (self.exit_code is not None and self.exit_code != 0)


def command_result(text: str) -> CommandResult | None:
    """The exit code and output of a `terminal` result; None for any other text."""
    lines = text.splitlines()
    timed_out = bool(lines) and lines[0].startswith("Command timed out")
    head = lines[1:] if timed_out else lines
    match = _EXIT.match(head[0]) if head else None
    if match is None:
        return None
    code = None if match.group(1) == "None" else int(match.group(1))
    return CommandResult(code, timed_out, "\n".join(head[1:]))


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def essential_lines(output: str, limit: int = MAX_LINES) -> list[str]:
    """The lines of a failing command's output that say why it failed (at most `limit`)."""
    lines = [line for line in output.splitlines() if line.strip() and not _NOISE.match(line.strip())]
    if not lines:
        return []
    pytest = [
        line
        for line in lines
        if _PYTEST_E.match(line) or _PYTEST_WHERE.match(line) or _PYTEST_SUMMARY.match(line)
    ]
    if pytest:
        # The first failure's E lines and location, then the short summary lines.
        return [_clip(line) for line in _dedupe(pytest)[:limit]]
    frames = [i for i, line in enumerate(lines) if _FRAME.match(line)]
    if frames:
        last = frames[-1]
        kept = lines[last : last + 2]
        exception = next((line for line in reversed(lines) if _EXCEPTION.match(line.strip())), None)
        if exception is not None and exception not in kept:
            kept.append(exception)
        return [_clip(line.strip()) for line in kept[:limit]]
    return [_clip(line) for line in lines[-min(limit, 5) :]]


def _dedupe(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out
