"""Clients that bring their own tools and output formats, unmodified, against a real
`hermes serve`: instructor (TOOLS, JSON_SCHEMA), llama-index `OpenAILike`
(`predict_and_call`, `structured_predict`) and Codex CLI (`codex exec --json`).

They are not project dependencies (instructor and llama-index pin an `openai` of their own;
Codex is a Node package), so the tests install them once per checkout: the Python clients
into tests/clients/extra/.venv from the pinned requirements.txt (_extra_venv.py), Codex
with `npm ci` from tests/clients/codex's lock file (_node_modules.py). Each check runs the
client as a subprocess against one server on a routed upstream (_extra_clients.py says what
the route answers). A failed install skips locally and fails under CI=true.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _clients_harness import HermesServe, running_serve
from _extra_clients import (
    CLIENT_TIMEOUT,
    CODEX_BIN,
    CODEX_DIR,
    CODEX_PLAIN,
    CODEX_TOOL_ANSWER,
    EXTRA_DIR,
    PERSON,
    codex_problems,
    route,
    run_codex,
    run_python_client,
)
from _extra_venv import ensure_venv, venv_python
from _node_modules import ensure_node_modules
from _routed import RoutedUpstream, offered_tools

INSTALL_TIMEOUT = 300.0
"""Seconds each install (the venv, `npm ci` of Codex) may take on a cold machine."""

pytestmark = pytest.mark.timeout(INSTALL_TIMEOUT + CLIENT_TIMEOUT + 60)


def _missing(problem: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(problem)
    pytest.skip(problem)


@pytest.fixture(scope="module")
def extra_python() -> Path:
    """The interpreter of the clients' venv, built first where it is missing or stale."""
    problem = ensure_venv(EXTRA_DIR, timeout=INSTALL_TIMEOUT)
    if problem is not None:
        _missing(problem)
    return venv_python(EXTRA_DIR)


@pytest.fixture(scope="module")
def codex() -> Path:
    """The `codex` binary, installed first (`npm ci`) where it is missing or stale."""
    problem = ensure_node_modules(CODEX_DIR, timeout=INSTALL_TIMEOUT)
    if problem is None and not CODEX_BIN.exists():
        problem = f"`npm ci` in {CODEX_DIR} left no {CODEX_BIN.name} binary"
    if problem is not None:
        _missing(problem)
    return CODEX_BIN


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermesServe]:
    base = tmp_path_factory.mktemp("hermes-serve")
    with RoutedUpstream.in_thread(route=route) as upstream, running_serve(base, upstream) as running:
        yield running


@pytest.fixture
def routed(serve: HermesServe) -> HermesServe:
    """The module's server, alive, with an empty upstream request log for this test."""
    assert serve.proc.poll() is None, "hermes serve exited"
    serve.upstream.requests.clear()
    return serve


def client(python: Path, check: str, serve: HermesServe) -> str:
    result = run_python_client(python, check, serve.base_url, serve.key, serve.model)
    assert result["ok"], result["error"]
    return str(result["detail"])


# ---- instructor -------------------------------------------------------------------------------


def test_instructor_tools_mode_gets_the_object_from_its_own_tool(extra_python: Path, routed: HermesServe) -> None:
    detail = client(extra_python, "instructor_tools", routed)
    assert repr(PERSON["name"]) in detail
    sent = routed.upstream.requests[-1].body
    assert "Person" in offered_tools(sent), offered_tools(sent)
    assert sent.get("tool_choice") == {"type": "function", "function": {"name": "Person"}}


def test_instructor_json_schema_mode_gets_the_object_from_the_format(extra_python: Path, routed: HermesServe) -> None:
    detail = client(extra_python, "instructor_json_schema", routed)
    assert repr(PERSON["name"]) in detail
    sent = routed.upstream.requests[-1].body
    assert sent["response_format"]["type"] == "json_schema", sent.get("response_format")
    assert set(sent["response_format"]["json_schema"]["schema"]["properties"]) == {"name", "age"}


# ---- llama-index ------------------------------------------------------------------------------


def test_llama_index_predict_and_call_runs_the_client_tool(extra_python: Path, routed: HermesServe) -> None:
    client(extra_python, "llama_predict_and_call", routed)
    # one model call: hermes ends the turn at the client's tool call and llama-index runs it
    assert len(routed.upstream.requests) == 1
    assert "add" in offered_tools(routed.upstream.requests[0].body)


def test_llama_index_structured_predict_gets_the_object(extra_python: Path, routed: HermesServe) -> None:
    detail = client(extra_python, "llama_structured_predict", routed)
    assert repr(PERSON["name"]) in detail


# ---- Codex CLI --------------------------------------------------------------------------------


def test_codex_exec_plain_answer(codex: Path, routed: HermesServe) -> None:
    run = run_codex(codex, routed.base_url, routed.key, routed.model, "codex plain: say something")
    assert codex_problems(run, CODEX_PLAIN) == [], run.output[-2000:]


def test_codex_exec_with_a_server_run_tool(codex: Path, routed: HermesServe) -> None:
    run = run_codex(codex, routed.base_url, routed.key, routed.model, "codex tool: run echo")
    assert codex_problems(run, CODEX_TOOL_ANSWER) == [], run.output[-2000:]
    results = routed.upstream_tool_results()
    assert len(results) == 1 and "hi-from-codex" in results[0], results  # hermes ran it, once
