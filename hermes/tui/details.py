"""Ctrl+G: open (or close) every tool result and every reasoning block of the transcript.

The prompt box keeps the focus (Tab does not walk the transcript's foldable titles), so
this key is how the folded details are read from the keyboard. One press opens them all
when any is closed, and closes them all when all are open.
"""

from __future__ import annotations

from textual.widgets import Collapsible

from hermes.tui.widgets.reasoning_block import ReasoningBlock
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.transcript import Transcript


def foldable_details(transcript: Transcript) -> list[Collapsible]:
    """The transcript's tool results (of cards that have one) and reasoning blocks, in order."""
    found: list[Collapsible] = []
    for widget in transcript.query("ToolCard, ReasoningBlock"):
        if isinstance(widget, ReasoningBlock):
            found.append(widget)
        elif isinstance(widget, ToolCard) and widget.has_class("-has-result"):
            found.append(widget.details)
    return found


def toggle_details(transcript: Transcript) -> bool | None:
    """Open them all (True) or close them all (False); None when there is nothing to fold."""
    details = foldable_details(transcript)
    if not details:
        return None
    opening = any(d.collapsed for d in details)
    for detail in details:
        detail.collapsed = not opening
    return opening
