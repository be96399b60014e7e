"""Pick a past session: search titles and message content, open, rename, delete.

It opens on this folder's sessions (the ones whose tools run here), or every folder's
when this one has none; Ctrl+A switches between the two, each row of every folder's
showing its folder. Each row shows the session's full id,
which `--resume` and `sessions show` also take by any unique start.

Results come from the app's session store (SQLite files, PostgreSQL, or a remote server); typing
re-queries after a short debounce so a fast typist never waits on search, and only the
newest query's results are shown (an older one that answers late is dropped).
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from hermes.backend import ChatSessions
from hermes.checkpoints.shadow import prune_session
from hermes.errors import HermesError
from hermes.session_folder import short_folder
from hermes.store.records import SessionRecord
from hermes.tui.screens.text_prompt import TextPrompt

LIST_LIMIT = 200


def ago(timestamp: float, now: float | None = None) -> str:
    seconds = max(0.0, (now or time.time()) - timestamp)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit} ago"
    return "just now"


class SessionPicker(ModalScreen[str | None]):
    """Dismisses with the id of the session to open, or None."""

    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > Vertical {
        width: 90%;
        max-width: 120;
        height: 85%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    SessionPicker .picker-title { text-style: bold; padding: 0 0 1 0; }
    SessionPicker Input { margin-bottom: 1; }
    SessionPicker OptionList { height: 1fr; border: none; }
    SessionPicker .picker-hint { color: $text-muted; height: 1; }
    SessionPicker .picker-status { color: $text-warning; height: auto; }
    """

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("ctrl+r,f2", "rename", "Rename", priority=True),
        Binding("ctrl+d", "delete", "Delete", priority=True),
        Binding("ctrl+a", "toggle_folders", "All folders", priority=True),
        Binding("down", "cursor(1)", show=False),
        Binding("up", "cursor(-1)", show=False),
    ]

    def __init__(
        self,
        store: ChatSessions,
        *,
        current: str | None = None,
        home: Path | None = None,
        folder: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.current = current
        self.folder = folder
        """This folder (resolved): the picker shows its sessions until Ctrl+A; None: every folder."""
        self.all_folders = folder is None
        self._fell_back = False
        """True once the picker showed every folder because this one has no sessions."""
        self.home = home
        """Where the sessions' file snapshots live (pruned with a deleted session); None: none."""
        self.sessions: list[SessionRecord] = []
        self._snippets: dict[str, str] = {}
        self._confirm_delete: str | None = None
        self._debounce: Timer | None = None
        self._query_number = 0
        """Counts result queries; a query's results are shown only while it is the newest."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title_text(), classes="picker-title", id="picker-title")
            yield Input(placeholder="search titles and messages…", id="query")
            yield OptionList(id="results")
            yield Static("", classes="picker-status", id="status")
            yield Static(
                "Enter open · Ctrl+A this folder/all · Ctrl+R rename · Ctrl+D delete · Esc close",
                classes="picker-hint",
            )

    def _title_text(self) -> str:
        if self.all_folders or self.folder is None:
            return "Sessions · all folders" + (" (none in this folder)" if self._fell_back else "")
        return f"Sessions · this folder ({short_folder(self.folder)})"

    @property
    def results(self) -> OptionList:
        return self.query_one("#results", OptionList)

    @property
    def query_input(self) -> Input:
        return self.query_one("#query", Input)

    async def on_mount(self) -> None:
        self.query_input.focus()
        await self.refresh_results()

    # -- data ---------------------------------------------------------------------------

    async def refresh_results(self) -> None:
        """Query the store for the search box's text and show the results.

        A store that cannot be read shows its error in the status line.
        """
        self._query_number += 1
        number = self._query_number
        query = self.query_input.value.strip()
        try:
            sessions, snippets = await self._find(query)
        except HermesError as exc:
            if number == self._query_number:
                self.query_one("#status", Static).update(f"✗ {exc}")
            return
        if number != self._query_number or not self.is_attached:
            return  # a newer query was started meanwhile (or the picker closed)
        self.sessions, self._snippets = sessions, snippets
        self._fill()

    async def _find(self, query: str) -> tuple[list[SessionRecord], dict[str, str]]:
        """Sessions matching `query` by title, id prefix or message content (all when empty),
        and a content snippet per session that matched by content."""
        scope = None if self.all_folders else self.folder
        listed = await self.store.list_sessions(limit=LIST_LIMIT, cwd=scope)
        if scope is not None and not listed and not self._fell_back:
            # Nothing of this folder's: every folder's, once (Ctrl+A comes back here).
            self._fell_back = self.all_folders = True
            self.query_one("#picker-title", Label).update(self._title_text())
            scope = None
            listed = await self.store.list_sessions(limit=LIST_LIMIT)
        if not query:
            return listed, {}
        needle = query.lower()
        found: dict[str, SessionRecord] = {
            s.id: s for s in listed if needle in (s.title or "").lower() or s.id.startswith(query)
        }
        try:
            hits = await self.store.search(query, limit=50)
        except HermesError:
            hits = []  # a query full-text search cannot parse still matches titles
        snippets: dict[str, str] = {}
        for hit in hits:
            if scope is not None and hit.session.cwd != scope:
                continue
            if hit.session.id not in found:
                found[hit.session.id] = hit.session
            snippets.setdefault(hit.session.id, hit.snippet)
        return list(found.values()), snippets

    def _fill(self) -> None:
        results = self.results
        keep = results.highlighted
        results.clear_options()
        now = time.time()
        for record in self.sessions:
            label = Text()
            label.append("● " if record.id == self.current else "  ", style="bold green")
            label.append(record.title or "untitled", style="bold")
            label.append(
                f"  {record.source} · {record.message_count} message{'' if record.message_count == 1 else 's'}"
                f" · {ago(record.updated_at, now)} · ",
                style="dim",
            )
            label.append(record.id, style="cyan")
            if self.all_folders:
                label.append(f" · {short_folder(record.cwd)}", style="dim")
            snippet = self._snippets.get(record.id)
            if snippet:
                flat = " ".join(snippet.split())
                label.append("\n    ")
                for i, piece in enumerate(flat.replace("<<<", ">>>").split(">>>")):
                    label.append(piece, style="reverse" if i % 2 else "italic dim")
            results.add_option(Option(label, id=record.id))
        if self.sessions:
            results.highlighted = min(keep or 0, len(self.sessions) - 1)
        if self.sessions:
            empty = ""
        elif self.all_folders or self.query_input.value.strip():
            empty = "no sessions match"
        else:
            empty = "no sessions in this folder: Ctrl+A shows every folder's"
        self.query_one("#status", Static).update(empty)

    def _selected(self) -> SessionRecord | None:
        index = self.results.highlighted
        if index is None or not (0 <= index < len(self.sessions)):
            return None
        return self.sessions[index]

    # -- events -------------------------------------------------------------------------

    @on(Input.Changed, "#query")
    def _query_changed(self) -> None:
        self._confirm_delete = None
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(0.15, self.refresh_results)

    @on(Input.Submitted, "#query")
    async def _query_submitted(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None
            await self.refresh_results()
        self.action_open()

    @on(OptionList.OptionSelected, "#results")
    def _option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cursor(self, step: int) -> None:
        if self.sessions:
            current = self.results.highlighted or 0
            self.results.highlighted = max(0, min(len(self.sessions) - 1, current + step))

    def action_open(self) -> None:
        record = self._selected()
        if record is not None:
            self.dismiss(record.id)

    async def action_toggle_folders(self) -> None:
        """This folder's sessions, or every folder's (nothing to toggle without a folder)."""
        if self.folder is None:
            return
        self.all_folders = not self.all_folders
        self.query_one("#picker-title", Label).update(self._title_text())
        await self.refresh_results()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_rename(self) -> None:
        record = self._selected()
        if record is None:
            return

        async def renamed(title: str | None) -> None:
            if not title:
                return
            try:
                await self.store.rename_session(record.id, title)
            except HermesError as exc:
                self.query_one("#status", Static).update(f"✗ {exc}")
                return
            await self.refresh_results()

        self.app.push_screen(TextPrompt("New title", record.title or ""), renamed)

    async def action_delete(self) -> None:
        record = self._selected()
        if record is None:
            return
        status = self.query_one("#status", Static)
        if self._confirm_delete != record.id:
            self._confirm_delete = record.id
            status.update(f"Delete “{record.title or record.id[:8]}”? Press Ctrl+D again to confirm.")
            return
        self._confirm_delete = None
        try:
            await self.store.delete_session(record.id)
            if self.home is not None:
                await prune_session(self.home, record.id)
        except HermesError as exc:
            status.update(f"✗ {exc}")
            return
        status.update(f"Deleted “{record.title or record.id[:8]}”.")
        await self.refresh_results()
