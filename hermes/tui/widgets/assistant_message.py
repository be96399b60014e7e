"""An assistant answer rendered as Markdown, streamed without re-rendering per delta.

Deltas are buffered and appended to the `Markdown` widget at most `FLUSH_HZ` times a
second (`Markdown.append` re-parses only the last block), so thousands of small deltas
cost a few dozen renders, and the event loop is never held by one big re-render.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Markdown

FLUSH_HZ = 30


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
    }
    AssistantMessage MarkdownParagraph:last-child {
        margin-bottom: 0;
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
        self.streaming = streaming

    def compose(self) -> ComposeResult:
        yield Markdown(self._initial)

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    @property
    def text(self) -> str:
        """Everything received, including what is not on screen yet."""
        return self._received

    @property
    def rendered_text(self) -> str:
        """The Markdown source currently handed to the widget."""
        return self.markdown.source

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
            self.markdown.update(self._received)
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
                chunk = "".join(self._pending)
                self._pending.clear()
                await self.markdown.append(chunk)
        finally:
            self._flushing = False

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
