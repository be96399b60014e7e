"""The CLI's rendering of agent-layer progress: a transient rich bar on stderr."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hermes.agent.progress import ProgressCallback, ProgressUpdate


@contextlib.contextmanager
def rich_progress() -> Iterator[ProgressCallback]:
    """Yield a progress callback that draws a bar per task; nothing is drawn if never called."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(event: ProgressUpdate) -> None:
        if not tasks:
            progress.start()
        if event.task not in tasks:
            tasks[event.task] = progress.add_task(event.task, total=event.total)
        progress.update(tasks[event.task], completed=event.done, total=event.total)

    try:
        yield update
    finally:
        if tasks:
            progress.stop()
