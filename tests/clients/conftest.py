"""Fixtures for the real-client tests (see _clients_harness.py for the harness itself).

`hermes_serve` is one real `hermes serve` process per test module, with an empty upstream
queue and request log for each test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from _clients_harness import HermesServe, start_serve

from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture(scope="module")
def _serve_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermesServe]:
    base = tmp_path_factory.mktemp("hermes-serve")
    with ScriptedUpstream.in_thread() as upstream:
        proc, root, drain = start_serve(base / "home", base / "work", upstream)
        try:
            yield HermesServe(proc=proc, root=root, upstream=upstream, workdir=base / "work")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            drain.join(timeout=10)  # EOF once the process is gone
            if proc.stderr is not None:
                proc.stderr.close()


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
    """Every test here talks to a subprocess; give each a generous per-test timeout."""
    for item in items:
        if "tests/clients/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.timeout(90))
