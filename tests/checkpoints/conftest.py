"""Checkpoint fixtures: a real git working tree, an agent with the real core tools and
file checkpoints, over the scripted upstream and a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from checkpoint_helpers import make_work_repo

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.registry import default_registry
from hermes.checkpoints.turn import CheckpointConfig
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream

OPTIONS = EngineOptions(stream_retries=0, stale_timeout=5.0, retry_base_delay=0.01, retry_max_delay=0.1)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_work_repo(tmp_path / "work")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hermes-home"


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Any:
    db = open_sync_state(tmp_path / "state.db")
    yield db.sessions
    db.close()


@pytest.fixture
async def make_agent(upstream: ScriptedUpstream, store: Any, home: Path) -> AsyncIterator[Callable[..., Agent]]:
    agents: list[Agent] = []

    def make(*, launcher: ToolLauncher | None = None, max_file_kb: int = 1024,
             checkpoints: CheckpointConfig | None = None) -> Agent:  # fmt: skip
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=store,
            model="scripted-model",
            tools=default_registry(launcher),
            options=OPTIONS,
            checkpoints=checkpoints or CheckpointConfig(home, max_file_kb),
        )
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()
