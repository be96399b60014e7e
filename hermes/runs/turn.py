"""What the run service needs from an engine: `start(request)` returning a `TurnHandle`.

Every endpoint — chat completions and responses (JSON and SSE), background runs and
session chat — starts its turn on the engine and consumes the handle
(hermes/agent/turn_handle.py):

    turn = engine.start(request)            # the turn runs in a task of its own
    stream.on_disconnect(turn.stop)         # any callback may stop it
    async for event in turn.events():       # ... and the consumer still gets the
        ...                                 # final TurnCompleted (status interrupted)
    await turn.aclose()                     # always: waits up to CLOSE_GRACE for the engine

`hermes.agent.engine.Agent` and `hermes.runs.utility.UtilityEngine` satisfy it.
"""

from __future__ import annotations

from typing import Protocol

from hermes.agent.turn_handle import TurnHandle
from hermes.agent.types import TurnRequest


class TurnEngine(Protocol):
    def start(self, request: TurnRequest, *, inline: bool = False) -> TurnHandle:
        """The turn behind a handle: in a task of its own, or with `inline` run by the
        handle's `wait()` in the task that called this."""
        ...
