"""Feeds the `@` picker (`MentionMenu`): the working folder's file list, listed in a thread
on the first `@` and again when it is older than `FRESH_FOR`, ranked for what is typed."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Protocol

from hermes.agent.attach.file_index import FileIndex, fuzzy_rank, list_files
from hermes.tui.prompt_attachments import working_folder
from hermes.tui.workers import RunsWorkers

if TYPE_CHECKING:


    from hermes.tui.widgets.mention_menu import MentionMenu


class PickerScreen(RunsWorkers, Protocol):
    """What the picker needs of the chat screen (`ChatScreen` is one): its folder and workers."""

    cwd: str


FRESH_FOR = 30.0
"""Seconds a listing is reused before the next `@` lists the folder again."""


class MentionPicker:
    def __init__(self, chat: PickerScreen, menu: MentionMenu) -> None:
        self.chat = chat
        self.menu = menu
        self.index: FileIndex | None = None
        self._listed_at = 0.0
        self._query: str | None = None
        self._loading = False

    def typed(self, query: str | None) -> None:
        """What follows the `@` at the cursor changed (None: no mention is typed any more)."""
        self._query = query
        if query is None:
            self.menu.hide()
            return
        if self.index is not None and time.monotonic() - self._listed_at < FRESH_FOR:
            self._show(query, self.index)
        elif not self._loading:
            self._loading = True
            self.chat.run_worker(self._load(), group="mention-index", exit_on_error=False)

    async def _load(self) -> None:
        try:
            self.index = await asyncio.to_thread(list_files, working_folder(self.chat))
            self._listed_at = time.monotonic()
        finally:
            self._loading = False
        if self._query is not None:
            self._show(self._query, self.index)

    def _show(self, query: str, index: FileIndex) -> None:
        self.menu.show_paths(query, fuzzy_rank(query, index.paths), truncated=index.truncated)
