"""Helpers for the OpenAI-endpoint server tests (fixtures live in conftest.py).

Import with `from _api_harness import ...` (tests/server is on sys.path under pytest's
default import mode, like `_runs_fixtures`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.errors import ToolError
from hermes.server.http.state import AGENT, STORAGE
from hermes.testing.state_db import SyncCalls, SyncStateDb
from hermes.testing.upstream import ScriptedUpstream

SERVER_KEY = "sk-secret"


# ---- tools the scripted model can call ----------------------------------------------


async def _read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = Path(ctx.cwd, str(args.get("path", "")))
    try:
        return path.read_text()
    except OSError as exc:
        raise ToolError(f"cannot read {args.get('path')}: {exc.strerror}") from None


async def _sleep(args: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.sleep(float(args.get("seconds", 0.1)))
    return "slept"


async def _internal(args: dict[str, Any], ctx: ToolContext) -> str:
    return "internal state"


def harness_tools() -> ToolRegistry:
    """read_file (read-only), sleep (a quiet tool gap), _thinking (internal)."""
    obj = {"type": "object", "properties": {}, "additionalProperties": True}
    return ToolRegistry(
        [
            Tool("read_file", "Read a file", obj, _read_file, read_only=True, preview_key="path"),
            Tool("sleep", "Sleep a while", obj, _sleep, preview_key="seconds"),
            Tool("_thinking", "internal", obj, _internal),
        ]
    )




# ---- SSE parsing ------------------------------------------------------------------------


@dataclass
class SSEFrame:
    event: str | None
    data: str
    id: str | None = None
    comment: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(text: str) -> list[SSEFrame]:
    """Frames in order; comment-only blocks become frames with `comment` set."""
    frames: list[SSEFrame] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        event = id_ = comment = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                comment = line[1:].strip()
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("id:"):
                id_ = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        frames.append(SSEFrame(event, "\n".join(data), id_, comment if not data else None))
    return frames


# ---- the harness --------------------------------------------------------------------------


@dataclass
class Server:
    client: TestClient
    app: web.Application
    settings: Settings
    upstream: ScriptedUpstream
    auth: dict[str, str] = field(default_factory=dict)
    """Authorization header to send (empty when no key is configured)."""

    @property
    def sessions(self) -> Any:
        return SyncStateDb.wrap(self.app[STORAGE].sessions.state)  # type: ignore[attr-defined]

    @property
    def responses(self) -> Any:
        return SyncCalls(self.app[STORAGE].responses)

    @property
    def agent(self) -> Any:
        return self.app[AGENT]

    @property
    def base_url(self) -> str:
        return str(self.client.make_url("/"))


MakeServer = Callable[..., Awaitable[Server]]
