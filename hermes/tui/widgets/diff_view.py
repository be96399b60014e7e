"""A turn's change as a unified diff: one collapsible section per file, with syntax colour."""

from __future__ import annotations

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from hermes.checkpoints.shadow import FileChange

EXPANDED_LINES = 120
"""Files whose diff is longer than this start collapsed."""


def split_patch(patch: str) -> dict[str, str]:
    """The patch's per-file sections (each from its `diff --git` line), by path."""
    sections: dict[str, str] = {}
    current: list[str] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git ") and current:
            sections[_path_of(current[0])] = "".join(current)
            current = []
        current.append(line)
    if current:
        sections[_path_of(current[0])] = "".join(current)
    return sections


def _path_of(header: str) -> str:
    # "diff --git a/PATH b/PATH": both halves are the same path (no renames here).
    rest = header.removeprefix("diff --git ").rstrip("\n")
    half = (len(rest) - 1) // 2
    return rest[2:half] if rest[:2] == "a/" else rest


class DiffView(Vertical):
    """What one turn changed (`/diff`)."""

    DEFAULT_CSS = """
    DiffView { height: auto; margin: 0 0 1 0; }
    DiffView > .diff-title { color: $text-muted; }
    DiffView Collapsible { padding: 0; margin: 0; border: none; }
    """

    def __init__(self, number: int, changes: tuple[FileChange, ...], patch: str) -> None:
        super().__init__()
        self.number = number
        self.changes = changes
        self.patch = patch

    def compose(self) -> ComposeResult:
        added = sum(c.added for c in self.changes)
        removed = sum(c.removed for c in self.changes)
        yield Static(
            f"turn {self.number}: {len(self.changes)} file(s) changed, +{added} −{removed}",
            classes="diff-title",
            markup=False,
        )
        sections = split_patch(self.patch)
        for change in self.changes:
            text = sections.get(change.path, "")
            counts = "binary" if change.binary else f"+{change.added} −{change.removed}"
            collapsed = text.count("\n") > EXPANDED_LINES
            with Collapsible(title=f"{change.path}  {counts}", collapsed=collapsed):
                yield Static(Syntax(text.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))
