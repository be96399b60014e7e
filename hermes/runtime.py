"""What every front end starts with: storage, crash repair, the agent and MCP (`open_runtime`).

    async with open_runtime(settings, progress=on_progress) as runtime:
        handle = runtime.agent.start(TurnRequest(input="hi"))
        ...

Used by `hermes serve` (inside the app's cleanup context), `hermes chat -q` and the TUI.

Invariants:
- One order: the storage is opened, repaired (`repair`: by default the turns a crashed
  process left open), then `prepare` runs on it (e.g. resolving `--resume`, so a wrong id
  fails before a model is loaded), then the agent is built on its session store, then the
  MCP manager of the configured servers is made and, unless deferred, started into the
  agent's tools. Closing runs in reverse: MCP, the agent (its provider's connections), the
  storage — also when opening failed halfway.
- MCP servers join only an agent the runtime builds or owns: a given agent's tools are
  its caller's (`runtime.mcp` is None then).
- What is passed in (`storage`, `agent`) is used as it is and left open, unless `owned`
  says the runtime closes it too.
- A deferred MCP start is the front end's (`runtime.start_mcp()`, e.g. the TUI starts it
  once the screen is up); the manager is closed by the runtime either way.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.engine import Agent
from hermes.agent.factory import ProviderChoice, build_agent
from hermes.agent.progress import ProgressCallback
from hermes.config import Settings
from hermes.store.api import Storage

if TYPE_CHECKING:
    from hermes.agent.mcp import McpManager
    from hermes.agent.mcp.status import McpServerStatus

StorageStep = Callable[[Storage], Awaitable[None]]
"""A start-up step on the opened storage (repair, prepare)."""


async def repair_open_turns(storage: Storage) -> None:
    """The default repair: turns a crashed owner left open (before --continue picks one)."""
    await storage.sessions.repair_abandoned_turns()


@dataclass(frozen=True, slots=True)
class Runtime:
    """The opened storage, the agent and the MCP manager (None: no servers configured)."""

    settings: Settings
    storage: Storage
    agent: Agent
    mcp: McpManager | None

    async def start_mcp(self, report: Callable[[McpServerStatus], None] | None = None) -> list[McpServerStatus]:
        """Connect the MCP servers into the agent's tools; `report` gets each failed one."""
        if self.mcp is None:
            return []
        statuses = await self.mcp.start(self.agent.tools)
        if report is not None:
            for status in statuses:
                if status.failed:
                    report(status)
        return statuses


@contextlib.asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    storage: Storage | None = None,
    agent: Agent | None = None,
    owned: bool = False,
    repair: StorageStep = repair_open_turns,
    prepare: StorageStep | None = None,
    choice: ProviderChoice | None = None,
    progress: ProgressCallback | None = None,
    defer_mcp: bool = False,
    report_mcp: Callable[[McpServerStatus], None] | None = None,
    cwd: Path | None = None,
) -> AsyncIterator[Runtime]:
    """Open everything in order, yield it, close it in reverse (see the module docstring)."""
    async with contextlib.AsyncExitStack() as stack:
        if storage is None:
            from hermes.store.configured import open_storage

            storage = await open_storage(settings)
            stack.push_async_callback(storage.aclose)
        elif owned:
            stack.push_async_callback(storage.aclose)
        await repair(storage)
        if prepare is not None:
            await prepare(storage)
        ours = agent is None or owned
        if agent is None:
            agent = build_agent(settings, storage.sessions, choice=choice, progress=progress)
        if ours:
            stack.push_async_callback(agent.aclose)
        runtime = Runtime(settings, storage, agent, _mcp_manager(settings, cwd) if ours else None)
        if runtime.mcp is not None:
            stack.push_async_callback(runtime.mcp.aclose)
            if not defer_mcp:
                await runtime.start_mcp(report_mcp)
        yield runtime


def _mcp_manager(settings: Settings, cwd: Path | None) -> McpManager | None:
    from hermes.agent.mcp import McpManager

    return McpManager.from_settings(settings, cwd=cwd or Path.cwd())
