"""The TUI's last line filter: no control character of a message reaches the terminal.

Textual strips only BEL, BS, VT, FF and CR from what widgets show; ESC and the C1
controls of a model answer, a tool's output or a file pass through its compositor to the
terminal (an OSC 52 clipboard write, a CSI clear screen). `ControlsFilter`, applied
by `HermesApp.get_line_filters` after Textual's own filters to every rendered line of
every widget, removes them from the text of each segment. Rich and Textual measure
control characters as zero cells wide, so removing them keeps every line's width.
Textual's own control segments (cursor moves, styles) are not text and are kept.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from hermes.terminal_text import without_controls


class ControlsFilter(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        cleaned: list[Segment] = []
        for segment in segments:
            if segment.control:
                cleaned.append(segment)
                continue
            text = without_controls(segment.text)
            if text == segment.text:
                cleaned.append(segment)
            elif text:
                cleaned.append(Segment(text, segment.style))
        return cleaned
