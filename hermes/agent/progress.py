"""Progress of slow one-time work in the agent layer (e.g. assembling the local model).

The agent layer only reports; front ends decide how to show it (the CLI draws a rich
bar on stderr, see hermes/progress_bar.py; the server shows nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProgressUpdate:
    task: str
    """What is being done, e.g. "Preparing local model"."""
    done: int
    total: int
    """Same unit as `done` (bytes for file work); the work is finished when done == total.
    0 of 0: a step with no measure of progress has begun (e.g. loading the model)."""
    step: str = ""
    """Which part of the task, e.g. "assembling", "verifying", "loading"; a new step restarts the count."""


ProgressCallback = Callable[[ProgressUpdate], None]
