"""A one-line card in the transcript: warnings, errors, interrupts, information."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.widgets import Static

NoticeKind = Literal["info", "warning", "error", "interrupted"]


class Notice(Static):
    DEFAULT_CSS = """
    Notice {
        padding: 0 1;
        margin: 0 0 0 2;
        color: $text-muted;
    }
    Notice.-warning {
        color: $text-warning;
        background: $warning-muted;
        border-left: wide $warning;
    }
    Notice.-error {
        color: $text-error;
        background: $error-muted;
        border-left: wide $error;
    }
    Notice.-interrupted {
        color: $text-warning;
    }
    """

    def __init__(self, text: str, kind: NoticeKind = "info") -> None:
        super().__init__(Text(text), markup=False, classes=f"-{kind}")
        self.text = text
        self.kind = kind

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(Text(text))
