"""Fixtures for the real-client tests (see _clients_harness.py for the harness itself).

`hermes_serve` is one real `hermes serve` process per test module, with an empty upstream
queue and request log for each test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _clients_harness import HermesServe, running_serve
from _node_modules import ensure_node_modules

from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture(scope="module")
def _serve_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermesServe]:
    base = tmp_path_factory.mktemp("hermes-serve")
    with ScriptedUpstream.in_thread() as upstream, running_serve(base, upstream) as serve:
        yield serve


@pytest.fixture(scope="session")
def node_modules_problem() -> str | None:
    """Install tests/clients/node's pinned modules once (`npm ci`) where node exists; why not, or None."""
    if shutil.which("node") is None:
        return None  # the Node tests skip (or fail under CI) for the missing node itself
    return ensure_node_modules(Path(__file__).resolve().parent / "node")


@pytest.fixture
def hermes_serve(_serve_module: HermesServe) -> Iterator[HermesServe]:
    """The module's server, with an empty upstream queue and request log for this test."""
    serve = _serve_module
    assert serve.proc.poll() is None, "hermes serve exited"
    serve.upstream.replies.clear()
    serve.upstream.requests.clear()
    yield serve
    serve.upstream.replies.clear()


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Every test here talks to a subprocess; give each a generous per-test timeout (unless it sets its own)."""
    for item in items:
        in_clients = "tests/clients/" in str(item.fspath).replace(os.sep, "/")
        if in_clients and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(90))
