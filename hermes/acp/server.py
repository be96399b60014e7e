"""`hermes acp`: the ACP agent on this process's stdin and stdout.

Invariants:
- stdout carries the protocol and nothing else: its file descriptor is kept for the
  protocol and fd 1 (and `sys.stdout`) are pointed at stderr before anything else runs, so
  a stray print or a child process that inherits stdout cannot corrupt the stream.
- Logs go to stderr (the editor shows them in its agent log), at WARNING unless
  HERMES_LOG_LEVEL says otherwise.
- The backend (hermes/backend.py: storage, repair, agent, MCP) opens before the first message is read and
  closes when the client closes stdin; running turns are stopped first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from hermes.config import Settings

STDIO_LIMIT = 50 * 1024 * 1024
"""Largest JSON-RPC message read from the client (a prompt with embedded files)."""


def _protocol_stdout() -> int:
    """A private duplicate of stdout for the protocol; fd 1 and sys.stdout go to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def _streams(protocol_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIO_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), os.fdopen(protocol_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def serve_stdio(settings: Settings, protocol_fd: int) -> None:
    from acp import run_agent

    from hermes.acp.agent import HermesAcpAgent
    from hermes.backend import open_backend

    async with open_backend(settings) as backend:
        agent = HermesAcpAgent(backend, await backend.open_agent())
        reader, writer = await _streams(protocol_fd)
        try:
            await run_agent(agent, writer, reader)
        finally:
            await agent.aclose()


def run(settings: Settings) -> None:
    """Serve ACP on stdio until the client closes it."""
    protocol_fd = _protocol_stdout()
    level = os.environ.get("HERMES_LOG_LEVEL", "WARNING").upper()
    if not isinstance(logging.getLevelName(level), int):
        level = "WARNING"
    logging.basicConfig(stream=sys.stderr, level=level, format="hermes acp: %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve_stdio(settings, protocol_fd))
