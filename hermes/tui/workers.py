"""`RunsWorkers`: a screen that runs Textual workers, as the TUI's controllers see it.

The turn controller, the `@` picker and `!` shell mode each start work on the chat
screen; they name this one Protocol (Textual's `DOMNode.run_worker`, for coroutines
that return nothing) instead of importing the screen.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from textual.worker import Worker


class RunsWorkers(Protocol):
    def run_worker(
        self,
        work: Coroutine[Any, Any, None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[None]: ...
