"""The in-process control channel: the SQLite backend's `ControlChannel`.

SQLite serves one process on one host, so every run it can reach is owned by this
process: a message addressed to this instance goes straight to its handler. Another
instance on the same files is another process this channel cannot reach: the answer is
at once "not active here" (code `run_not_active`), as a single process always said.
"""

from __future__ import annotations

from hermes.store.api import ControlHandler
from hermes.store.records import ControlMessage, ControlReply

__all__ = ["MemoryControlChannel"]


class MemoryControlChannel:
    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        self._handler: ControlHandler | None = None

    async def serve(self, handler: ControlHandler) -> None:
        self._handler = handler

    async def request(self, instance_id: str, message: ControlMessage, *, timeout: float) -> ControlReply:
        if instance_id != self.instance_id or self._handler is None:
            return ControlReply(ok=False, code="run_not_active", message="Run is not active in this server process")
        return await self._handler(message)

    async def aclose(self) -> None:
        self._handler = None
