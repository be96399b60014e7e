"""An assistant answer rendered as Markdown, streamed without re-rendering per delta.

Two things keep streaming cheap however long the answer gets:

- Deltas are buffered and appended at most `FLUSH_HZ` times a second
  (`Markdown.append` re-parses only from the last block).
- The answer is a column of `Markdown` widgets ("chunks"). Once the live chunk holds
  `CHUNK_CHARS` characters, the next paragraph break outside a code fence starts a new
  chunk, so a flush touches one small widget instead of re-styling and re-laying out
  every block of a long answer.

A code block never loses text: a line wider than the window wraps (folding a word longer
than the width) instead of running off the edge.
"""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Markdown

FLUSH_HZ = 30
CHUNK_CHARS = 1500


def safe_split(source: str, new: str, at_least: int = 0) -> int | None:
    """Where in `new` a chunk may end: just after a blank line outside a code fence.

    `source` is the live chunk's text so far (it decides whether we start inside a fence).
    Returns the first such index into `new` that is >= `at_least`, or None.
    """
    inside = _fence_open(source)
    position = 0
    for line in new.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            inside = not inside
        position += len(line)
        if position >= len(new):
            break
        if not inside and stripped == "" and line.endswith("\n") and position >= at_least:
            return position
    return None


def _fence_open(text: str) -> bool:
    count = sum(1 for line in text.splitlines() if line.strip().startswith(("```", "~~~")))
    return count % 2 == 1


class AssistantMessage(Vertical):
    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
    }
    AssistantMessage > Markdown {
        margin: 0;
        padding: 0;
        background: transparent;
    }
    AssistantMessage MarkdownFence {
        margin: 1 0 1 0;
        padding: 0 1;
        overflow-x: hidden;
    }
    AssistantMessage MarkdownFence > Label {
        width: 1fr;
        text-wrap: wrap;
        text-overflow: fold;
    }
    AssistantMessage.-interrupted {
        border-left: wide $warning;
    }
    """

    def __init__(self, text: str = "", *, streaming: bool = False) -> None:
        super().__init__()
        self._initial = text
        self._pending: list[str] = []
        self._received = text
        self._flush_timer: Timer | None = None
        self._flushing = False
        self._live: Markdown | None = None
        self.streaming = streaming

    def compose(self) -> ComposeResult:
        self._live = Markdown(self._initial)
        yield self._live

    @property
    def chunks(self) -> list[Markdown]:
        return list(self.query_children(Markdown))

    @property
    def text(self) -> str:
        """Everything received, including what is not on screen yet."""
        return self._received

    @property
    def find_text(self) -> str:
        return self._received

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        """Markdown keeps its own rendering: the find bar marks the whole message instead."""

    @property
    def rendered_text(self) -> str:
        """The Markdown source handed to the widgets so far."""
        return "".join(chunk.source for chunk in self.chunks)

    @property
    def flushed(self) -> bool:
        """No streamed text is waiting: no flush scheduled or running (read-only, for tests)."""
        return not self._pending and self._flush_timer is None and not self._flushing

    def feed(self, text: str) -> None:
        """Append streamed text; it reaches the screen within one flush interval."""
        if not text:
            return
        self._received += text
        self._pending.append(text)
        if self.is_mounted and self._flush_timer is None and not self._flushing:
            self._flush_timer = self.set_timer(1 / FLUSH_HZ, self._flush)

    def on_mount(self) -> None:
        if self._pending:
            self._flush_timer = self.set_timer(1 / FLUSH_HZ, self._flush)

    def drop_suffix(self, suffix: str) -> bool:
        """Remove `suffix` from the end of the text (a warning shown as its own card)."""
        stripped = self._received.rstrip()
        if not suffix or not stripped.endswith(suffix.strip()):
            return False
        self._received = stripped[: len(stripped) - len(suffix.strip())].rstrip() + "\n"
        self._pending.clear()
        if self.is_mounted:
            chunks = self.chunks
            for extra in chunks[1:]:
                extra.remove()
            self._live = chunks[0]
            self._live.update(self._received)
        else:
            self._initial = self._received
        return True

    async def _flush(self) -> None:
        self._flush_timer = None
        if not self._pending:
            return
        self._flushing = True
        try:
            while self._pending:
                new = "".join(self._pending)
                self._pending.clear()
                await self._append(new)
        finally:
            self._flushing = False

    async def _append(self, new: str) -> None:
        while new:
            live = self._live
            assert live is not None
            room = CHUNK_CHARS - len(live.source)
            cut = safe_split(live.source, new, max(0, room)) if len(new) >= room else None
            if cut is None:
                await live.append(new)
                return
            await live.append(new[:cut])
            new = new[cut:]
            self._live = Markdown()
            await self.mount(self._live)

    def finish(self) -> None:
        """The segment is complete: flush now instead of at the next tick."""
        self.streaming = False
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if self._pending and self.is_mounted and not self._flushing:
            self.call_later(self._flush)

    def mark_interrupted(self) -> None:
        self.add_class("-interrupted")
