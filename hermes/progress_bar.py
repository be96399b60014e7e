"""Agent-layer progress drawn on a terminal: a transient rich bar on stderr (the CLI, the TUI before it starts).

Each step of a task (assembling, verifying, loading) restarts the bar under its own
label, so the bar never sits full while the next step runs; a step without a measure
(loading: 0 of 0) pulses, and the elapsed time keeps moving either way (rich redraws
from its own thread while the caller blocks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hermes.agent.progress import ProgressCallback, ProgressUpdate
from hermes.terminal_text import for_terminal


def describe(event: ProgressUpdate) -> str:
    """The label of an update: "Preparing local model: verifying"."""
    return for_terminal(f"{event.task}: {event.step}" if event.step else event.task)


@contextlib.contextmanager
def rich_progress() -> Iterator[ProgressCallback]:
    """Yield a progress callback that draws a bar per task; nothing is drawn if never called."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}
    steps: dict[str, str] = {}

    def update(event: ProgressUpdate) -> None:
        if not tasks:
            progress.start()
        total = event.total or None  # 0 of 0: no measure, the bar pulses
        if event.task in tasks and steps.get(event.task) != event.step:
            progress.remove_task(tasks.pop(event.task))  # a new step: a new bar under its own label
        if event.task not in tasks:
            tasks[event.task] = progress.add_task(describe(event), total=total)
        steps[event.task] = event.step
        if total is not None:
            progress.update(tasks[event.task], completed=event.done, total=total)

    try:
        yield update
    finally:
        if tasks:
            progress.stop()
