"""Real Node client libraries (official `openai` and the Vercel AI SDK), unmodified, against
a real `hermes serve`. The Node project is tests/clients/node; its pinned modules are
installed by the tests themselves (`npm ci`, once per checkout, see _node_modules.py).
Without node, npm or its modules these tests skip locally and fail under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _clients_harness import (
    TOOL_ANSWER,
    TOOL_OUTPUT,
    TOOL_PREAMBLE,
    HermesServe,
    tool_turn_script,
)

from hermes.testing.upstream import text_reply

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_TIMEOUT = 60.0


def _missing(problem: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(problem)
    pytest.skip(problem)


@pytest.fixture(autouse=True)
def _node_modules(node_modules_problem: str | None) -> None:
    if node_modules_problem is not None:
        _missing(node_modules_problem)


def _node() -> str:
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node is not installed"
    elif not (NODE_DIR / "node_modules" / "openai").is_dir() or not (NODE_DIR / "node_modules" / "ai").is_dir():
        problem = f"node modules missing: run `npm ci` in {NODE_DIR}"
    if problem is not None:
        _missing(problem)
    assert node is not None
    return node


def run_node(script: str, serve: HermesServe, scenario: str, **extra: Any) -> dict[str, Any]:
    cfg = {"baseURL": serve.base_url, "apiKey": serve.key, "model": serve.model, "scenario": scenario, **extra}
    proc = subprocess.run(
        [_node(), script, json.dumps(cfg)],
        check=False,
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"node exited {proc.returncode}: {proc.stdout}\n{proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], f"{result.get('name')}: {result.get('error')}"
    return result


def _tool_ran_once(serve: HermesServe) -> None:
    results = serve.upstream_tool_results()
    assert len(results) == 1 and TOOL_OUTPUT in results[0], results
    assert serve.upstream_calls() == 2, "the client looped back for a tool it should not run"


# ---- official openai Node SDK ---------------------------------------------------------------


def test_openai_node_responses_stream_text(hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Hello from hermes", usage=(12, 4)))
    result = ok(run_node("openai_node.mjs", hermes_serve, "responses_stream"))
    assert result["deltas"] == result["text"] == "Hello from hermes"
    assert result["status"] == "completed"
    assert result["usage"]["total_tokens"] == 16


def test_openai_node_responses_stream_tool_turn(hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script())
    result = ok(run_node("openai_node.mjs", hermes_serve, "responses_stream", input="run echo"))
    _tool_ran_once(hermes_serve)
    assert result["text"].endswith(TOOL_ANSWER)
    assert result["deltas"].endswith(TOOL_ANSWER)
    assert TOOL_PREAMBLE + TOOL_ANSWER not in result["deltas"]


def test_openai_node_chat_stream_text(hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Hello chat", usage=(5, 2)))
    result = ok(run_node("openai_node.mjs", hermes_serve, "chat_stream"))
    assert result["deltas"] == result["text"] == "Hello chat"
    assert result["usage"]["total_tokens"] == 7


def test_openai_node_chat_stream_tool_turn(hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script())
    result = ok(run_node("openai_node.mjs", hermes_serve, "chat_stream", input="run echo"))
    _tool_ran_once(hermes_serve)
    assert result["text"] == result["deltas"]
    assert result["text"].endswith(TOOL_ANSWER)
    assert TOOL_PREAMBLE + TOOL_ANSWER not in result["text"]
    assert result["toolCalls"] == [] and result["finishReason"] == "stop"


@pytest.mark.parametrize("scenario", ["responses_create", "chat_create"])
def test_openai_node_plain_create(hermes_serve: HermesServe, scenario: str) -> None:
    hermes_serve.script(text_reply("Plain answer", usage=(7, 2)))
    result = ok(run_node("openai_node.mjs", hermes_serve, scenario))
    assert result["text"] == "Plain answer"
    assert result["usage"] is not None


def test_openai_node_previous_response_id(hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("2"), text_reply("3"))
    result = ok(run_node("openai_node.mjs", hermes_serve, "previous_response_id"))
    assert (result["first"], result["text"]) == ("2", "3")
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "What is 1+1?"), ("assistant", "2"), ("user", "Add one.")]


def test_openai_node_wrong_key(hermes_serve: HermesServe) -> None:
    result = run_node("openai_node.mjs", hermes_serve, "wrong_key")
    assert not result["ok"]
    assert result["status"] == 401 and result["name"] == "AuthenticationError", result
    assert hermes_serve.upstream_calls() == 0


# ---- Vercel AI SDK --------------------------------------------------------------------------

PROVIDERS = ["compatible", "openai-chat", "openai-responses"]


@pytest.mark.parametrize("scenario", ["generate", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_ai_sdk_text(hermes_serve: HermesServe, provider: str, scenario: str) -> None:
    hermes_serve.script(text_reply("Hello from hermes", usage=(12, 4)))
    result = ok(run_node("ai_sdk.mjs", hermes_serve, scenario, provider=provider))
    assert result["text"] == "Hello from hermes"
    assert result["steps"] == 1 and result["toolCalls"] == []
    assert result["usage"]["inputTokens"] == 12 and result["usage"]["outputTokens"] == 4
    if scenario == "stream":
        assert result["deltas"] == "Hello from hermes" and result["errors"] == []


@pytest.mark.parametrize("scenario", ["generate", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_ai_sdk_server_tool_turn(hermes_serve: HermesServe, provider: str, scenario: str) -> None:
    hermes_serve.script(*tool_turn_script())
    result = ok(run_node("ai_sdk.mjs", hermes_serve, scenario, provider=provider, input="run echo"))
    if scenario == "stream":
        assert result["errors"] == [], "the stream carried frames the SDK could not validate"
    assert result["toolCalls"] == [], "a server-run tool was handed to the SDK as a call to make"
    # The Responses model sees hermes' mcp_call as a tool the provider already executed.
    assert result["serverTools"] == (["mcp.terminal"] if provider == "openai-responses" else [])
    assert result["steps"] == 1
    assert result["text"].endswith(TOOL_ANSWER)
    assert TOOL_PREAMBLE + TOOL_ANSWER not in result["text"]
    if scenario == "stream":
        assert result["deltas"] == result["text"]
    _tool_ran_once(hermes_serve)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ai_sdk_multi_turn_from_client_history(hermes_serve: HermesServe, provider: str) -> None:
    hermes_serve.script(text_reply("Paris"), text_reply("About 2 million"))
    result = ok(run_node("ai_sdk.mjs", hermes_serve, "multi_turn", provider=provider))
    assert (result["first"], result["text"]) == ("Paris", "About 2 million")
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "Capital of France?"), ("assistant", "Paris"), ("user", "Population?")]


def test_ai_sdk_responses_multi_turn_after_tool_turn(hermes_serve: HermesServe) -> None:
    """The second turn refers to the first turn's items (message and mcp_call) by item_reference."""
    hermes_serve.script(*tool_turn_script(), text_reply("You are welcome."))
    result = ok(run_node("ai_sdk.mjs", hermes_serve, "multi_turn_tool", provider="openai-responses", input="run echo"))
    assert result["first"].endswith(TOOL_ANSWER) and result["text"] == "You are welcome."
    sent = [m for m in hermes_serve.upstream.requests[-1].messages if m["role"] != "system"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[0]["content"] == "run echo" and sent[-1]["content"] == "Thanks"
    # The earlier segment's item ends with the separator (issue 18: no item starts with one).
    assert sent[1]["content"] == TOOL_PREAMBLE + "\n\n"
    assert sent[1]["tool_calls"][0]["function"]["name"] == "terminal"
    assert TOOL_OUTPUT in sent[2]["content"]
    assert sent[3]["content"].endswith(TOOL_ANSWER)


def test_ai_sdk_previous_response_id(hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("2"), text_reply("3"))
    result = ok(run_node("ai_sdk.mjs", hermes_serve, "previous_response_id", provider="openai-responses"))
    assert (result["first"], result["text"]) == ("2", "3")
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "What is 1+1?"), ("assistant", "2"), ("user", "Add one.")]
